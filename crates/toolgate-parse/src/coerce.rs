//! Value coercion: text (or loosely typed JSON) to the types a tool's schema asks for,
//! and the heuristic used when no schema is known. One implementation, shared by every
//! dialect and by argument validation.

use serde_json::{Map, Number, Value};

use super::unions;

/// The JSON Schema `type` keyword of `schema`, as a small set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Types(u8);

impl Types {
    pub const STRING: u8 = 1;
    pub const INTEGER: u8 = 2;
    pub const NUMBER: u8 = 4;
    pub const BOOLEAN: u8 = 8;
    pub const ARRAY: u8 = 16;
    pub const OBJECT: u8 = 32;
    pub const NULL: u8 = 64;

    /// Reads `type` (a name or a list of names), or the union of the members'
    /// types of an `anyOf` / `oneOf` (Pydantic writes `Optional[T]` that way).
    /// `None` when the schema names no type.
    pub fn of(schema: &Value) -> Option<Types> {
        let mut bits = 0;
        match schema.get("type") {
            Some(Value::String(s)) => bits |= Self::bit(s),
            Some(Value::Array(list)) => {
                for t in list.iter().filter_map(Value::as_str) {
                    bits |= Self::bit(t);
                }
            }
            Some(_) => return None,
            None => match (
                union_members(schema).next(),
                schema.get("const"),
                schema.get("enum"),
            ) {
                (Some(_), _, _) => {
                    for member in union_members(schema) {
                        // A member without a type accepts anything: the union names no type.
                        bits |= Types::of(member)?.0;
                    }
                }
                // `const` / `enum` without `type`: the kinds of the values allowed.
                (None, Some(c), _) => bits |= Self::kind(c),
                (None, None, Some(Value::Array(list))) => {
                    for v in list {
                        bits |= Self::kind(v);
                    }
                }
                _ => {}
            },
        }
        (bits != 0).then_some(Types(bits))
    }

    /// The type bit of a JSON value (a whole number is an integer).
    fn kind(v: &Value) -> u8 {
        match v {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(n) if n.is_i64() || n.is_u64() => Self::INTEGER,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        }
    }

    /// Whether the value's JSON kind is among these types (an integer is a number too).
    pub(super) fn admits(self, v: &Value) -> bool {
        match v {
            Value::Number(_) => self.has(Self::NUMBER | Self::INTEGER),
            other => self.has(Self::kind(other)),
        }
    }

    fn bit(name: &str) -> u8 {
        match name {
            "string" | "str" => Self::STRING,
            "integer" | "int" => Self::INTEGER,
            "number" | "float" => Self::NUMBER,
            "boolean" | "bool" => Self::BOOLEAN,
            "array" | "list" => Self::ARRAY,
            "object" | "dict" => Self::OBJECT,
            "null" => Self::NULL,
            _ => 0,
        }
    }

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// Whether every type here is among `bits`.
    pub fn within(self, bits: u8) -> bool {
        self.0 & !bits == 0
    }

    /// The type names, for messages: `integer`, `string or null`.
    pub fn describe(self) -> String {
        let names = [
            (Self::STRING, "string"),
            (Self::INTEGER, "integer"),
            (Self::NUMBER, "number"),
            (Self::BOOLEAN, "boolean"),
            (Self::ARRAY, "array"),
            (Self::OBJECT, "object"),
            (Self::NULL, "null"),
        ];
        let found: Vec<&str> = names
            .iter()
            .filter(|(b, _)| self.has(*b))
            .map(|(_, n)| *n)
            .collect();
        found.join(" or ")
    }
}

/// The members of an `anyOf` / `oneOf` union (empty when the schema is none).
pub(super) fn union_members(schema: &Value) -> impl Iterator<Item = &Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| schema.get(k)?.as_array())
        .flatten()
}

/// The schema of property `name` inside an object schema (or inside the object
/// member of a union).
pub fn property<'a>(schema: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    let schema = schema?;
    if let Some(p) = schema.get("properties").and_then(|p| p.get(name)) {
        return Some(p);
    }
    union_members(schema).find_map(|m| property(Some(m), name))
}

/// The item schema of an array schema (or of the array member of a union).
pub fn items(schema: Option<&Value>) -> Option<&Value> {
    let schema = schema?;
    if let Some(i) = schema.get("items") {
        return Some(i);
    }
    union_members(schema).find_map(|m| items(Some(m)))
}

/// Why a value was kept as written: it does not fit the types the schema wants.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The value as written, unchanged.
    pub kept: Value,
    /// What the schema wanted (`integer`, `boolean or null`).
    pub expected: String,
}

/// Coerces text written by a model to the type its schema wants.
///
/// A `string` parameter stays a string even when it reads `42` or `null`. Other types
/// parse from the text (JSON first). With no schema (or a schema without `type`) the
/// [`heuristic`] applies. A value that fits no type is returned as text in the error.
pub fn coerce_text(text: &str, schema: Option<&Value>) -> Result<Value, Mismatch> {
    coerce_text_noting(text, schema, &mut None)
}

