//! Rules on arguments: `deny_if`, `confirm_if`, `auto_if` (CEL expressions over `args`,
//! `tool`, `agent`, `user`, `tenant`) and `otherwise`, compiled once when the file loads
//! and evaluated for each call, always in that order. Evaluation is pure: no I/O.

use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value};

use crate::Permission;

/// The names an expression may use (besides a macro's own variable, as `x` in
/// `args.items.all(x, x < 10)`).
pub const VARIABLES: [&str; 5] = ["args", "tool", "agent", "user", "tenant"];

/// The keys of a rule set, in the order they are evaluated.
pub const KEYS: [&str; 4] = ["deny_if", "confirm_if", "auto_if", "otherwise"];

/// The CEL environment every rule is compiled and evaluated in: the standard library
/// and the string extensions.
static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib();
    // The strings extension only adds functions; should it ever refuse, the standard
    // library (startsWith, endsWith, contains, matches, size) is still there.
    let _ = env.add_extension(cel::extensions::strings);
    Arc::new(env)
});

/// One compiled expression and the text it came from.
#[derive(Clone)]
pub struct Rule {
    source: String,
    program: Arc<cel::Program>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Rule({:?})", self.source)
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Rule {
    /// Compiles `source`; refuses a syntax error and a name that is not one of
    /// [`VARIABLES`] (a misspelt `arg.amount` is caught here, not at the first call).
    ///
    /// ```
    /// use toolgate_tool::policy::Rule;
    /// assert!(Rule::compile("args.amount > 1000").is_ok());
    /// assert!(Rule::compile("args.amount >").is_err());
    /// assert!(Rule::compile("amount > 1000").unwrap_err().to_string().contains("'amount'"));
    /// ```
    pub fn compile(source: &str) -> Result<Rule, RuleError> {
        let program = ENV.compile(source).map_err(|e| {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            let first = first.strip_prefix("ERROR: <input>:").unwrap_or(first);
            RuleError::NotCel {
                expr: source.to_string(),
                first: first.to_string(),
            }
        })?;
        let compact: String = source.chars().filter(|c| !c.is_whitespace()).collect();
        let references = program.references();
        let mut unknown: Vec<&str> = references
            .variables()
            .into_iter()
            .filter(|v| !VARIABLES.contains(v) && !compact.contains(&format!("({v},")))
            .collect();
        unknown.sort_unstable();
        if let Some(name) = unknown.first() {
            return Err(RuleError::UnknownVariable {
                expr: source.to_string(),
                name: (*name).to_string(),
            });
        }
        Ok(Rule {
            source: source.to_string(),
            program: Arc::new(program),
        })
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// True, false, or why it could not say (an error, or a value that is not a bool).
    pub fn holds(&self, facts: &Facts<'_>) -> Result<bool, RuleError> {
        let mut context = cel::Context::with_env(Arc::clone(&ENV));
        let args = cel::to_value(facts.args).map_err(|e| RuleError::Failed(e.to_string()))?;
        context.add_variable_from_value("args", args);
        context.add_variable_from_value("tool", facts.tool.to_string());
        context.add_variable_from_value("agent", facts.agent.to_string());
        context.add_variable_from_value("user", facts.user.to_string());
        context.add_variable_from_value("tenant", facts.tenant.to_string());
        match self.program.execute(&context) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(RuleError::NotABool(format!("{other:?}"))),
            Err(e) => Err(RuleError::Failed(e.to_string())),
        }
    }
}

/// Why a rule does not compile, or could not say whether it holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The text is not a CEL expression (`first`: the first line of the parser's word).
    #[error("'{expr}' is not a CEL expression: {first}")]
    NotCel { expr: String, first: String },
    /// It uses a variable a call does not have.
    #[error("'{expr}' uses '{name}', which is not one of {}", VARIABLES.join(", "))]
    UnknownVariable { expr: String, name: String },
    /// Its value is not a bool (the value, debug-printed).
    #[error("it gave {0}, not true or false")]
    NotABool(String),
    /// Evaluating it failed.
    #[error("{0}")]
    Failed(String),
}

impl From<RuleError> for String {
    fn from(e: RuleError) -> String {
        e.to_string()
    }
}

