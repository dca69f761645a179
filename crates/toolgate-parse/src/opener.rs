//! Recognising, at a `<` or a line start in prose, what could open a call, a reasoning
//! block, a call wrapper or a code fence, including "not sure yet: need more input".

use super::framed::{
    DS_CALL, DS_CALLS, DS_CALLS_END, DSML_CALLS, DSML_CALLS_END, DSML_INVOKE, DSML_TOOL_CALLS,
    DSML_TOOL_CALLS_END, DSML41_CALLS, DSML41_CALLS_END, DSML41_INVOKE, Framed, GRANITE_CALL,
    HARMONY, HARMONY_START, KIMI_CALL, KIMI_SECTION, KIMI_SECTION_END, LFM2_START, MISTRAL,
    PYTHON_START, PYTHON_TAG, Role, harmony_lead,
};
use super::kimi_k3::{K3_CALL, K3_MARKUP, K3_TOOLS, K3_TOOLS_END};
use super::options::Dialect;
use super::reasoning::{Form, KIMI_THINK, MISTRAL_THINK, THINK};

/// How a literal compares with the start of the remaining input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// The input starts with the whole literal.
    Full,
    /// The input is shorter than the literal and is a prefix of it: more may complete it.
    Partial,
    No,
}

pub(crate) fn prefix(rest: &[u8], lit: &[u8]) -> Prefix {
    // Literals start with `<`: the second byte rejects most candidates without a compare.
    if rest.len() >= 2 && lit.len() >= 2 && rest[1] != lit[1] {
        return Prefix::No;
    }
    if rest.len() >= lit.len() {
        if &rest[..lit.len()] == lit {
            Prefix::Full
        } else {
            Prefix::No
        }
    } else if lit.starts_with(rest) {
        Prefix::Partial
    } else {
        Prefix::No
    }
}

/// A wrapper element that may hold nothing but calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wrapper {
    FunctionCalls,
    ToolCalls,
    /// MiniMax-M2's `<minimax:tool_call>` around `<invoke>` calls.
    Minimax,
    /// Kimi K2's `<|tool_calls_section_begin|>`.
    KimiSection,
    /// DeepSeek V3's `<｜tool▁calls▁begin｜>`.
    DeepSeekCalls,
    /// DeepSeek V3.2's `<｜DSML｜function_calls>`.
    DsmlCalls,
    /// DeepSeek V4's `<｜DSML｜tool_calls>`.
    DsmlToolCalls,
    /// DeepSeek V4.1's `<｜DSML｜ calls>`.
    Dsml41Calls,
    /// Kimi K3's `<|open|>tools<|sep|>` channel.
    KimiK3Tools,
    /// Seed-OSS's `<seed:tool_call>` around Qwen3-coder calls.
    Seed,
}

impl Wrapper {
    /// Written with special tokens: never prose, so an empty one, or a stray closer,
    /// is markup that leaves the text.
    pub(crate) fn special(self) -> bool {
        !matches!(
            self,
            Wrapper::FunctionCalls | Wrapper::ToolCalls | Wrapper::Minimax | Wrapper::Seed
        )
    }

    pub(crate) fn close_tag(self) -> &'static str {
        match self {
            Wrapper::FunctionCalls => "</function_calls>",
            Wrapper::ToolCalls => "</tool_calls>",
            Wrapper::Minimax => "</minimax:tool_call>",
            Wrapper::KimiSection => "<|tool_calls_section_end|>",
            Wrapper::DeepSeekCalls => "<｜tool▁calls▁end｜>",
            Wrapper::DsmlCalls => "</｜DSML｜function_calls>",
            Wrapper::DsmlToolCalls => "</｜DSML｜tool_calls>",
            Wrapper::Dsml41Calls => "</｜DSML｜ calls>",
            Wrapper::KimiK3Tools => "<|close|>tools<|sep|>",
            Wrapper::Seed => "</seed:tool_call>",
        }
    }
}

/// What starts at a `<` in prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opener {
    /// A reasoning block (`<think>`, `[THINK]`, Harmony's analysis channel): everything
    /// up to its closer is reasoning, never a call.
    Reasoning(Form),
    /// `<tool_call>`: XML, Hermes or Qwen3-coder, decided by what follows.
    ToolCall,
    /// `<function=`: a Qwen3-coder call without its `<tool_call>` wrapper.
    Function,
    /// `<invoke `.
    Invoke,
    WrapperOpen(Wrapper),
    WrapperClose(Wrapper),
    /// A call framed by special tokens (framed.rs).
    Framed(Framed),
    /// A dialect's markup that is never text and opens nothing (Kimi K3's response
    /// channel markers): dropped.
    Markup(&'static [u8]),
    /// `</tool_call>` outside a call: dropped right after a call (a closer written
    /// twice), text anywhere else.
    StrayClose,
}

