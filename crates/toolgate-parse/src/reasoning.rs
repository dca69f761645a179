//! Reasoning blocks: the forms a model's thinking is written in (`<think>`, Mistral's
//! `[THINK]`, Kimi's `◁think▷`, Harmony's analysis channel), and the scans that find where one ends.
//! Inside a block nothing is searched for but its own closer, so a call the model only
//! considered is never a call; an unclosed block runs to the end of the output (a model
//! cut off while thinking). The text of a block leaves `text` and becomes reasoning.

use std::sync::LazyLock;

use memchr::{memchr, memmem};
use serde_json::Value;

use crate::framed::FramedEnd;
use crate::options::Dialect;

/// A written form of reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `<think>...</think>`: Qwen3, DeepSeek R1 / V3.1 / V3.2, GLM, Kimi K2, MiniMax,
    /// Hermes and most open models.
    Think,
    /// Mistral's `[THINK]...[/THINK]` (Magistral, Ministral).
    MistralThink,
    /// Kimi's `◁think▷...◁/think▷` (Kimi-VL thinking, Kimi-Dev; some Kimi K2 templates).
    KimiThink,
    /// Harmony's analysis channel without a recipient:
    /// `<|channel|>analysis<|message|>...<|end|>`.
    Analysis,
    /// The same with its role header: `<|start|>assistant<|channel|>analysis<|message|>`.
    AnalysisRole,
    /// Not reasoning: Harmony's final channel, the answer for the user, whose header
    /// and `<|return|>` are markup and whose content is text, never read for calls:
    /// `<|channel|>final<|message|>...<|return|>`.
    Final,
    /// The same with its role header.
    FinalRole,
}

pub(crate) const THINK: &[u8] = b"<think>";
pub(crate) const THINK_END: &[u8] = b"</think>";
pub(crate) const MISTRAL_THINK: &[u8] = b"[THINK]";
const MISTRAL_THINK_END: &[u8] = b"[/THINK]";
pub(crate) const KIMI_THINK: &[u8] = "◁think▷".as_bytes();
const KIMI_THINK_END: &[u8] = "◁/think▷".as_bytes();
const ANALYSIS: &[u8] = b"<|channel|>analysis<|message|>";
const ANALYSIS_ROLE: &[u8] = b"<|start|>assistant<|channel|>analysis<|message|>";
const HARMONY_END: &[u8] = b"<|end|>";
const FINAL: &[u8] = b"<|channel|>final<|message|>";
const FINAL_ROLE: &[u8] = b"<|start|>assistant<|channel|>final<|message|>";
const HARMONY_RETURN: &[u8] = b"<|return|>";

static THINK_END_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(THINK_END));
static MISTRAL_END_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(MISTRAL_THINK_END));
static KIMI_END_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(KIMI_THINK_END));
static HARMONY_END_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(HARMONY_END));
static HARMONY_RETURN_FINDER: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(HARMONY_RETURN));

impl Form {
    /// The marker that opens the block.
    pub(crate) fn open(self) -> &'static [u8] {
        match self {
            Form::Think => THINK,
            Form::MistralThink => MISTRAL_THINK,
            Form::KimiThink => KIMI_THINK,
            Form::Analysis => ANALYSIS,
            Form::AnalysisRole => ANALYSIS_ROLE,
            Form::Final => FINAL,
            Form::FinalRole => FINAL_ROLE,
        }
    }

    /// Whether the block's content is text (the final channel), not reasoning.
    pub(crate) fn is_text(self) -> bool {
        matches!(self, Form::Final | Form::FinalRole)
    }

    /// The marker that closes the block.
    fn close(self) -> &'static [u8] {
        match self {
            Form::Think => THINK_END,
            Form::MistralThink => MISTRAL_THINK_END,
            Form::KimiThink => KIMI_THINK_END,
            Form::Analysis | Form::AnalysisRole => HARMONY_END,
            Form::Final | Form::FinalRole => HARMONY_RETURN,
        }
    }

    fn finder(self) -> &'static memmem::Finder<'static> {
        match self {
            Form::Think => &THINK_END_FINDER,
            Form::MistralThink => &MISTRAL_END_FINDER,
            Form::KimiThink => &KIMI_END_FINDER,
            Form::Analysis | Form::AnalysisRole => &HARMONY_END_FINDER,
            Form::Final | Form::FinalRole => &HARMONY_RETURN_FINDER,
        }
    }
}

/// Where the scan of an open block stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockEnd {
    /// The closer was found: the reasoning ends at `text_end`, the block at `end`.
    Closed { text_end: usize, end: usize },
    /// Still open: everything before `keep` is reasoning; the rest could still become
    /// the closer (at the end of the output, `keep` is the end).
    Open { keep: usize },
}

