//! Coercion through a union (`anyOf` / `oneOf` without a `type` of its own): `null` /
//! `None` become null only where a member allows null, the other members are tried in
//! the order written, and the string member comes last, so text that is exact JSON of
//! another member's type takes that type and anything else stays text.

use serde_json::Value;

use super::coerce::{Mismatch, Types, coerce_json_noting, guess, typed, union_members};

/// The members of `schema` when it is a union without a `type` of its own.
pub(super) fn members_of(schema: &Value) -> Option<Vec<&Value>> {
    if schema.get("type").is_some() {
        return None;
    }
    let members: Vec<&Value> = union_members(schema).collect();
    (!members.is_empty()).then_some(members)
}

/// Whether member `m` (a union itself, perhaps) admits a type: a member that names no
/// type admits every one.
fn admits(m: &Value, bit: u8) -> bool {
    match members_of(m) {
        Some(inner) => inner.iter().any(|i| admits(i, bit)),
        None => Types::of(m).is_none_or(|t| t.has(bit)),
    }
}

/// Whether member `m` admits the JSON kind of `v` as it is.
fn admits_kind(m: &Value, v: &Value) -> bool {
    match members_of(m) {
        Some(inner) => inner.iter().any(|i| admits_kind(i, v)),
        None => Types::of(m).is_none_or(|t| t.admits(v)),
    }
}

/// Whether object `v` has every key member `m` requires and the value its `const` or
/// `enum` allows for each key it has: how a discriminated union's member is told.
fn carries_tags(m: &Value, v: &Value) -> bool {
    if let Some(inner) = members_of(m) {
        return inner.iter().any(|i| carries_tags(i, v));
    }
    let (Some(obj), Some(props)) = (
        v.as_object(),
        m.get("properties").and_then(Value::as_object),
    ) else {
        return false;
    };
    let required = m.get("required").and_then(Value::as_array).is_none_or(|r| {
        r.iter()
            .filter_map(Value::as_str)
            .all(|k| obj.contains_key(k))
    });
    required
        && props.iter().all(|(k, p)| match obj.get(k) {
            None => true,
            Some(x) => {
                p.get("const").is_none_or(|c| c == x)
                    && p.get("enum")
                        .and_then(Value::as_array)
                        .is_none_or(|e| e.contains(x))
            }
        })
}

/// The union's types, for messages (`integer or array`).
fn describe(members: &[&Value]) -> String {
    let mut names: Vec<String> = Vec::new();
    for m in members {
        let name = match members_of(m) {
            Some(inner) => describe(&inner),
            None => Types::of(m).map_or_else(|| "any".to_string(), Types::describe),
        };
        for part in name.split(" or ") {
            if !names.iter().any(|n| n == part) {
                names.push(part.to_string());
            }
        }
    }
    names.join(" or ")
}

/// Text written by a model, read by a union's members.
pub(super) fn text(
    text: &str,
    members: &[&Value],
    recovered: &mut Option<&'static str>,
) -> Result<Value, Mismatch> {
    let t = text.trim();
    let any = |bit| members.iter().any(|m| admits(m, bit));
    if matches!(t, "null" | "None") && any(Types::NULL) {
        if t == "None" {
            *recovered = Some("the Python literal None read as null");
        }
        return Ok(Value::Null);
    }
    // Exact JSON of a list or an object: the member that admits and matches it.
    if t.starts_with(['[', '{'])
        && let Ok(v) = serde_json::from_str::<Value>(t)
        && members.iter().any(|m| admits_kind(m, &v))
    {
        let mut note = None;
        if let Ok(v) = json(v, members, &mut note) {
            if note.is_some() {
                *recovered = note;
            }
            return Ok(v);
        }
    }
    let exact = any(Types::STRING);
    let mut partial = None;
    for m in members {
        let mut note = None;
        match other_than_string(text, m, exact, &mut note) {
            Some(Ok(v)) => {
                if note.is_some() {
                    *recovered = note;
                }
                return Ok(v);
            }
            Some(Err(mismatch)) => {
                partial.get_or_insert(mismatch);
            }
            None => {}
        }
    }
    if exact {
        return Ok(Value::String(text.to_string()));
    }
    if t.is_empty() && any(Types::NULL) {
        return Ok(Value::Null);
    }
    Err(partial.unwrap_or_else(|| Mismatch {
        kept: Value::String(text.to_string()),
        expected: describe(members),
    }))
}