impl Opener {
    /// Bytes of the opening tag itself.
    pub(crate) fn tag_len(self) -> usize {
        match self {
            Opener::Reasoning(form) => form.open().len(),
            Opener::ToolCall => TOOL_CALL.len(),
            Opener::Function => FUNCTION.len(),
            Opener::Invoke => INVOKE.len(),
            Opener::WrapperOpen(w) => match w {
                Wrapper::FunctionCalls => FUNCTION_CALLS.len(),
                Wrapper::ToolCalls => TOOL_CALLS.len(),
                Wrapper::Minimax => MINIMAX_CALL.len(),
                Wrapper::KimiSection => KIMI_SECTION.len(),
                Wrapper::DeepSeekCalls => DS_CALLS.len(),
                Wrapper::DsmlCalls => DSML_CALLS.len(),
                Wrapper::DsmlToolCalls => DSML_TOOL_CALLS.len(),
                Wrapper::Dsml41Calls => DSML41_CALLS.len(),
                Wrapper::KimiK3Tools => K3_TOOLS.len(),
                Wrapper::Seed => SEED_CALL.len(),
            },
            Opener::Framed(f) => f.tag().len(),
            Opener::Markup(m) => m.len(),
            Opener::StrayClose => TOOL_CALL_END.len(),
            Opener::WrapperClose(w) => w.close_tag().len(),
        }
    }
}

pub(crate) const TOOL_CALL: &[u8] = b"<tool_call>";
pub(crate) const TOOL_CALL_END: &[u8] = b"</tool_call>";
pub(crate) const FUNCTION: &[u8] = b"<function=";
pub(crate) const INVOKE: &[u8] = b"<invoke ";
const FUNCTION_CALLS: &[u8] = b"<function_calls>";
const TOOL_CALLS: &[u8] = b"<tool_calls>";
const MINIMAX_CALL: &[u8] = b"<minimax:tool_call>";
const SEED_CALL: &[u8] = b"<seed:tool_call>";

/// The outcome of looking at a `<`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    No,
    NeedMore,
    Yes(Opener),
}

/// What the input at a `<` opens, for the dialects `dialect` allows.
pub(crate) fn match_opener(rest: &[u8], dialect: Dialect) -> Match {
    // Every opener starts `<t`, `<f`, `<i`, `<m`, `</`, `<|` or `<｜`: most `<` in prose
    // fail here.
    match rest.get(1) {
        None => return Match::NeedMore,
        Some(b'/') if rest.len() == 2 => return Match::NeedMore,
        Some(b'/') if rest[2] == 0xEF => return match_special(rest, dialect),
        Some(b't' | b'f' | b'i' | b'm' | b's' | b'/') => {}
        Some(b'|' | 0xEF) => return match_special(rest, dialect),
        Some(_) => return Match::No,
    }
    let tool_call = dialect.allows_xml()
        || dialect.allows_hermes()
        || dialect.allows_qwen()
        || dialect.allows_special(Dialect::Glm);
    let table: [(bool, &[u8], Opener); 13] = [
        (tool_call, TOOL_CALL_END, Opener::StrayClose),
        (
            dialect.allows_qwen(),
            SEED_CALL,
            Opener::WrapperOpen(Wrapper::Seed),
        ),
        (
            dialect.allows_qwen(),
            b"</seed:tool_call>",
            Opener::WrapperClose(Wrapper::Seed),
        ),
        (true, THINK, Opener::Reasoning(Form::Think)),
        (tool_call, TOOL_CALL, Opener::ToolCall),
        (dialect.allows_qwen(), FUNCTION, Opener::Function),
        (dialect.allows_invoke(), INVOKE, Opener::Invoke),
        (
            dialect.allows_invoke(),
            FUNCTION_CALLS,
            Opener::WrapperOpen(Wrapper::FunctionCalls),
        ),
        (
            dialect.allows_invoke(),
            b"</function_calls>",
            Opener::WrapperClose(Wrapper::FunctionCalls),
        ),
        (
            dialect.allows_invoke(),
            MINIMAX_CALL,
            Opener::WrapperOpen(Wrapper::Minimax),
        ),
        (
            dialect.allows_invoke(),
            b"</minimax:tool_call>",
            Opener::WrapperClose(Wrapper::Minimax),
        ),
        (
            tool_call,
            TOOL_CALLS,
            Opener::WrapperOpen(Wrapper::ToolCalls),
        ),
        (
            tool_call,
            b"</tool_calls>",
            Opener::WrapperClose(Wrapper::ToolCalls),
        ),
    ];
    let mut need_more = false;
    for (allowed, lit, opener) in table {
        if !allowed {
            continue;
        }
        match prefix(rest, lit) {
            Prefix::Full if opener == Opener::WrapperOpen(Wrapper::ToolCalls) => {
                return tool_calls(rest, dialect);
            }
            Prefix::Full => return Match::Yes(opener),
            Prefix::Partial => need_more = true,
            Prefix::No => {}
        }
    }
    if need_more {
        Match::NeedMore
    } else {
        Match::No
    }
}