/// Scans `b` from `from` (inside a block of `form`) for the block's closer.
pub(crate) fn block_end(form: Form, b: &[u8], from: usize, eof: bool) -> BlockEnd {
    let close = form.close();
    if let Some(k) = form.finder().find(&b[from..]) {
        let text_end = from + k;
        return BlockEnd::Closed {
            text_end,
            end: text_end + close.len(),
        };
    }
    if eof {
        return BlockEnd::Open { keep: b.len() };
    }
    let tail = b.len().saturating_sub(close.len() - 1).max(from);
    let keep = (tail..b.len())
        .find(|&k| close.starts_with(&b[k..]))
        .unwrap_or(b.len());
    BlockEnd::Open { keep }
}

/// What the start of an output whose prompt may have opened `<think>` turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lead {
    /// A `</think>` came before any `<think>`: `b[..text_end]` is reasoning, the block
    /// ends at `end`.
    Reasoning { text_end: usize, end: usize },
    /// A `<think>` came first, or the output ended without a `</think>`: read it from
    /// the start as usual.
    Text,
    /// Nothing decided up to `scan`.
    NeedMore { scan: usize },
}

/// Scans the start of an output for a lone `</think>` (the dialects whose templates
/// put `<think>` in the prompt: the output starts mid-reasoning). A call written on the
/// way (`dialect`'s framed calls) is stepped over whole, its arguments read as they
/// are read in a call: a `</think>` quoted in a string value is content, not the end
/// of reasoning.
pub(crate) fn lead(b: &[u8], mut scan: usize, eof: bool, dialect: Dialect) -> Lead {
    while let Some(k) = memchr(b'<', &b[scan..]) {
        let p = scan + k;
        let rest = &b[p..];
        if rest.starts_with(THINK_END) {
            return Lead::Reasoning {
                text_end: p,
                end: p + THINK_END.len(),
            };
        }
        if rest.starts_with(THINK) {
            return Lead::Text;
        }
        let partial = THINK_END.starts_with(rest) || THINK.starts_with(rest);
        if partial && !eof {
            return Lead::NeedMore { scan: p };
        }
        scan = match crate::opener::match_opener(rest, dialect) {
            crate::opener::Match::Yes(crate::opener::Opener::Framed(kind)) => {
                match crate::framed::FramedScan::new(kind).advance(rest, eof) {
                    FramedEnd::End { len, closed: true } => p + len.max(1),
                    FramedEnd::NeedMore => return Lead::NeedMore { scan: p },
                    _ => p + 1,
                }
            }
            crate::opener::Match::NeedMore if !eof => return Lead::NeedMore { scan: p },
            _ => p + 1,
        };
    }
    if eof {
        Lead::Text
    } else {
        Lead::NeedMore { scan: b.len() }
    }
}

/// The reasoning of a native answer's message or delta: `reasoning_content` (vLLM,
/// DeepSeek, SGLang) or `reasoning` (vLLM's newer name, OpenRouter, Ollama), when it
/// holds any text.
///
/// ```
/// let delta = serde_json::json!({"role": "assistant", "reasoning_content": "Hmm."});
/// assert_eq!(toolgate_parse::native_reasoning(&delta), Some("Hmm."));
/// ```
pub fn native_reasoning(message: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|k| message.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_only_a_possible_closer() {
        assert_eq!(
            block_end(Form::Think, b"abc</thi", 0, false),
            BlockEnd::Open { keep: 3 }
        );
        assert_eq!(
            block_end(Form::Think, b"a</b>c", 0, false),
            BlockEnd::Open { keep: 6 }
        );
        assert_eq!(
            block_end(Form::MistralThink, b"x[/THINK]y", 0, false),
            BlockEnd::Closed {
                text_end: 1,
                end: 9
            }
        );
        assert_eq!(
            block_end(Form::Analysis, b"x<|en", 0, true),
            BlockEnd::Open { keep: 5 }
        );
    }

    #[test]
    fn lead_decides_on_the_first_think_marker() {
        assert_eq!(
            lead(b"a <b> c</think>d", 0, false, Dialect::DeepSeek),
            Lead::Reasoning {
                text_end: 7,
                end: 15
            }
        );
        assert_eq!(
            lead(b"a<think>b</think>", 0, false, Dialect::DeepSeek),
            Lead::Text
        );
        assert_eq!(
            lead(b"a</th", 0, false, Dialect::DeepSeek),
            Lead::NeedMore { scan: 1 }
        );
        assert_eq!(lead(b"a</th", 0, true, Dialect::DeepSeek), Lead::Text);
        // A `</think>` quoted in a call's arguments is content: the call is stepped over.
        let call = b"<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{\"a\": \"x </think> y\"}<|tool_call_end|>";
        assert_eq!(lead(call, 0, true, Dialect::KimiK2), Lead::Text);
        // One after the call is the end of the reasoning that mentioned it.
        let mut mentioned = call.to_vec();
        mentioned.extend_from_slice(b" so.</think>Done.");
        assert!(matches!(
            lead(&mentioned, 0, true, Dialect::KimiK2),
            Lead::Reasoning { .. }
        ));
    }
}