/// `text` read as member `m`'s types other than string and null (see [`typed`]); a
/// member without a type takes the heuristic's non-string guesses.
fn other_than_string(
    text: &str,
    m: &Value,
    exact: bool,
    recovered: &mut Option<&'static str>,
) -> Option<Result<Value, Mismatch>> {
    if let Some(inner) = members_of(m) {
        let mut partial = None;
        for i in inner {
            match other_than_string(text, i, exact, recovered) {
                Some(Ok(v)) => return Some(Ok(v)),
                Some(Err(mismatch)) => {
                    partial.get_or_insert(mismatch);
                }
                None => {}
            }
        }
        return partial.map(Err);
    }
    match Types::of(m) {
        Some(types) => typed(text, Some(m), types, exact, recovered),
        None => guess(text).map(Ok),
    }
}

/// A JSON value (Hermes or native arguments) read by a union's members: the first
/// member, in order, that admits its kind takes it (its parts coerced); a string that
/// no member admits is read as text; a number or a boolean where only a string member
/// fits becomes text.
pub(super) fn json(
    value: Value,
    members: &[&Value],
    recovered: &mut Option<&'static str>,
) -> Result<Value, Mismatch> {
    let mut fitting: Vec<&Value> = members
        .iter()
        .copied()
        .filter(|m| admits_kind(m, &value))
        .collect();
    // An object goes first to the member whose tags it carries (a discriminated union).
    if fitting.len() > 1
        && let Some(i) = fitting.iter().position(|m| carries_tags(m, &value))
    {
        let tagged = fitting.remove(i);
        fitting.insert(0, tagged);
    }
    if let [only] = fitting[..] {
        return coerce_json_noting(value, Some(only), recovered);
    }
    let mut partial = None;
    for m in fitting {
        let mut note = None;
        match coerce_json_noting(value.clone(), Some(m), &mut note) {
            Ok(v) => {
                if note.is_some() {
                    *recovered = note;
                }
                return Ok(v);
            }
            Err(mismatch) => {
                partial.get_or_insert(mismatch);
            }
        }
    }
    if let Some(mismatch) = partial {
        return Err(mismatch);
    }
    match value {
        Value::String(s) => text(&s, members, recovered),
        Value::Number(_) | Value::Bool(_) if members.iter().any(|m| admits(m, Types::STRING)) => {
            Ok(Value::String(value.to_string()))
        }
        other => Err(Mismatch {
            kept: other,
            expected: describe(members),
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use serde_json::json;

    use super::super::coerce::{coerce_json, coerce_text, coerce_text_noting};

    #[test]
    fn optional_string_keeps_text_and_reads_null() {
        let s = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
        assert_eq!(coerce_text("42", Some(&s)), Ok(json!("42")));
        assert_eq!(coerce_text("[1, 2]", Some(&s)), Ok(json!("[1, 2]")));
        assert_eq!(coerce_text("null", Some(&s)), Ok(json!(null)));
        let mut how = None;
        assert_eq!(
            coerce_text_noting(" None\n", Some(&s), &mut how),
            Ok(json!(null))
        );
        assert!(how.is_some());
        // Null only where a member allows it.
        let no_null = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert_eq!(coerce_text("null", Some(&no_null)), Ok(json!("null")));
        assert_eq!(coerce_text("None", Some(&no_null)), Ok(json!("None")));
    }

    #[test]
    fn members_are_tried_in_order_with_the_string_last() {
        let s = json!({"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]});
        assert_eq!(coerce_text("12", Some(&s)), Ok(json!(12)));
        assert_eq!(coerce_text("[1, \"2\"]", Some(&s)), Ok(json!([1, 2])));
        assert_eq!(coerce_text("twelve", Some(&s)), Ok(json!("twelve")));
        // Only exact JSON beats the string member: no `10.0` integer, no Python list.
        assert_eq!(coerce_text("10.0", Some(&s)), Ok(json!("10.0")));
        assert_eq!(coerce_text("['a']", Some(&s)), Ok(json!("['a']")));
        // A list with a wrong item is text when a string member is there.
        assert_eq!(coerce_text("[\"x\"]", Some(&s)), Ok(json!("[\"x\"]")));
        // oneOf reads the same way; the first member that fits wins.
        let o = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert_eq!(coerce_text("3", Some(&o)), Ok(json!(3)));
        assert_eq!(coerce_text("2.5", Some(&o)), Ok(json!(2.5)));
    }

    #[test]
    fn without_a_string_member_lenient_forms_are_read() {
        let s = json!({"anyOf": [{"type": "boolean"}, {"type": "null"}]});
        assert_eq!(coerce_text("True", Some(&s)), Ok(json!(true)));
        assert_eq!(coerce_text("", Some(&s)), Ok(json!(null)));
        let err = coerce_text("maybe", Some(&s)).unwrap_err();
        assert_eq!(err.expected, "boolean or null");
        assert_eq!(err.kept, json!("maybe"));
        let list =
            json!({"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]});
        let err = coerce_text("[\"x\"]", Some(&list)).unwrap_err();
        assert_eq!(err.kept, json!(["x"]));
        let mut how = None;
        let err = coerce_text_noting("[1, None]", Some(&list), &mut how).unwrap_err();
        assert_eq!(err.kept, json!([1, null]));
    }

    #[test]
    fn type_lists_try_the_string_last() {
        let s = json!({"type": ["array", "string"], "items": {"type": "string"}});
        assert_eq!(
            coerce_text("[\"a\", \"b\"]", Some(&s)),
            Ok(json!(["a", "b"]))
        );
        assert_eq!(coerce_text("a, b", Some(&s)), Ok(json!("a, b")));
        let n = json!({"type": ["integer", "string", "null"]});
        assert_eq!(coerce_text("7", Some(&n)), Ok(json!(7)));
        assert_eq!(coerce_text("null", Some(&n)), Ok(json!(null)));
        assert_eq!(coerce_text("", Some(&n)), Ok(json!("")));
        assert_eq!(coerce_text("7 days", Some(&n)), Ok(json!("7 days")));
    }

    #[test]
    fn json_values_keep_a_kind_a_member_admits() {
        let s = json!({"anyOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(coerce_json(json!("5"), Some(&s)), Ok(json!("5")));
        assert_eq!(coerce_json(json!(5), Some(&s)), Ok(json!(5)));
        assert_eq!(coerce_json(json!(true), Some(&s)), Ok(json!("true")));
        let n = json!({"anyOf": [{"type": "integer"}, {"type": "null"}]});
        assert_eq!(coerce_json(json!("5"), Some(&n)), Ok(json!(5)));
        assert_eq!(coerce_json(json!(null), Some(&n)), Ok(json!(null)));
        assert!(coerce_json(json!([1]), Some(&n)).is_err());
        // Objects are coerced by the member that admits them.
        let o = json!({"anyOf": [
            {"type": "object", "properties": {"n": {"type": "integer"}}},
            {"type": "null"}
        ]});
        assert_eq!(
            coerce_json(json!({"n": "4"}), Some(&o)),
            Ok(json!({"n": 4}))
        );
        // A member without a type admits anything.
        let any = json!({"anyOf": [{"type": "integer"}, {}]});
        assert_eq!(coerce_json(json!([1]), Some(&any)), Ok(json!([1])));
        assert_eq!(coerce_text("x", Some(&any)), Ok(json!("x")));
        assert_eq!(coerce_text("4", Some(&any)), Ok(json!(4)));
    }

    #[test]
    fn a_discriminated_union_picks_the_member_by_its_tag() {
        let s = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "point"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "box"}, "size": {"type": "number"}},
             "required": ["kind", "size"]}
        ]});
        let want = json!({"kind": "box", "size": 2.5});
        assert_eq!(
            coerce_json(json!({"kind": "box", "size": "2.5"}), Some(&s)),
            Ok(want.clone())
        );
        assert_eq!(
            coerce_text("{\"kind\": \"box\", \"size\": \"2.5\"}", Some(&s)),
            Ok(want)
        );
        // No member's tags: the first that admits an object.
        assert_eq!(
            coerce_json(json!({"kind": "blob", "size": "1"}), Some(&s)),
            Ok(json!({"kind": "blob", "size": "1"}))
        );
    }

    #[test]
    fn nested_unions_and_enums_without_a_type() {
        let s = json!({"anyOf": [
            {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            {"enum": ["auto", "none"]}
        ]});
        assert_eq!(coerce_text("3", Some(&s)), Ok(json!(3)));
        assert_eq!(coerce_text("auto", Some(&s)), Ok(json!("auto")));
        assert_eq!(coerce_text("null", Some(&s)), Ok(json!(null)));
        // An enum of strings is a string: "1" stays text.
        let e = json!({"enum": ["1", "2"]});
        assert_eq!(coerce_text("1", Some(&e)), Ok(json!("1")));
        assert_eq!(coerce_json(json!(2), Some(&e)), Ok(json!("2")));
    }
}
