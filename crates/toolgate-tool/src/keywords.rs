//! The JSON Schema keywords toolgate knows: the ones its fast validator checks, the
//! annotations it accepts without checking, the ones only the full validator checks
//! (`anyOf`, `$ref`, ...), and the nearest known keyword to a misspelt one.

/// Keywords the fast validator enforces on every call.
pub const CHECKED: [&str; 22] = [
    "type",
    "enum",
    "const",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "default",
    "secret",
];

/// Keywords accepted as annotations: they describe a value and check nothing (`format`
/// included: `format: email` is shown to the model, not checked). `x-` keys are vendor
/// extensions and are annotations too; so is OpenAPI's `discriminator`, which Pydantic
/// writes beside a `oneOf` (the `oneOf` does the checking).
pub const ANNOTATIONS: [&str; 14] = [
    "description",
    "title",
    "examples",
    "format",
    "$schema",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$id",
    "$vocabulary",
    "contentEncoding",
    "contentMediaType",
    "discriminator",
];

/// JSON Schema keywords the fast validator cannot check: a schema using one is checked
/// by the full validator (the `jsonschema` crate) instead, never half enforced.
pub const FULL_ONLY: [&str; 28] = [
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "definitions",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];

/// What a key in a schema is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keyword {
    /// Checked by the fast validator.
    Checked,
    /// Describes, checks nothing.
    Annotation,
    /// Checked by the full validator only.
    FullOnly,
    /// Not a keyword toolgate knows: why, with the nearest known one when there is one.
    Unknown(String),
}

/// What `key` is in a schema.
pub fn keyword(key: &str) -> Keyword {
    if CHECKED.contains(&key) {
        return Keyword::Checked;
    }
    if ANNOTATIONS.contains(&key) || key.starts_with("x-") {
        return Keyword::Annotation;
    }
    if FULL_ONLY.contains(&key) {
        return Keyword::FullOnly;
    }
    if key == "nullable" {
        return Keyword::Unknown(
            "nullable: not a JSON Schema keyword; write type: [T, \"null\"] (the list form \
             of parameters takes nullable: true)"
                .to_string(),
        );
    }
    Keyword::Unknown(match nearest(key) {
        Some(known) => format!("{key}: unknown keyword (did you mean {known}?)"),
        None => format!(
            "{key}: unknown keyword (not JSON Schema's; a key of your own may start with x-)"
        ),
    })
}

/// Why `key` cannot appear in a schema the fast validator checks alone, or `None`
/// when it may.
pub fn refusal(key: &str) -> Option<String> {
    match keyword(key) {
        Keyword::Checked | Keyword::Annotation => None,
        Keyword::FullOnly => Some(format!(
            "{key}: toolgate's fast validator does not check this keyword (the full \
             validator does, for tool files and MCP tools)"
        )),
        Keyword::Unknown(why) => Some(why),
    }
}

/// The known keyword closest to `key` (case, `_` and a few typos apart), if any is close.
pub fn nearest(key: &str) -> Option<&'static str> {
    let folded = fold(key);
    CHECKED
        .iter()
        .chain(ANNOTATIONS.iter())
        .chain(FULL_ONLY.iter())
        .map(|k| (distance(&folded, &fold(k)), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Levenshtein distance between two short strings.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn typos_find_their_keyword() {
        assert_eq!(nearest("minimun"), Some("minimum"));
        assert_eq!(nearest("min_items"), Some("minItems"));
        assert_eq!(nearest("maxlength"), Some("maxLength"));
        assert_eq!(nearest("requried"), Some("required"));
        assert_eq!(nearest("colour"), None);
        assert!(refusal("description").is_none());
        assert!(refusal("x-order").is_none());
        assert!(refusal("anyOf").unwrap().contains("does not check"));
        assert_eq!(keyword("oneOf"), Keyword::FullOnly);
        assert_eq!(keyword("discriminator"), Keyword::Annotation);
        assert_eq!(nearest("anyof"), Some("anyOf"));
        assert!(matches!(keyword("nullable"), Keyword::Unknown(m) if m.contains("[T, \"null\"]")));
    }
}
