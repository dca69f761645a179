//! Workflow tools (`entry: {type: workflow, steps, output}`): the steps a workflow calls
//! in order, and the templates (`{{ input.city }}`, `{{ forecast.days[0] }}`) that make
//! each step's arguments and the workflow's output from its input and the results
//! earlier steps saved (`save_as`). The runtime plays the steps, each through the gate;
//! this module only says what they are and renders their templates.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The name the workflow's own arguments go by in templates.
pub const INPUT: &str = "input";

/// A workflow: its steps, in order, and what it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// The calls it makes, in order; each runs once the one before succeeded.
    pub steps: Vec<Step>,
    /// What the workflow answers: a template over its input and the saved results
    /// (default: the last step's result as it came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// One call of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The tool it calls (from the same tools folder, or a built-in).
    pub tool: String,
    /// Its arguments: strings may hold `{{ input.NAME }}` or `{{ SAVED.PATH }}`; a string
    /// that is only one such template takes the value's own type.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The name later steps and the output read this step's result by (parsed as JSON
    /// when it is JSON, else text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_as: Option<String>,
}

/// A template that cannot be rendered, or a workflow that cannot be played.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

impl Workflow {
    /// Checks the workflow's form: at least one step, each `save_as` a new name (not
    /// `input`), and every template naming only the input or a result saved before it.
    pub fn check(&self) -> Result<(), String> {
        if self.steps.is_empty() {
            return Err("a workflow needs at least one step".into());
        }
        let mut known = vec![INPUT.to_string()];
        for (i, step) in self.steps.iter().enumerate() {
            let at = |m: String| format!("step {} ({}): {m}", i + 1, step.tool);
            if step.tool.trim().is_empty() {
                return Err(at("'tool' is empty".into()));
            }
            let args = Value::Object(step.arguments.clone());
            check_names(&args, &known).map_err(at)?;
            if let Some(name) = &step.save_as {
                if !is_name(name) || known.contains(name) {
                    return Err(at(format!(
                        "save_as '{name}' must be a new name of letters, digits and '_' (not 'input')"
                    )));
                }
                known.push(name.clone());
            }
        }
        if let Some(output) = &self.output {
            check_names(output, &known).map_err(|m| format!("output: {m}"))?;
        }
        Ok(())
    }

    /// The tools its steps call, each once, in order of first use.
    pub fn tools(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.steps {
            if !out.contains(&s.tool) {
                out.push(s.tool.clone());
            }
        }
        out
    }
}

/// What a step's result is saved as: its JSON when it is JSON, else its text (without
/// the whitespace around it).
pub fn saved_value(output: &str) -> Value {
    let output = output.trim();
    serde_json::from_str(output).unwrap_or_else(|_| Value::String(output.to_string()))
}

/// `template` with each `{{ path }}` replaced from `scope` (the input under `input`,
/// saved results under their names).
pub fn render(template: &Value, scope: &Map<String, Value>) -> Result<Value, TemplateError> {
    match template {
        Value::String(s) => render_text(s, scope),
        Value::Array(items) => items
            .iter()
            .map(|v| render(v, scope))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), render(v, scope)?)))
            .collect::<Result<_, _>>()
            .map(Value::Object),
        other => Ok(other.clone()),
    }
}

/// A value as text in a template: a string as it is, anything else as compact JSON.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn render_text(s: &str, scope: &Map<String, Value>) -> Result<Value, TemplateError> {
    let pieces = pieces(s)?;
    if let [Piece::Path(p)] = pieces.as_slice() {
        return lookup(p, scope).cloned();
    }
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Path(p) => out.push_str(&as_text(lookup(p, scope)?)),
        }
    }
    Ok(Value::String(out))
}