/// What an expression sees of one call.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The arguments, validated (defaults filled in).
    pub args: &'a Map<String, Value>,
    pub tool: &'a str,
    pub agent: &'a str,
    /// Who the run is for, and their tenant; empty when the run names none.
    pub user: &'a str,
    pub tenant: &'a str,
}

/// A tool's rules: evaluated in the fixed order deny_if, confirm_if, auto_if, then
/// `otherwise` (the tool's permission word when absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    pub deny_if: Option<Rule>,
    pub confirm_if: Option<Rule>,
    pub auto_if: Option<Rule>,
    pub otherwise: Option<Permission>,
}

/// What the rules decided for one call, and which rule decided it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ruling {
    pub permission: Permission,
    /// `confirm_if: args.amount > 1000`, `otherwise: auto`, ...
    pub reason: String,
}

impl Rules {
    /// Reads a rule set: a map of [`KEYS`] (expressions, and a permission word for
    /// `otherwise`). An error names the key at fault.
    pub fn parse(map: &Map<String, Value>) -> Result<Rules, (String, String)> {
        let mut rules = Rules::default();
        for (key, value) in map {
            if key == "otherwise" {
                rules.otherwise = Some(serde_json::from_value(value.clone()).map_err(|_| {
                    (
                        key.clone(),
                        format!("otherwise: {value} is not auto, confirm or never"),
                    )
                })?);
                continue;
            }
            let slot = match key.as_str() {
                "deny_if" => &mut rules.deny_if,
                "confirm_if" => &mut rules.confirm_if,
                "auto_if" => &mut rules.auto_if,
                other => {
                    return Err((
                        other.to_string(),
                        format!("unknown rule '{other}' (use {})", KEYS.join(", ")),
                    ));
                }
            };
            let Value::String(source) = value else {
                return Err((
                    key.clone(),
                    format!("{key}: a rule is a CEL expression in a string, not {value}"),
                ));
            };
            *slot = Some(Rule::compile(source).map_err(|m| (key.clone(), format!("{key}: {m}")))?);
        }
        Ok(rules)
    }

    /// Decides for one call. A `deny_if` or `confirm_if` that cannot be evaluated (a
    /// missing argument, a wrong type) holds the call for a person, naming the rule and
    /// the error; an `auto_if` that cannot be evaluated does not apply.
    ///
    /// ```
    /// use toolgate_tool::policy::{Facts, Rule, Rules};
    /// use toolgate_tool::Permission;
    /// let rules = Rules {
    ///     confirm_if: Some(Rule::compile("args.amount > 1000").unwrap()),
    ///     otherwise: Some(Permission::Auto),
    ///     ..Rules::default()
    /// };
    /// let args = serde_json::json!({"amount": 5000});
    /// let facts = Facts { args: args.as_object().unwrap(), tool: "transfer", agent: "a", user: "", tenant: "" };
    /// let ruling = rules.decide(&facts, Permission::Auto);
    /// assert_eq!(ruling.permission, Permission::Confirm);
    /// assert_eq!(ruling.reason, "confirm_if: args.amount > 1000");
    /// ```
    pub fn decide(&self, facts: &Facts<'_>, fallback: Permission) -> Ruling {
        let checks = [
            ("deny_if", &self.deny_if, Permission::Never),
            ("confirm_if", &self.confirm_if, Permission::Confirm),
            ("auto_if", &self.auto_if, Permission::Auto),
        ];
        for (key, rule, permission) in checks {
            let Some(rule) = rule else { continue };
            match rule.holds(facts) {
                Ok(true) => {
                    return Ruling {
                        permission,
                        reason: format!("{key}: {}", rule.source),
                    };
                }
                Ok(false) => {}
                Err(e) if permission != Permission::Auto => {
                    return Ruling {
                        permission: Permission::Confirm,
                        reason: format!(
                            "{key}: {} could not be evaluated ({e}); a person decides",
                            rule.source
                        ),
                    };
                }
                Err(_) => {}
            }
        }
        let permission = self.otherwise.unwrap_or(fallback);
        Ruling {
            permission,
            reason: format!("otherwise: {}", word(permission)),
        }
    }

