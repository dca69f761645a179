//! `budget:` in an agent file: one budget (`{per, tokens | usd, on_limit}`) or a list of
//! them, read into [`Budget`]s; and its JSON Schema for editors.

use toolgate_protocol::budget::{Budget, BudgetFile};

/// Reads `budget:` (absent: no limit).
pub fn read(value: Option<&serde_json::Value>) -> Result<Vec<Budget>, String> {
    let items = match value {
        None | Some(serde_json::Value::Null) => return Ok(Vec::new()),
        Some(serde_json::Value::Array(items)) => items.clone(),
        Some(one) => vec![one.clone()],
    };
    items
        .into_iter()
        .map(|v| serde_json::from_value::<Budget>(v).map_err(|e| e.to_string()))
        .collect()
}

/// `budget:`: one budget or a list.
pub(crate) fn file_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let one = generator.subschema_for::<BudgetFile>();
    schemars::json_schema!({"anyOf": [one, {"type": "array", "items": one}]})
}

#[cfg(test)]
mod tests {
    use super::read;
    use serde_json::json;
    use toolgate_protocol::budget::{Limit, OnLimit, Per};

    #[test]
    fn one_or_a_list() {
        let one = read(Some(&json!({"per": "run", "tokens": 100}))).unwrap_or_default();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].limit, Limit::Tokens(100));
        let two = read(Some(&json!([
            {"per": "conversation", "usd": 0.5, "on_limit": "fail"},
            {"per": "month", "tokens": 9}
        ])))
        .unwrap_or_default();
        assert_eq!(two[0].on_limit, OnLimit::Fail);
        assert_eq!(two[1].per, Per::Month);
        assert!(read(Some(&json!({"per": "week", "tokens": 1}))).is_err());
        assert!(read(Some(&json!({"per": "run"}))).is_err());
        assert!(read(None).unwrap_or_default().is_empty());
    }
}
