//! A query's search terms: lowercase words of letters and digits, without the English
//! function words that would match nearly every chunk (both backends then run the same
//! terms; PostgreSQL's English configuration would drop these too).

/// Words too common to rank by.
const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "did", "do", "does", "for", "from",
    "has", "have", "how", "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our",
    "that", "the", "their", "there", "these", "this", "to", "was", "we", "were", "what", "when",
    "where", "which", "who", "whom", "why", "will", "with", "you", "your",
];

/// The terms of `query`, in order, each once.
pub fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        let word = word.to_lowercase();
        if !word.is_empty() && !STOP.contains(&word.as_str()) && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_words_and_punctuation_go() {
        assert_eq!(
            terms("What is the port of the Server? port!"),
            ["port", "server"]
        );
        assert!(terms("what is it").is_empty());
        assert_eq!(terms("\"x\" OR y*"), ["x", "y"]);
    }
}
