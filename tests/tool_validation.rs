//! Argument validation as a table: schema x input -> coerced arguments, or the exact
//! errors a model would read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use toolgate::tool::Schema;

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
    // A wrong part inside is named at its own path, not as the whole object or list.
    assert_eq!(
        check(
            schema.clone(),
            json!({"when": {"hour": "noon"}, "slots": [{"n": 1}, {"n": "two"}]})
        )
        .unwrap_err(),
        vec![
            "'when.hour': must be integer, got text \"noon\"",
            "'slots[1].n': must be integer, got text \"two\"",
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
        // Every keyword is checked, an annotation, or refused: never silently ignored.
        (
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimun": 1}}}),
            "n: minimun: unknown keyword (did you mean minimum?)",
        ),
        (
            json!({"type": "object", "properties": {"t": {"type": "array", "min_items": 2}}}),
            "t: min_items: unknown keyword (did you mean minItems?)",
        ),
        (
            json!({"type": "object", "maxProperties": 2, "propertys": {}}),
            "propertys: unknown keyword (did you mean properties?)",
        ),
        (
            json!({"type": "object", "properties": {"v": {"oneOf": [{"type": "string"}]}}}),
            "v: oneOf: toolgate's fast validator does not check this keyword",
        ),
        (
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string", "colour": "red"}}}}),
            "l[]: colour: unknown keyword",
        ),
        (
            json!({"type": "object", "properties": {"v": {"type": "string", "nullable": true}}}),
            "v: nullable: not a JSON Schema keyword",
        ),
        (
            json!({"type": "object", "properties": {"x": {"type": ["string", "text"]}}}),
            "x: unknown type",
        ),
        (
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}}}),
            "n: minimum 5 is above maximum 1",
        ),
        (
            json!({"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0}}}),
            "n: multipleOf must be more than 0",
        ),
        (
            json!({"type": "object", "properties": {"c": {"type": "string", "enum": ["a", "b"], "default": "c"}}}),
            "c: the default \"c\" does not pass its own schema: must be one of \"a\", \"b\", got text \"c\"",
        ),
        (
            json!({"type": "object", "properties": {"s": {"type": "string", "secret": "yes"}}}),
            "s: secret must be true or false",
        ),
    ] {
        let err = Schema::compile(&schema).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
}

#[test]
fn secrets_are_redacted() {
    let schema = Schema::compile(&json!({"type": "object", "properties": {
        "user": {"type": "string"}, "password": {"type": "string", "secret": true}}}))
    .unwrap();
    assert_eq!(schema.secret_params(), vec!["password"]);
    let args = obj(json!({"user": "ann", "password": "hunter2"}));
    let shown = toolgate::secrets::mask_args(schema.raw(), &args);
    assert_eq!(
        Value::Object(shown),
        json!({"user": "ann", "password": "[secret]"})
    );
}

#[test]
fn the_rest_of_the_checked_keywords() {
    let schema = json!({"type": "object", "properties": {
        "version": {"const": 2},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "step": {"type": "number", "multipleOf": 0.1},
        "ids": {"type": "array", "uniqueItems": true},
        "meta": {"type": "object", "minProperties": 1, "maxProperties": 2}
    }, "maxProperties": 4});
    let ok = json!({"version": 2, "ratio": 0.5, "step": 0.3, "ids": [1, 2]});
    assert_eq!(check(schema.clone(), ok.clone()).unwrap(), ok);
    assert_eq!(
        check(
            schema.clone(),
            json!({"version": 3, "ratio": 1, "step": 0.25, "ids": [1, 1], "meta": {}})
        )
        .unwrap_err(),
        vec![
            "'version': must be 2, got number 3",
            "'ratio': must be less than 1, got 1",
            "'step': must be a multiple of 0.1, got 0.25",
            "'ids': must not repeat an item, but item 1 repeats number 1",
            "'meta': must have at least 1 fields, got 0",
            "must have at most 4 fields, got 5",
        ]
    );
    assert_eq!(
        check(schema, json!({"ratio": 0})).unwrap_err(),
        vec!["'ratio': must be more than 0, got 0"]
    );
}

#[test]
fn annotations_check_nothing() {
    let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "c", "title": "T", "description": "D", "type": "object", "properties": {
        "mail": {"type": "string", "format": "email", "examples": ["a@b.c"], "deprecated": true,
                 "readOnly": false, "writeOnly": false, "x-ui": {"widget": "email"}}}});
    assert_eq!(
        check(schema, json!({"mail": "not an address"})).unwrap(),
        json!({"mail": "not an address"})
    );
}