/// A template's parts: literal text and `{{ path }}` references.
enum Piece<'a> {
    Text(&'a str),
    Path(&'a str),
}

fn pieces(s: &str) -> Result<Vec<Piece<'_>>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| TemplateError(format!("'{s}': a '{{{{' is never closed")))?;
        let path = after[..close].trim();
        if path.is_empty() {
            return Err(TemplateError(format!("'{s}': an empty '{{{{ }}}}'")));
        }
        out.push(Piece::Path(path));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// One step of a path: a field or an index.
enum Seg<'a> {
    Field(&'a str),
    Index(usize),
}

/// `name.field[0].other` as its root and steps.
fn parse_path(path: &str) -> Result<(&str, Vec<Seg<'_>>), TemplateError> {
    let bad = || {
        TemplateError(format!(
            "'{{{{ {path} }}}}' is not a path like input.city or result.items[0].name"
        ))
    };
    let root_end = path.find(['.', '[']).unwrap_or(path.len());
    let root = &path[..root_end];
    if !is_name(root) {
        return Err(bad());
    }
    let mut segs = Vec::new();
    let mut rest = &path[root_end..];
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let field = &r[..end];
            if field.is_empty()
                || !field
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-".contains(c))
            {
                return Err(bad());
            }
            segs.push(Seg::Field(field));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or_else(bad)?;
            segs.push(Seg::Index(r[..end].trim().parse().map_err(|_| bad())?));
            rest = &r[end + 1..];
        } else {
            return Err(bad());
        }
    }
    Ok((root, segs))
}

fn lookup<'v>(path: &str, scope: &'v Map<String, Value>) -> Result<&'v Value, TemplateError> {
    let (root, segs) = parse_path(path)?;
    let mut at = scope.get(root).ok_or_else(|| {
        TemplateError(format!("'{{{{ {path} }}}}': nothing is saved as '{root}'"))
    })?;
    let mut walked = root.to_string();
    for seg in segs {
        let (next, step) = match (seg, at) {
            (Seg::Field(f), Value::Object(m)) => (m.get(f), format!(".{f}")),
            (Seg::Field(f), _) => (None, format!(".{f}")),
            (Seg::Index(i), Value::Array(a)) => (a.get(i), format!("[{i}]")),
            (Seg::Index(i), _) => (None, format!("[{i}]")),
        };
        at = next.ok_or_else(|| {
            TemplateError(format!(
                "'{{{{ {path} }}}}': {walked} has no {step} (it is {})",
                short(at)
            ))
        })?;
        walked.push_str(&step);
    }
    Ok(at)
}

/// A value, shortened for an error message.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(120) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Every template in `v` names a root in `known` and is a well-formed path.
fn check_names(v: &Value, known: &[String]) -> Result<(), String> {
    match v {
        Value::String(s) => {
            for piece in pieces(s).map_err(|e| e.0)? {
                if let Piece::Path(p) = piece {
                    let (root, _) = parse_path(p).map_err(|e| e.0)?;
                    if !known.iter().any(|k| k == root) {
                        return Err(format!(
                            "'{{{{ {p} }}}}' names '{root}', which is neither 'input' nor a result saved by an earlier step ({})",
                            known.join(", ")
                        ));
                    }
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|i| check_names(i, known)),
        Value::Object(m) => m.values().try_for_each(|i| check_names(i, known)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn scope() -> Map<String, Value> {
        json!({"input": {"city": "Oslo", "n": 3}, "forecast": {"days": [{"t": 4}, {"t": 6}]}, "note": "cold"})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[test]
    fn a_whole_template_keeps_its_type_and_a_mixed_one_is_text() {
        let out = render(
            &json!({"n": "{{ input.n }}", "s": "in {{input.city}}: {{ forecast.days[1].t }} C, {{note}}", "d": "{{ forecast.days }}", "k": 7}),
            &scope(),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"n": 3, "s": "in Oslo: 6 C, cold", "d": [{"t": 4}, {"t": 6}], "k": 7})
        );
    }

    #[test]
    fn a_missing_field_says_where_the_path_stopped() {
        let e = render(&json!("{{ forecast.days[5].t }}"), &scope()).unwrap_err();
        assert!(e.0.contains("forecast.days has no [5]"), "{e}");
        let e = render(&json!("{{ nothing }}"), &scope()).unwrap_err();
        assert!(e.0.contains("nothing is saved as 'nothing'"), "{e}");
        let e = render(&json!("{{ input.city"), &scope()).unwrap_err();
        assert!(e.0.contains("never closed"), "{e}");
    }

    #[test]
    fn check_refuses_a_name_saved_later_or_twice() {
        let wf: Workflow = serde_json::from_value(json!({
            "steps": [
                {"tool": "a", "arguments": {"x": "{{ later.y }}"}},
                {"tool": "b", "save_as": "later"}
            ]
        }))
        .unwrap();
        assert!(wf.check().unwrap_err().contains("step 1 (a)"));
        let wf: Workflow = serde_json::from_value(json!({
            "steps": [{"tool": "a", "save_as": "r"}, {"tool": "b", "save_as": "r"}]
        }))
        .unwrap();
        assert!(wf.check().unwrap_err().contains("save_as 'r'"));
        let wf: Workflow = serde_json::from_value(json!({
            "steps": [{"tool": "a", "save_as": "r"}, {"tool": "a", "arguments": {"q": "{{ r.x }}"}}],
            "output": "{{ r }} and {{ input.q }}"
        }))
        .unwrap();
        wf.check().unwrap();
        assert_eq!(wf.tools(), ["a"]);
    }

    #[test]
    fn a_result_is_saved_as_json_when_it_is_json() {
        assert_eq!(saved_value(" {\"a\": 1}\n"), json!({"a": 1}));
        assert_eq!(saved_value("plain text"), json!("plain text"));
    }
}
