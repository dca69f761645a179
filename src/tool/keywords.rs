//! The JSON Schema keywords toolgate's validator checks, the annotations it accepts
//! without checking, the ones it refuses, and the nearest known keyword to a misspelt one.

/// Keywords the validator enforces on every call.
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
/// extensions and are annotations too.
pub const ANNOTATIONS: [&str; 10] = [
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
];

/// JSON Schema keywords the validator cannot check: a schema using one is refused
/// rather than half enforced.
const UNSUPPORTED: [&str; 24] = [
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
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Why `key` cannot appear in a schema, or `None` when it may.
pub fn refusal(key: &str) -> Option<String> {
    if CHECKED.contains(&key) || ANNOTATIONS.contains(&key) || key.starts_with("x-") {
        return None;
    }
    if UNSUPPORTED.contains(&key) {
        return Some(format!(
            "{key}: toolgate's validator does not check this keyword, so a schema using it \
             is refused rather than half enforced"
        ));
    }
    if key == "nullable" {
        return Some(
            "nullable: not a JSON Schema keyword; write type: [T, \"null\"] (the list form \
             of parameters takes nullable: true)"
                .to_string(),
        );
    }
    Some(match nearest(key) {
        Some(known) => format!("{key}: unknown keyword (did you mean {known}?)"),
        None => format!(
            "{key}: unknown keyword (checked: {}; annotations: {}, x-…)",
            CHECKED.join(", "),
            ANNOTATIONS.join(", ")
        ),
    })
}

/// The known keyword closest to `key` (case, `_` and a few typos apart), if any is close.
pub fn nearest(key: &str) -> Option<&'static str> {
    let folded = fold(key);
    CHECKED
        .iter()
        .chain(ANNOTATIONS.iter())
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
    }
}