/// `<tool_calls>`: Hunyuan's JSON list of calls when a `[` follows (blanks between),
/// else a wrapper of `<tool_call>` elements.
fn tool_calls(rest: &[u8], dialect: Dialect) -> Match {
    let after = &rest[TOOL_CALLS.len()..];
    let lead = after.iter().take_while(|c| c.is_ascii_whitespace()).count();
    match after.get(lead) {
        None if dialect.allows_special(Dialect::Hunyuan) => Match::NeedMore,
        Some(b'[') if dialect.allows_special(Dialect::Hunyuan) => {
            Match::Yes(Opener::Framed(Framed::Hunyuan))
        }
        _ => Match::Yes(Opener::WrapperOpen(Wrapper::ToolCalls)),
    }
}

/// The special-token openers (`<|..|>`, `<｜..｜>`), by the dialect that has them.
const SPECIAL: [(Dialect, &[u8], Opener); 27] = [
    (Dialect::Lfm2, LFM2_START, Opener::Framed(Framed::Lfm2)),
    (
        Dialect::Granite,
        GRANITE_CALL,
        Opener::Framed(Framed::Granite),
    ),
    (Dialect::KimiK3, K3_CALL, Opener::Framed(Framed::KimiK3)),
    (
        Dialect::KimiK3,
        K3_TOOLS,
        Opener::WrapperOpen(Wrapper::KimiK3Tools),
    ),
    (
        Dialect::KimiK3,
        K3_TOOLS_END,
        Opener::WrapperClose(Wrapper::KimiK3Tools),
    ),
    (Dialect::KimiK3, K3_MARKUP[0], Opener::Markup(K3_MARKUP[0])),
    (Dialect::KimiK3, K3_MARKUP[1], Opener::Markup(K3_MARKUP[1])),
    (Dialect::KimiK3, K3_MARKUP[2], Opener::Markup(K3_MARKUP[2])),
    (
        Dialect::Gemma4,
        super::gemma::GEMMA_CALL,
        Opener::Framed(Framed::Gemma4),
    ),
    (Dialect::KimiK2, KIMI_CALL, Opener::Framed(Framed::KimiK2)),
    (
        Dialect::KimiK2,
        KIMI_SECTION,
        Opener::WrapperOpen(Wrapper::KimiSection),
    ),
    (
        Dialect::KimiK2,
        KIMI_SECTION_END,
        Opener::WrapperClose(Wrapper::KimiSection),
    ),
    (Dialect::DeepSeek, DS_CALL, Opener::Framed(Framed::DeepSeek)),
    (
        Dialect::DeepSeek,
        DS_CALLS,
        Opener::WrapperOpen(Wrapper::DeepSeekCalls),
    ),
    (
        Dialect::DeepSeek,
        DS_CALLS_END,
        Opener::WrapperClose(Wrapper::DeepSeekCalls),
    ),
    (Dialect::DeepSeek, DSML_INVOKE, Opener::Framed(Framed::Dsml)),
    (
        Dialect::DeepSeek,
        DSML_CALLS,
        Opener::WrapperOpen(Wrapper::DsmlCalls),
    ),
    (
        Dialect::DeepSeek,
        DSML_CALLS_END,
        Opener::WrapperClose(Wrapper::DsmlCalls),
    ),
    (
        Dialect::DeepSeek,
        DSML_TOOL_CALLS,
        Opener::WrapperOpen(Wrapper::DsmlToolCalls),
    ),
    (
        Dialect::DeepSeek,
        DSML_TOOL_CALLS_END,
        Opener::WrapperClose(Wrapper::DsmlToolCalls),
    ),
    (
        Dialect::DeepSeek,
        DSML41_INVOKE,
        Opener::Framed(Framed::Dsml41),
    ),
    (
        Dialect::DeepSeek,
        DSML41_CALLS,
        Opener::WrapperOpen(Wrapper::Dsml41Calls),
    ),
    (
        Dialect::DeepSeek,
        DSML41_CALLS_END,
        Opener::WrapperClose(Wrapper::Dsml41Calls),
    ),
    (Dialect::Harmony, HARMONY, Opener::Framed(Framed::Harmony)),
    (
        Dialect::Harmony,
        HARMONY_START,
        Opener::Framed(Framed::HarmonyRole),
    ),
    (
        Dialect::Llama3,
        PYTHON_TAG,
        Opener::Framed(Framed::PythonTag),
    ),
    (
        Dialect::Pythonic,
        PYTHON_START,
        Opener::Framed(Framed::PythonStart),
    ),
];

