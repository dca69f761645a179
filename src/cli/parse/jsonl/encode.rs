//! A parse result as one compact JSON line, byte for byte what serde_json writes, with
//! its strings (the prose `text` and the argument values: most of the bytes) escaped
//! eight bytes at a time: runs with nothing to escape are copied whole.

use serde_json::Value;
use toolgate::parse::{ParsedTurn, ToolCall};

use super::special::next_special;

/// `{"text":..,"reasoning":[..],"calls":[..],"problems":[..]}` (`reasoning` only when
/// there is some) and a line break.
pub(super) fn write_turn(out: &mut Vec<u8>, turn: &ParsedTurn) {
    out.extend_from_slice(b"{\"text\":");
    write_str(out, &turn.text);
    if !turn.reasoning.is_empty() {
        out.extend_from_slice(b",\"reasoning\":[");
        for (i, r) in turn.reasoning.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"text\":");
            write_str(out, &r.text);
            out.extend_from_slice(format!(",\"start\":{},\"end\":{}}}", r.start, r.end).as_bytes());
        }
        out.push(b']');
    }
    out.extend_from_slice(b",\"calls\":[");
    for (i, call) in turn.calls.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_call(out, call);
    }
    out.extend_from_slice(b"],\"problems\":");
    // Writing to a Vec cannot fail, and problems always serialize.
    let _ = serde_json::to_writer(&mut *out, &turn.problems);
    out.extend_from_slice(b"}\n");
}

fn write_call(out: &mut Vec<u8>, call: &ToolCall) {
    out.extend_from_slice(b"{\"id\":");
    write_str(out, &call.id);
    out.extend_from_slice(b",\"name\":");
    write_str(out, &call.name);
    out.extend_from_slice(b",\"arguments\":");
    write_object(out, &call.arguments);
    out.push(b'}');
}

fn write_object(out: &mut Vec<u8>, map: &serde_json::Map<String, Value>) {
    out.push(b'{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_value(out, v);
    }
    out.push(b'}');
}

fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Writing to a Vec cannot fail; numbers are written by serde_json itself.
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(out, map),
    }
}

/// A JSON string, escaped as serde_json escapes it.
fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut from = 0;
    loop {
        let i = next_special(b, from);
        let Some(&c) = b.get(i) else { break };
        out.extend_from_slice(&b[from..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(c >> 4)],
                HEX[usize::from(c & 0xf)],
            ]),
        }
        from = i + 1;
    }
    out.extend_from_slice(&b[from..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolgate::parse::{ParseOptions, parse_input};

    #[test]
    fn strings_escape_as_serde_json_does() {
        let mut every_byte = String::new();
        for c in 0u8..0x80 {
            every_byte.push(char::from(c));
            every_byte.push_str("abcdefghi");
        }
        for s in [
            "",
            "a",
            "12345678",
            "no escapes at all, but longer than a word",
            "\"",
            "x\\y\"z\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f} é 中文 😀",
            every_byte.as_str(),
        ] {
            let mut out = Vec::new();
            write_str(&mut out, s);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }

    #[test]
    fn a_turn_is_written_as_serde_json_writes_it() {
        let opts = ParseOptions::default();
        let mut calls = 0;
        for input in [
            "",
            "Sure.\n<tool_call><name>web_search</name><params><query><![CDATA[\"rust\"\n]]></query><n>5</n></params></tool_call>\nDone.",
            "<tool_call><name>a</name><params><x>1</x>",
            "<tool_call>{\"name\": \"b\", \"arguments\": {\"k\": [1, -2.5e300, true, false, {\"z\": null, \"q\\\"\": \"\\u0001\"}], \"e\": [], \"o\": {}}}</tool_call> tail\t\u{1}",
            "<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"c\", \"arguments\": {\"n\": 18446744073709551615}}</tool_call>",
            "<think>a \"quoted\"\tthought</think>Then.<think>more 中文</think>",
        ] {
            let turn = parse_input(input, &opts);
            calls += turn.calls.len();
            let mut out = Vec::new();
            write_turn(&mut out, &turn);
            let mut expected = serde_json::to_vec(&turn).unwrap();
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
        // The third input ends inside its call: no call (a truncated_call problem).
        assert_eq!(calls, 4);
    }
}