/// Like [`coerce_text`]; `recovered` says how, when the value was read from a form
/// the schema did not ask for (a Python literal, JSON encoded twice).
pub fn coerce_text_noting(
    text: &str,
    schema: Option<&Value>,
    recovered: &mut Option<&'static str>,
) -> Result<Value, Mismatch> {
    let Some(schema) = schema else {
        return Ok(heuristic(text));
    };
    if let Some(members) = unions::members_of(schema) {
        return unions::text(text, &members, recovered);
    }
    let Some(types) = Types::of(schema) else {
        return Ok(heuristic(text));
    };
    let t = text.trim();
    if types.has(Types::NULL) && (t == "null" || t == "None") {
        if t == "None" {
            *recovered = Some("the Python literal None read as null");
        }
        return Ok(Value::Null);
    }
    // The string type is tried last: only exact JSON of another type takes its place.
    let exact = types.has(Types::STRING);
    if !types.within(Types::STRING | Types::NULL) {
        match typed(text, Some(schema), types, exact, recovered) {
            Some(Ok(v)) => return Ok(v),
            Some(Err(m)) if !exact => return Err(m),
            _ => {}
        }
    }
    if exact {
        return Ok(Value::String(text.to_string()));
    }
    if types.has(Types::NULL) && t.is_empty() {
        return Ok(Value::Null);
    }
    Err(Mismatch {
        kept: Value::String(text.to_string()),
        expected: types.describe(),
    })
}

/// Text read as one of `types` other than string and null: `None` when it reads as
/// none of them, an error when it is a list or an object of the right kind with a
/// wrong part inside (the parts as far as they were coerced). `exact` (the schema
/// admits a string too) takes only exact JSON: no `True`, no `10.0` for an integer,
/// no Python literals, no JSON encoded twice.
pub(super) fn typed(
    text: &str,
    schema: Option<&Value>,
    types: Types,
    exact: bool,
    recovered: &mut Option<&'static str>,
) -> Option<Result<Value, Mismatch>> {
    let t = text.trim();
    if types.has(Types::BOOLEAN) {
        let b = if exact {
            match t {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            }
        } else {
            parse_bool(t)
        };
        if let Some(b) = b {
            return Some(Ok(Value::Bool(b)));
        }
    }
    if types.has(Types::INTEGER) {
        let n = if exact {
            parse_integer_strict(t)
        } else {
            parse_integer(t)
        };
        if let Some(n) = n {
            return Some(Ok(n));
        }
    }
    if types.has(Types::NUMBER)
        && let Some(n) = parse_number(t)
    {
        return Some(Ok(n));
    }
    if !(types.has(Types::ARRAY) || types.has(Types::OBJECT)) {
        return None;
    }
    let fits = |v: &Value| {
        (v.is_array() && types.has(Types::ARRAY)) || (v.is_object() && types.has(Types::OBJECT))
    };
    match serde_json::from_str::<Value>(t) {
        Ok(v) if fits(&v) => return Some(coerce_json_noting(v, schema, recovered)),
        // JSON encoded twice: a string holding the object.
        Ok(Value::String(inner)) if !exact => {
            let mut again = None;
            if let Ok(v) = coerce_text_noting(&inner, schema, &mut again)
                && fits(&v)
            {
                *recovered = Some("a value encoded as a JSON string twice was decoded");
                return Some(Ok(v));
            }
        }
        Ok(_) => {}
        Err(_) if exact => {}
        Err(_) => {
            if let Some(v) = super::pyliteral::to_json(t).filter(fits) {
                *recovered = Some("a Python literal (single quotes, True/False/None) read as JSON");
                return Some(coerce_json_noting(v, schema, recovered));
            }
            // JSON whose quotes are backslash-escaped (`[{\"a\": 1}]`): the inside
            // of a JSON string written without its outer quotes.
            if t.contains("\\\"")
                && let Ok(inner) = serde_json::from_str::<String>(&format!("\"{t}\""))
                && let Ok(v) = serde_json::from_str::<Value>(&inner)
                && fits(&v)
            {
                *recovered = Some("a value whose JSON quotes were backslash-escaped was read");
                return Some(coerce_json_noting(v, schema, recovered));
            }
        }
    }
    None
}

/// Coerces a JSON value (Hermes arguments, native arguments, parsed arrays) to its
/// schema: strings that should be numbers, booleans, arrays or objects are parsed;
/// numbers and booleans where a string is wanted are written as text. Arrays and
/// objects are coerced item by item. A value that cannot fit comes back unchanged in
/// the error.
pub fn coerce_json(value: Value, schema: Option<&Value>) -> Result<Value, Mismatch> {
    coerce_json_noting(value, schema, &mut None)
}