    /// The rules as one line of text, for a fingerprint of the policy.
    pub fn describe(&self) -> String {
        self.written()
            .iter()
            .map(|(key, text)| format!("{key}={text};"))
            .collect()
    }

    /// Each rule as written (`confirm_if` -> `args.amount > 1000`, `otherwise` -> its
    /// word), in the order they are evaluated.
    pub fn written(&self) -> Vec<(&'static str, String)> {
        let mut out: Vec<(&'static str, String)> = [
            ("deny_if", &self.deny_if),
            ("confirm_if", &self.confirm_if),
            ("auto_if", &self.auto_if),
        ]
        .into_iter()
        .filter_map(|(key, rule)| rule.as_ref().map(|r| (key, r.source.clone())))
        .collect();
        if let Some(p) = self.otherwise {
            out.push(("otherwise", word(p).to_string()));
        }
        out
    }
}

/// A permission as written in a file.
pub fn word(p: Permission) -> &'static str {
    match p {
        Permission::Auto => "auto",
        Permission::Confirm => "confirm",
        Permission::Never => "never",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn decide(rules: &Value, args: Value) -> Ruling {
        let rules = Rules::parse(rules.as_object().unwrap()).unwrap();
        let facts = Facts {
            args: args.as_object().unwrap(),
            tool: "transfer",
            agent: "finance",
            user: "",
            tenant: "",
        };
        rules.decide(&facts, Permission::Auto)
    }

    #[test]
    fn the_order_is_deny_confirm_auto_otherwise() {
        let rules = json!({
            "otherwise": "auto",
            "auto_if": "args.amount < 100",
            "confirm_if": "args.amount > 1000",
            "deny_if": "args.to.startsWith('ext:') && args.amount > 10000",
        });
        let r = decide(&rules, json!({"to": "ext:x", "amount": 20000}));
        assert_eq!(r.permission, Permission::Never);
        assert!(r.reason.starts_with("deny_if: "), "{r:?}");
        let r = decide(&rules, json!({"to": "int:x", "amount": 20000}));
        assert_eq!(r.reason, "confirm_if: args.amount > 1000");
        let r = decide(&rules, json!({"to": "int:x", "amount": 50}));
        assert_eq!(r.reason, "auto_if: args.amount < 100");
        let r = decide(&rules, json!({"to": "int:x", "amount": 500}));
        assert_eq!(
            (r.permission, r.reason.as_str()),
            (Permission::Auto, "otherwise: auto")
        );
    }

    #[test]
    fn numbers_compare_across_int_and_double() {
        let rules = json!({"confirm_if": "args.amount > 1000", "otherwise": "auto"});
        assert_eq!(
            decide(&rules, json!({"amount": 1500.5})).permission,
            Permission::Confirm
        );
        assert_eq!(
            decide(&rules, json!({"amount": 999.5})).permission,
            Permission::Auto
        );
    }

    #[test]
    fn a_rule_that_cannot_be_evaluated_holds_for_a_person() {
        let rules = json!({"deny_if": "args.to.startsWith('ext:')", "otherwise": "auto"});
        let r = decide(&rules, json!({"amount": 5}));
        assert_eq!(r.permission, Permission::Confirm);
        assert!(r.reason.contains("could not be evaluated"), "{r:?}");
        let rules = json!({"auto_if": "args.path.startsWith('drafts/')", "otherwise": "confirm"});
        assert_eq!(decide(&rules, json!({})).permission, Permission::Confirm);
    }

    #[test]
    fn bad_rules_are_refused_at_load() {
        let bad = |v: Value| Rules::parse(v.as_object().unwrap()).unwrap_err();
        assert_eq!(bad(json!({"deny_if": "args.x >"})).0, "deny_if");
        assert!(bad(json!({"confirm_if": "arg.x > 1"})).1.contains("'arg'"));
        assert_eq!(bad(json!({"confirm": "true"})).0, "confirm");
        assert!(bad(json!({"otherwise": "maybe"})).1.contains("otherwise"));
        assert!(bad(json!({"auto_if": 3})).1.contains("string"));
        // A macro's own variable is fine.
        Rules::parse(
            json!({"deny_if": "args.items.exists(x, x > 10)"})
                .as_object()
                .unwrap(),
        )
        .unwrap();
    }
}
