//! Custom tools (the Responses API's `type: custom`): a client tool whose input is
//! freeform text, optionally held to a grammar (`lark` or `regex`), not JSON arguments.
//! Inside toolgate such a call has one argument, [`INPUT`], and its parameters carry the
//! format under [`MARKER`], so that a model that knows custom tools (OpenAI's) is
//! offered one and every other model a function with one string parameter.

use serde_json::{Value, json};

/// The one argument of a custom tool's call: its freeform input.
pub const INPUT: &str = "input";
/// The key of a custom tool's parameters that holds its format (an `x-` annotation:
/// the schema validator ignores it; `openai_tools` reads it).
pub const MARKER: &str = "x-toolgate-custom";

/// The format of a custom tool as declared (`None`: unconstrained text), checked:
/// `{type: text}` or `{type: grammar, syntax: lark|regex, definition}`; a regex must
/// compile.
pub fn read_format(format: Option<&Value>) -> Result<Value, String> {
    let Some(format) = format.filter(|f| !f.is_null()) else {
        return Ok(json!({"type": "text"}));
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(json!({"type": "text"})),
        Some("grammar") => {
            let syntax = format.get("syntax").and_then(Value::as_str);
            let definition = format
                .get("definition")
                .and_then(Value::as_str)
                .ok_or("a grammar format needs a 'definition' string")?;
            match syntax {
                Some("lark") => {}
                Some("regex") => {
                    regex::Regex::new(definition)
                        .map_err(|e| format!("the regex grammar does not compile: {e}"))?;
                }
                _ => return Err("a grammar format's 'syntax' is 'lark' or 'regex'".into()),
            }
            Ok(json!({"type": "grammar", "syntax": syntax, "definition": definition}))
        }
        _ => Err("'format' is {\"type\": \"text\"} or {\"type\": \"grammar\", ...}".into()),
    }
}

/// The parameters of a custom tool with `format`: one required string, [`INPUT`]
/// (a regex grammar as its `pattern`, anchored), and the format under [`MARKER`].
pub fn parameters(format: &Value) -> Value {
    let mut input = json!({"type": "string", "description": "The tool's freeform input"});
    if format["syntax"] == "regex"
        && let Some(definition) = format["definition"].as_str()
    {
        input["pattern"] = json!(format!("^(?:{definition})$"));
    }
    json!({
        "type": "object",
        "properties": {INPUT: input},
        "required": [INPUT],
        "additionalProperties": false,
        MARKER: format,
    })
}

/// The format of a tool whose parameters are a custom tool's, else `None`.
pub fn format_of(parameters: &Value) -> Option<&Value> {
    parameters.get(MARKER)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn formats_are_checked() {
        assert_eq!(read_format(None).unwrap(), json!({"type": "text"}));
        let regex = json!({"type": "grammar", "syntax": "regex", "definition": "[0-9]+"});
        let p = parameters(&read_format(Some(&regex)).unwrap());
        assert_eq!(p["properties"]["input"]["pattern"], "^(?:[0-9]+)$");
        assert_eq!(format_of(&p).unwrap()["syntax"], "regex");
        for (bad, why) in [
            (
                json!({"type": "grammar", "syntax": "regex", "definition": "("}),
                "does not compile",
            ),
            (
                json!({"type": "grammar", "syntax": "ebnf", "definition": "x"}),
                "'lark' or 'regex'",
            ),
            (json!({"type": "json"}), "'format' is"),
        ] {
            assert!(read_format(Some(&bad)).unwrap_err().contains(why), "{bad}");
        }
    }
}