/// Like [`coerce_json`], noting a recovery as [`coerce_text_noting`] does.
pub fn coerce_json_noting(
    value: Value,
    schema: Option<&Value>,
    recovered: &mut Option<&'static str>,
) -> Result<Value, Mismatch> {
    if let Some(members) = schema.and_then(unions::members_of) {
        return unions::json(value, &members, recovered);
    }
    let Some(types) = schema.and_then(Types::of) else {
        return Ok(value);
    };
    let mismatch = |kept: Value| Mismatch {
        kept,
        expected: types.describe(),
    };
    match value {
        Value::String(s) if types.has(Types::STRING) => Ok(Value::String(s)),
        Value::String(s) => coerce_text_noting(&s, schema, recovered),
        Value::Null if types.has(Types::NULL) => Ok(Value::Null),
        Value::Bool(_) if types.has(Types::BOOLEAN) => Ok(value),
        Value::Number(ref n) if types.has(Types::NUMBER) => Ok(Value::Number(n.clone())),
        Value::Number(ref n) if types.has(Types::INTEGER) => {
            if n.is_i64() || n.is_u64() {
                Ok(value)
            } else {
                match n.as_f64().and_then(integral) {
                    Some(i) => Ok(i),
                    None => Err(mismatch(value)),
                }
            }
        }
        Value::Number(_) | Value::Bool(_) if types.has(Types::STRING) => {
            Ok(Value::String(value.to_string()))
        }
        Value::Array(list) if types.has(Types::ARRAY) => {
            let item_schema = items(schema);
            let mut failed = false;
            let out: Vec<Value> = list
                .into_iter()
                .map(|v| {
                    coerce_json_noting(v, item_schema, recovered).unwrap_or_else(|m| {
                        failed = true;
                        m.kept
                    })
                })
                .collect();
            if failed {
                Err(mismatch(Value::Array(out)))
            } else {
                Ok(Value::Array(out))
            }
        }
        Value::Object(map) if types.has(Types::OBJECT) => {
            let mut failed = false;
            let out: Map<String, Value> =
                map.into_iter()
                    .map(|(k, v)| {
                        let v = coerce_json_noting(v, property(schema, &k), recovered)
                            .unwrap_or_else(|m| {
                                failed = true;
                                m.kept
                            });
                        (k, v)
                    })
                    .collect();
            if failed {
                Err(mismatch(Value::Object(out)))
            } else {
                Ok(Value::Object(out))
            }
        }
        other => Err(mismatch(other)),
    }
}

/// The guess used when no schema is known: `true`/`false` become booleans, integers
/// and decimal numbers become numbers, everything else stays a string.
pub fn heuristic(text: &str) -> Value {
    guess(text).unwrap_or_else(|| Value::String(text.to_string()))
}

/// Like [`coerce_text`], for a value the caller owns: text that stays text is moved,
/// not copied (values can be megabytes).
pub fn coerce_string(text: String, schema: Option<&Value>) -> Result<Value, Mismatch> {
    coerce_string_noting(text, schema, &mut None)
}

/// Like [`coerce_string`], noting a recovery as [`coerce_text_noting`] does.
pub fn coerce_string_noting(
    text: String,
    schema: Option<&Value>,
    recovered: &mut Option<&'static str>,
) -> Result<Value, Mismatch> {
    let stays_text = match schema {
        // A union goes through its members' rules.
        Some(s) if unions::members_of(s).is_some() => false,
        Some(s) => match Types::of(s) {
            Some(types) => {
                types.has(Types::STRING)
                    && types.within(Types::STRING | Types::NULL)
                    && !(types.has(Types::NULL) && matches!(text.trim(), "null" | "None"))
            }
            None => guess(&text).is_none(),
        },
        None => guess(&text).is_none(),
    };
    if stays_text {
        Ok(Value::String(text))
    } else {
        coerce_text_noting(&text, schema, recovered)
    }
}

/// The heuristic's non-string guesses.
pub(super) fn guess(text: &str) -> Option<Value> {
    match text {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    if let Some(n) = parse_integer_strict(text) {
        return Some(n);
    }
    if is_json_number(text) {
        return text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number);
    }
    None
}

fn parse_bool(t: &str) -> Option<bool> {
    if t.eq_ignore_ascii_case("true") {
        Some(true)
    } else if t.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// An integer, also from `10.0` or `1e3` when the value is integral.
fn parse_integer(t: &str) -> Option<Value> {
    if let Some(v) = parse_integer_strict(t) {
        return Some(v);
    }
    if is_json_number(t) {
        return t.parse::<f64>().ok().and_then(integral);
    }
    None
}

/// Only the plain integer grammar: `-?(0|[1-9][0-9]*)`, within 64 bits.
fn parse_integer_strict(t: &str) -> Option<Value> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    let plain = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits.len() == 1 || !digits.starts_with('0'));
    if !plain {
        return None;
    }
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::from(i));
    }
    t.parse::<u64>().ok().map(Value::from)
}

fn parse_number(t: &str) -> Option<Value> {
    if let Some(v) = parse_integer_strict(t) {
        return Some(v);
    }
    if !is_json_number(t) {
        return None;
    }
    t.parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .map(Value::Number)
}

fn integral(f: f64) -> Option<Value> {
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15)
        .then(|| Value::from(f as i64))
}

/// The JSON number grammar: `-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`.
fn is_json_number(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_len = i - int_start;
    if int_len == 0 || (int_len > 1 && b[int_start] == b'0') {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
#[path = "coerce_tests.rs"]
mod tests;
