//! `text.format` of a Responses request (`json_schema`, as `responses.parse` sends it):
//! the model is asked for a JSON answer matching the schema, and the answer is checked
//! against it. A final answer that is not JSON, or does not match, fails the response
//! with the reason, rather than handing the client text its parser rejects.

use serde_json::{Value, json};

/// A requested output format: `json_schema` (or `json_object`, any JSON object).
pub struct OutputFormat {
    /// What the request said, echoed as the response's `text`.
    pub requested: Value,
    name: String,
    schema: Option<Value>,
    validator: Option<jsonschema::Validator>,
}

/// A request's `text` that toolgate cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("text must be an object: {{\"format\": {{...}}}}")]
    NotAnObject,
    #[error("text.format must be an object with a 'type'")]
    NoType,
    #[error("text.format json_schema needs 'schema', a JSON Schema object")]
    NoSchema,
    /// The schema does not compile (the validator's message).
    #[error("text.format.schema is not a usable JSON Schema: {0}")]
    BadSchema(String),
    /// Another type (`'NAME'`, or `(missing)`).
    #[error("text.format type {0} is not supported (text, json_schema, json_object)")]
    Unsupported(String),
}

/// Why an answer does not fit the requested format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerMismatch {
    #[error("the answer is not JSON as text.format ({format}) asks: {error}")]
    NotJson { format: String, error: String },
    /// Up to three schema errors, joined with `; `.
    #[error("the answer does not match the text.format schema {format}: {errors}")]
    Schema { format: String, errors: String },
    #[error("the answer is JSON but not an object, as json_object asks")]
    NotAnObject,
}

/// The format `text` asks for: `None` for plain text (absent, or `{"format": {"type":
/// "text"}}`), an error line for a format toolgate cannot take.
pub fn read(text: Option<&Value>) -> Result<Option<OutputFormat>, FormatError> {
    let Some(text) = text.filter(|t| !t.is_null()) else {
        return Ok(None);
    };
    if !text.is_object() {
        return Err(FormatError::NotAnObject);
    }
    let format = match text.get("format") {
        None | Some(Value::Null) => return Ok(None),
        Some(f) if f.is_object() => f,
        Some(_) => return Err(FormatError::NoType),
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(OutputFormat {
            requested: text.clone(),
            name: "json_object".into(),
            schema: None,
            validator: None,
        })),
        Some("json_schema") => {
            let schema = format
                .get("schema")
                .filter(|s| s.is_object())
                .ok_or(FormatError::NoSchema)?;
            let validator = jsonschema::validator_for(schema)
                .map_err(|e| FormatError::BadSchema(e.to_string()))?;
            let name = format
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("output")
                .to_string();
            Ok(Some(OutputFormat {
                requested: text.clone(),
                name,
                schema: Some(schema.clone()),
                validator: Some(validator),
            }))
        }
        other => Err(FormatError::Unsupported(
            other.map_or("(missing)".to_string(), |t| format!("'{t}'")),
        )),
    }
}

impl OutputFormat {
    /// What the model is told after the user's message.
    pub fn instruction(&self) -> String {
        match &self.schema {
            Some(schema) => format!(
                "Answer with one JSON value only (no prose, no code fences) that matches this JSON Schema, named {}:\n{}",
                self.name, schema
            ),
            None => "Answer with one JSON object only (no prose, no code fences).".into(),
        }
    }

    /// OpenAI's chat `response_format` for this format, so that an OpenAI model is
    /// asked natively.
    pub fn response_format(&self) -> Value {
        match &self.schema {
            Some(schema) => {
                let strict = self
                    .requested
                    .pointer("/format/strict")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                json!({"type": "json_schema", "json_schema": {
                    "name": self.name, "schema": schema, "strict": strict}})
            }
            None => json!({"type": "json_object"}),
        }
    }

    /// Why `answer` does not fit, if it does not.
    pub fn check(&self, answer: &str) -> Result<(), AnswerMismatch> {
        let body = strip_fences(answer.trim());
        let value: Value = serde_json::from_str(body).map_err(|e| AnswerMismatch::NotJson {
            format: self.name.clone(),
            error: e.to_string(),
        })?;
        match &self.validator {
            Some(validator) => {
                let errors: Vec<String> = validator
                    .iter_errors(&value)
                    .take(3)
                    .map(|e| {
                        let at = e.instance_path().to_string();
                        if at.is_empty() {
                            e.to_string()
                        } else {
                            format!("{at}: {e}")
                        }
                    })
                    .collect();
                if errors.is_empty() {
                    Ok(())
                } else {
                    Err(AnswerMismatch::Schema {
                        format: self.name.clone(),
                        errors: errors.join("; "),
                    })
                }
            }
            None if value.is_object() => Ok(()),
            None => Err(AnswerMismatch::NotAnObject),
        }
    }
}

/// A JSON answer a model wrapped in a code fence, unwrapped.
fn strip_fences(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// The response's `text` when no format was asked for.
pub fn plain() -> Value {
    json!({"format": {"type": "text"}})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_json_schema_format_checks_answers() {
        let text = json!({"format": {"type": "json_schema", "name": "Sum", "strict": true,
            "schema": {"type": "object", "properties": {"answer": {"type": "integer"}},
                       "required": ["answer"], "additionalProperties": false}}});
        let f = read(Some(&text)).unwrap().unwrap();
        assert!(f.check(r#"{"answer": 14}"#).is_ok());
        assert!(f.check("```json\n{\"answer\": 14}\n```").is_ok());
        assert!(
            f.check("fourteen")
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
        let e = f.check(r#"{"answer": "14"}"#).unwrap_err().to_string();
        assert!(e.contains("/answer"), "{e}");
        assert!(f.instruction().contains("\"answer\""));
        let native = f.response_format();
        assert_eq!(native["json_schema"]["name"], "Sum");
        assert_eq!(native["json_schema"]["strict"], true);
        assert_eq!(native["json_schema"]["schema"]["required"][0], "answer");
        assert!(
            read(Some(&json!({"format": {"type": "text"}})))
                .unwrap()
                .is_none()
        );
        assert!(read(Some(&json!({"format": {"type": "grammar"}}))).is_err());
        assert!(read(Some(&json!([null, null]))).is_err());
    }
}