/// The special-token openers (`<|..|>`, `<｜..｜>`) the dialect allows.
fn match_special(rest: &[u8], dialect: Dialect) -> Match {
    // Harmony's analysis channel first: it starts like a call's channel or role header,
    // and while it may still be one, nothing else is decided.
    if dialect.allows_special(Dialect::Harmony) {
        for form in [
            Form::Analysis,
            Form::AnalysisRole,
            Form::Final,
            Form::FinalRole,
        ] {
            match prefix(rest, form.open()) {
                Prefix::Full => return Match::Yes(Opener::Reasoning(form)),
                Prefix::Partial => return Match::NeedMore,
                Prefix::No => {}
            }
        }
    }
    let table = SPECIAL;
    let mut need_more = false;
    for (d, lit, opener) in table {
        if !dialect.allows_special(d) {
            continue;
        }
        match prefix(rest, lit) {
            Prefix::Full => return Match::Yes(opener),
            Prefix::Partial => need_more = true,
            Prefix::No => {}
        }
    }
    if need_more {
        Match::NeedMore
    } else {
        Match::No
    }
}

/// What the very start of an output opens: a Harmony call whose role header was the
/// prompt's end (` to=functions.NAME<|channel|>...`), with the dialects that allow it.
pub(crate) fn match_lead(rest: &[u8], dialect: Dialect, eof: bool) -> Match {
    if !dialect.allows_special(Dialect::Harmony) {
        return Match::No;
    }
    match harmony_lead(rest, eof) {
        Role::NeedMore => Match::NeedMore,
        Role::NotACall => Match::No,
        Role::Recipient(_) => Match::Yes(Opener::Framed(Framed::HarmonyLead)),
    }
}

/// The first byte of `◁` (U+25C1), which opens Kimi's `◁think▷`.
pub(crate) const TRIANGLE: u8 = 0xE2;

/// What starts at a `◁` in prose: Kimi's `◁think▷` (Kimi-VL, Kimi-Dev, some Kimi K2
/// templates), with the dialects that allow Kimi's forms. Other characters that share
/// the first byte (dashes, quotes) fail at the second.
pub(crate) fn match_triangle(rest: &[u8], dialect: Dialect) -> Match {
    if !dialect.allows_special(Dialect::KimiK2) {
        return Match::No;
    }
    match prefix(rest, KIMI_THINK) {
        Prefix::Full => Match::Yes(Opener::Reasoning(Form::KimiThink)),
        Prefix::Partial => Match::NeedMore,
        Prefix::No => Match::No,
    }
}

/// What starts at a `[` or `{` in prose: Mistral's `[TOOL_CALLS]` anywhere (with the
/// dialects that allow it); a bare JSON call or pythonic list only at a line start and
/// only when that dialect was asked for by name.
pub(crate) fn match_bracket(rest: &[u8], dialect: Dialect, line_start: bool) -> Match {
    if rest.first() == Some(&b'[') && dialect.allows_special(Dialect::Mistral) {
        let table = [
            (MISTRAL, Opener::Framed(Framed::Mistral)),
            (MISTRAL_THINK, Opener::Reasoning(Form::MistralThink)),
        ];
        for (lit, opener) in table {
            match prefix(rest, lit) {
                Prefix::Full => return Match::Yes(opener),
                Prefix::Partial => return Match::NeedMore,
                Prefix::No => {}
            }
        }
    }
    if !line_start {
        return Match::No;
    }
    match (rest.first(), dialect) {
        (Some(b'{'), Dialect::Llama3) => Match::Yes(Opener::Framed(Framed::BareJson)),
        (Some(b'['), Dialect::Pythonic) => Match::Yes(Opener::Framed(Framed::BarePythonic)),
        _ => Match::No,
    }
}

