//! Argument validation as a table: schema x input -> coerced arguments, or the exact
//! errors a model would read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use toolgate::tool::{Schema, redact};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// Checks `input` against `schema`: `Ok` with the arguments after coercion and
/// defaults, or `Err` with the errors as `param: message` lines.
fn check(schema: Value, input: Value) -> Result<Value, Vec<String>> {
    let compiled = Schema::compile(&schema).unwrap();
    compiled
        .check(obj(input))
        .map(Value::Object)
        .map_err(|errs| errs.iter().map(ToString::to_string).collect())
}

/// A case: its name, the input, and the arguments or errors expected.
type Row = (&'static str, Value, Result<Value, Vec<&'static str>>);

#[test]
fn validation_table() {
    let search = json!({"type": "object", "properties": {
        "query": {"type": "string", "minLength": 2, "maxLength": 20},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "lang": {"type": "string", "enum": ["en", "fr"]},
        "url": {"type": "string", "pattern": "^https?://"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        "score": {"type": ["number", "null"]},
        "safe": {"type": "boolean", "default": true}
    }, "required": ["query"], "additionalProperties": false});

    let table: Vec<Row> = vec![
        (
            "defaults are filled",
            json!({"query": "rust"}),
            Ok(json!({"query": "rust", "max_results": 10, "safe": true})),
        ),
        (
            "text is coerced the parser's way",
            json!({"query": "rust", "max_results": "5", "safe": "false", "score": "0.5"}),
            Ok(json!({"query": "rust", "max_results": 5, "safe": false, "score": 0.5})),
        ),
        (
            "a number where a string is wanted becomes text",
            json!({"query": 42}),
            Ok(json!({"query": "42", "max_results": 10, "safe": true})),
        ),
        (
            "nullable accepts null",
            json!({"query": "ab", "score": null}),
            Ok(json!({"query": "ab", "score": null, "max_results": 10, "safe": true})),
        ),
        (
            "missing required",
            json!({}),
            Err(vec!["'query': is required (string) but was not given"]),
        ),
        (
            "every error at once",
            json!({"query": "x", "max_results": 80, "lang": "de", "url": "ftp://a", "tags": [], "extra": 1}),
            Err(vec![
                "'query': must be at least 2 characters long, got 1",
                "'max_results': must be at most 50, got 80",
                "'lang': must be one of \"en\", \"fr\", got text \"de\"",
                "'url': must match the pattern ^https?://, got text \"ftp://a\"",
                "'tags': must have at least 1 items, got 0",
                "'extra': is not a parameter of this tool; it takes: query, max_results, lang, url, tags, score, safe",
            ]),
        ),
        (
            "wrong types say what was expected",
            json!({"query": "ok", "max_results": "many", "safe": "maybe", "score": [1]}),
            Err(vec![
                "'max_results': must be integer, got text \"many\"",
                "'safe': must be boolean, got text \"maybe\"",
                "'score': must be number or null, got a list [1]",
            ]),
        ),
        (
            "array items are checked with their path",
            json!({"query": "ok", "tags": ["a", 7, "c", "d"]}),
            Err(vec!["'tags': must have at most 3 items, got 4"]),
        ),
        (
            "too long",
            json!({"query": "x".repeat(21)}),
            Err(vec!["'query': must be at most 20 characters long, got 21"]),
        ),
        (
            "minimum",
            json!({"query": "ok", "max_results": 0}),
            Err(vec!["'max_results': must be at least 1, got 0"]),
        ),
        (
            "integral float is an integer",
            json!({"query": "ok", "max_results": 3.0}),
            Ok(json!({"query": "ok", "max_results": 3, "safe": true})),
        ),
        (
            "fraction is not an integer",
            json!({"query": "ok", "max_results": 2.5}),
            Err(vec!["'max_results': must be integer, got number 2.5"]),
        ),
    ];
    let mut failures = Vec::new();
    for (name, input, want) in table {
        let got = check(search.clone(), input);
        let want = want.map_err(|v| v.into_iter().map(String::from).collect::<Vec<_>>());
        if got != want {
            failures.push(format!("{name}:\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn nested_objects_and_item_paths() {
    let schema = json!({"type": "object", "properties": {
        "when": {"type": "object", "properties": {"hour": {"type": "integer", "maximum": 23}}, "required": ["hour"]},
        "slots": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
    }});
    let errs = check(
        schema.clone(),
        json!({"when": {"hour": 25}, "slots": [{"n": 1}, {"m": 2}]}),
    )
    .unwrap_err();
    assert_eq!(
        errs,
        vec![
            "'when.hour': must be at most 23, got 25",
            "'slots[1].n': is required (integer) but was not given",
        ]
    );
    let ok = check(
        schema,
        json!({"when": {"hour": "7"}, "slots": [{"n": "3"}]}),
    )
    .unwrap();
    assert_eq!(ok, json!({"when": {"hour": 7}, "slots": [{"n": 3}]}));
}

#[test]
fn additional_properties_by_schema() {
    let schema =
        json!({"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}});
    assert_eq!(
        check(schema.clone(), json!({"a": "1"})).unwrap(),
        json!({"a": 1})
    );
    assert_eq!(
        check(schema, json!({"a": "x"})).unwrap_err(),
        vec!["'a': must be integer, got text \"x\""]
    );
    // Allowed by default: unknown parameters pass unchanged.
    let open = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert_eq!(check(open, json!({"b": [1]})).unwrap(), json!({"b": [1]}));
}

#[test]
fn bad_schemas_are_refused_at_compile_time() {
    for (schema, needle) in [
        (
            json!({"type": "object", "properties": {"u": {"type": "string", "pattern": "("}}}),
            "u: pattern \"(\" does not compile: unclosed group",
        ),
        (
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}}),
            "n: minimum must be a number",
        ),
        (
            json!({"type": "object", "properties": {"x": {"type": "strnig"}}}),
            "x: unknown type",
        ),
        (
            json!({"type": "object", "properties": {"a": {}}, "required": ["b"]}),
            "'b' is required but not among the properties",
        ),
        (
            json!({"type": "object", "properties": {"e": {"enum": []}}}),
            "e: enum must be a non-empty list",
        ),
    ] {
        let err = Schema::compile(&schema).unwrap_err();
        assert!(err.contains(needle), "{err}");
    }
}

#[test]
fn secrets_are_redacted() {
    let schema = Schema::compile(&json!({"type": "object", "properties": {
        "user": {"type": "string"}, "password": {"type": "string", "secret": true}}}))
    .unwrap();
    assert_eq!(schema.secret_params(), vec!["password"]);
    let args = obj(json!({"user": "ann", "password": "hunter2"}));
    let shown = redact(&args, &schema.secret_params());
    assert_eq!(
        Value::Object(shown),
        json!({"user": "ann", "password": "[secret]"})
    );
}
