//! Counting tokens: with the model's own tokenizer where one is known (OpenAI models,
//! through `tiktoken-rs`, each vocabulary loaded once, on first use), else with a
//! documented estimate of one token per four bytes of UTF-8, rounded up.

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

/// Tokens counted for each message besides its text (role and framing), as OpenAI's
/// own counting guide does.
pub const PER_MESSAGE: u64 = 4;

/// Bytes per token of the estimate.
pub const BYTES_PER_TOKEN: usize = 4;

/// How a model's text is counted.
#[derive(Clone, Copy)]
pub enum Counter {
    /// The model's BPE vocabulary.
    Bpe(&'static CoreBPE),
    /// One token per [`BYTES_PER_TOKEN`] bytes, rounded up.
    Estimate,
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Counter::Bpe(_) => "Counter::Bpe",
            Counter::Estimate => "Counter::Estimate",
        })
    }
}

impl Counter {
    /// The counter for a model spec (`openai:gpt-4o`, `anthropic:claude-...`): the BPE
    /// of an OpenAI model whose tokenizer `tiktoken-rs` knows, the estimate otherwise.
    pub fn for_model(spec: &str) -> Counter {
        let Some(("openai", name)) = spec.split_once(':') else {
            return Counter::Estimate;
        };
        match get_tokenizer(name) {
            Some(Tokenizer::O200kBase | Tokenizer::O200kHarmony) => {
                Counter::Bpe(tiktoken_rs::o200k_base_singleton())
            }
            Some(Tokenizer::Cl100kBase) => Counter::Bpe(tiktoken_rs::cl100k_base_singleton()),
            _ => Counter::Estimate,
        }
    }

    /// Whether this is the model's own tokenizer (not the estimate).
    pub fn is_exact(&self) -> bool {
        matches!(self, Counter::Bpe(_))
    }

    /// The tokens of `text`.
    pub fn count(&self, text: &str) -> u64 {
        match self {
            Counter::Bpe(bpe) => bpe.encode_ordinary(text).len() as u64,
            Counter::Estimate => text.len().div_ceil(BYTES_PER_TOKEN) as u64,
        }
    }

    /// Where to cut `text` so that what is kept has at most `limit` tokens: `None`
    /// when it fits whole. The cost is bounded by the limit, not by the text: a text
    /// longer than 16 bytes a token on average is taken as over the limit without
    /// being counted whole (it is then cut a little earlier than it need be).
    pub fn cut_at(&self, text: &str, limit: u64) -> Option<usize> {
        let limit_bytes = usize::try_from(limit).unwrap_or(usize::MAX);
        match self {
            Counter::Estimate => {
                let keep = limit_bytes.saturating_mul(BYTES_PER_TOKEN);
                (text.len() > keep).then(|| floor_boundary(text, keep))
            }
            Counter::Bpe(bpe) => {
                // Every token is at least one byte.
                if text.len() <= limit_bytes {
                    return None;
                }
                let window = floor_boundary(text, limit_bytes.saturating_mul(16));
                let tokens = bpe.encode_ordinary(&text[..window]);
                if tokens.len() as u64 <= limit {
                    // The window fits: the text fits whole when the window is all of it.
                    return (window < text.len()).then_some(window);
                }
                let kept = bpe
                    .decode_bytes(&tokens[..limit_bytes.min(tokens.len())])
                    .map(|b| b.len())
                    .unwrap_or(limit_bytes);
                Some(floor_boundary(text, kept))
            }
        }
    }
}

/// The largest char boundary of `text` at or before `at`.
pub fn floor_boundary(text: &str, at: usize) -> usize {
    let mut i = at.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn openai_models_get_their_tokenizer_and_others_the_estimate() {
        assert!(Counter::for_model("openai:gpt-4o-mini").is_exact());
        assert!(Counter::for_model("openai:gpt-4-turbo").is_exact());
        assert!(!Counter::for_model("openai:llama-3-local").is_exact());
        assert!(!Counter::for_model("anthropic:claude-sonnet-4-5").is_exact());
        assert_eq!(Counter::Estimate.count("abcdefghi"), 3);
    }

    #[test]
    fn a_cut_keeps_at_most_the_limit_on_a_char_boundary() {
        let text = "héllo wörld, ".repeat(500);
        for counter in [Counter::for_model("openai:gpt-4o"), Counter::Estimate] {
            assert_eq!(counter.cut_at("short", 100), None);
            let at = counter.cut_at(&text, 100).unwrap();
            assert!(text.is_char_boundary(at));
            let kept = counter.count(&text[..at]);
            assert!((90..=100).contains(&kept), "{counter:?} kept {kept}");
        }
    }
}
