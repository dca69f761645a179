//! Tool results over the budget: the model sees the beginning, cut on a character
//! boundary, and a marker saying how much was left out and how to read on with
//! `read_result`; pages of a whole result for that tool.

use super::tokens::Counter;

/// `output` as the model sees it: whole when it fits in `limit` tokens, else its
/// beginning and a marker saying how much was left out and, when the model has
/// `read_result` (`read_on`), naming `call_id` and where to go on.
pub fn cut_result(
    counter: &Counter,
    output: &str,
    call_id: &str,
    limit: u64,
    read_on: bool,
) -> String {
    let Some(at) = counter.cut_at(output, limit) else {
        return output.to_string();
    };
    let kept = &output[..at];
    let kept_chars = kept.chars().count();
    let total_chars = kept_chars + output[at..].chars().count();
    let left = total_chars - kept_chars;
    if !read_on {
        return format!(
            "{kept}\n[result cut to fit the context: {left} of {total_chars} characters left out. The whole result is kept in the call record ({call_id}).]"
        );
    }
    format!(
        "{kept}\n[result cut to fit the context: {left} of {total_chars} characters left out. The whole result is kept: call read_result with call_id \"{call_id}\", offset {kept_chars} and a length (in characters) to read on.]"
    )
}

/// Characters `offset..offset + length` of `text`, with a line saying where they sit
/// and how to read on.
pub fn page(text: &str, call_id: &str, offset: usize, length: usize) -> String {
    let total = text.chars().count();
    if offset >= total {
        return format!(
            "[offset {offset} is past the end of the result of {call_id}, which has {total} characters]"
        );
    }
    let start = text
        .char_indices()
        .nth(offset)
        .map_or(text.len(), |(i, _)| i);
    let rest = &text[start..];
    let end = rest
        .char_indices()
        .nth(length)
        .map_or(rest.len(), |(i, _)| i);
    let shown = &rest[..end];
    let upto = offset + shown.chars().count();
    let tail = if upto < total {
        format!(
            "; {} more after this: call read_result with offset {upto} to read on",
            total - upto
        )
    } else {
        "; this is the end".to_string()
    };
    format!("{shown}\n[characters {offset}..{upto} of {total} of the result of {call_id}{tail}]")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_long_result_is_cut_with_a_marker_and_a_short_one_kept() {
        let c = Counter::Estimate;
        assert_eq!(cut_result(&c, "short", "call_1", 100, true), "short");
        let long = "x".repeat(1_000);
        let cut = cut_result(&c, &long, "call_1", 100, true);
        assert!(cut.starts_with(&"x".repeat(400)));
        assert!(cut.contains("600 of 1000 characters left out"), "{cut}");
        assert!(cut.contains("offset 400"), "{cut}");
    }

    #[test]
    fn pages_walk_through_a_result() {
        let text = "ab€cd";
        assert_eq!(
            page(text, "c", 0, 3),
            "ab€\n[characters 0..3 of 5 of the result of c; 2 more after this: call read_result with offset 3 to read on]"
        );
        assert!(page(text, "c", 3, 10).starts_with("cd\n[characters 3..5 of 5"));
        assert!(page(text, "c", 9, 1).contains("past the end"));
    }
}
