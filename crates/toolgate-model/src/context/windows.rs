//! Context windows of known models, in tokens, by name prefix; models not in the table
//! get [`DEFAULT_WINDOW`].

/// The window assumed for a model the table does not know.
pub const DEFAULT_WINDOW: u64 = 32_768;

/// Name prefixes (after `openai:` / `anthropic:`) and their windows; the first match
/// wins, so longer prefixes come first.
const WINDOWS: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-oss", 131_072),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
];

/// The context window of a model spec (`openai:gpt-4o-mini`, `anthropic:claude-...`).
pub fn window_of(spec: &str) -> u64 {
    let name = spec.split_once(':').map_or(spec, |(_, n)| n);
    WINDOWS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(DEFAULT_WINDOW, |(_, w)| *w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_and_the_default() {
        assert_eq!(window_of("openai:gpt-4o-mini"), 128_000);
        assert_eq!(window_of("openai:gpt-4"), 8_192);
        assert_eq!(window_of("anthropic:claude-sonnet-4-5"), 200_000);
        assert_eq!(window_of("openai:my-local-llama"), DEFAULT_WINDOW);
    }
}
