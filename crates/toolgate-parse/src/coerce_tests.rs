//! Coercion's tests: strings kept, quoted JSON read, values typed from text by the schema, mismatches kept as text, and guesses without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use serde_json::json;

#[test]
fn string_stays_string() {
    let s = json!({"type": "string"});
    assert_eq!(coerce_text("42", Some(&s)), Ok(json!("42")));
    assert_eq!(coerce_text("null", Some(&s)), Ok(json!("null")));
    let sn = json!({"type": ["string", "null"]});
    assert_eq!(coerce_text("null", Some(&sn)), Ok(json!(null)));
    assert_eq!(coerce_text("42", Some(&sn)), Ok(json!("42")));
}

#[test]
fn backslash_quoted_json_is_read() {
    let arr = json!({"type": "array"});
    let mut how = None;
    assert_eq!(
        coerce_text_noting(r#"[{\"id\": \"1\"}]"#, Some(&arr), &mut how),
        Ok(json!([{"id": "1"}]))
    );
    assert!(how.is_some());
    // Not for a string parameter, and not when unescaping gives no JSON.
    let s = json!({"type": "string"});
    assert_eq!(coerce_text(r#"[\"a\"]"#, Some(&s)), Ok(json!(r#"[\"a\"]"#)));
    assert!(coerce_text(r#"[\"a\""#, Some(&arr)).is_err());
}

#[test]
fn typed_from_text() {
    assert_eq!(
        coerce_text(" 10 ", Some(&json!({"type": "integer"}))),
        Ok(json!(10))
    );
    assert_eq!(
        coerce_text("10.0", Some(&json!({"type": "integer"}))),
        Ok(json!(10))
    );
    assert_eq!(
        coerce_text("1.5", Some(&json!({"type": "number"}))),
        Ok(json!(1.5))
    );
    assert_eq!(
        coerce_text("True", Some(&json!({"type": "boolean"}))),
        Ok(json!(true))
    );
    assert_eq!(
        coerce_text(
            "[1,\"2\"]",
            Some(&json!({"type": "array", "items": {"type": "integer"}}))
        ),
        Ok(json!([1, 2]))
    );
    assert_eq!(
        coerce_text("null", Some(&json!({"type": ["integer", "null"]}))),
        Ok(json!(null))
    );
}

#[test]
fn mismatch_keeps_text() {
    let err = coerce_text("ten", Some(&json!({"type": "integer"}))).unwrap_err();
    assert_eq!(err.kept, json!("ten"));
    assert_eq!(err.expected, "integer");
    let err = coerce_text("1.5", Some(&json!({"type": "integer"}))).unwrap_err();
    assert_eq!(err.kept, json!("1.5"));
}

#[test]
fn heuristic_guesses() {
    assert_eq!(heuristic("true"), json!(true));
    assert_eq!(heuristic("-12"), json!(-12));
    assert_eq!(heuristic("3.25"), json!(3.25));
    assert_eq!(heuristic("007"), json!("007"));
    assert_eq!(heuristic("1e400"), json!("1e400"));
    assert_eq!(heuristic("NaN"), json!("NaN"));
    assert_eq!(heuristic("null"), json!("null"));
    assert_eq!(heuristic(" 4"), json!(" 4"));
}

#[test]
fn json_values_follow_schema() {
    let s = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}});
    assert_eq!(
        coerce_json(json!({"n": "5", "s": 7}), Some(&s)),
        Ok(json!({"n": 5, "s": "7"}))
    );
    assert!(coerce_json(json!({"n": "x"}), Some(&s)).is_err());
}