/// What a line that starts at `rest` may be, as far as code fences go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FenceStart {
    No,
    NeedMore,
    /// Starts like a fence of `count` `ch` characters; the whole line decides.
    Maybe,
}

/// Up to three spaces, then three or more backticks or tildes.
pub(crate) fn fence_start(rest: &[u8]) -> FenceStart {
    let mut i = 0;
    while i < rest.len() && i < 3 && rest[i] == b' ' {
        i += 1;
    }
    if i == rest.len() {
        return FenceStart::NeedMore;
    }
    let ch = rest[i];
    if ch != b'`' && ch != b'~' {
        return FenceStart::No;
    }
    let mut n = 0;
    while i + n < rest.len() && rest[i + n] == ch {
        n += 1;
    }
    if n >= 3 {
        FenceStart::Maybe
    } else if i + n == rest.len() {
        FenceStart::NeedMore
    } else {
        FenceStart::No
    }
}

/// A whole fence line, without its line break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FenceLine {
    pub ch: u8,
    pub count: usize,
    /// Nothing but whitespace after the fence characters: it can close a fence.
    pub bare: bool,
}

/// Reads a complete line as a fence line (CommonMark rules, simplified).
pub(crate) fn fence_line(line: &str) -> Option<FenceLine> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() && i < 3 && b[i] == b' ' {
        i += 1;
    }
    let ch = *b.get(i)?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let mut count = 0;
    while i + count < b.len() && b[i + count] == ch {
        count += 1;
    }
    if count < 3 {
        return None;
    }
    let info = &line[i + count..];
    if ch == b'`' && info.contains('`') {
        return None;
    }
    Some(FenceLine {
        ch,
        count,
        bare: info.trim().is_empty(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn openers() {
        assert_eq!(
            match_opener(b"<tool_call>x", Dialect::Auto),
            Match::Yes(Opener::ToolCall)
        );
        assert_eq!(match_opener(b"<tool_c", Dialect::Auto), Match::NeedMore);
        assert_eq!(
            match_opener(b"<tool_calls>\n<tool_call>", Dialect::Auto),
            Match::Yes(Opener::WrapperOpen(Wrapper::ToolCalls))
        );
        assert_eq!(
            match_opener(b"<tool_calls>\n[{", Dialect::Auto),
            Match::Yes(Opener::Framed(Framed::Hunyuan))
        );
        assert_eq!(
            match_opener(b"<tool_calls> ", Dialect::Auto),
            Match::NeedMore
        );
        assert_eq!(
            match_opener(b"<tool_calls>[", Dialect::Xml),
            Match::Yes(Opener::WrapperOpen(Wrapper::ToolCalls))
        );
        assert_eq!(match_opener(b"<thinking>", Dialect::Auto), Match::No);
        assert_eq!(match_opener(b"< 10", Dialect::Auto), Match::No);
        assert_eq!(match_opener(b"<u8>", Dialect::Auto), Match::No);
        assert_eq!(match_opener(b"<invoke name=", Dialect::Xml), Match::No);
        assert_eq!(match_opener(b"<function", Dialect::Auto), Match::NeedMore);
    }

    #[test]
    fn fences() {
        assert_eq!(fence_start(b"```xml"), FenceStart::Maybe);
        assert_eq!(fence_start(b"  ``"), FenceStart::NeedMore);
        assert_eq!(fence_start(b"    ```"), FenceStart::No);
        assert_eq!(fence_start(b"``x"), FenceStart::No);
        assert_eq!(
            fence_line("```xml"),
            Some(FenceLine {
                ch: b'`',
                count: 3,
                bare: false
            })
        );
        assert_eq!(
            fence_line("~~~~ "),
            Some(FenceLine {
                ch: b'~',
                count: 4,
                bare: true
            })
        );
        assert_eq!(fence_line("```a`"), None);
    }
}
