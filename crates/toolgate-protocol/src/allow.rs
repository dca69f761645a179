//! Allow-lists: the agents a caller may start and the tools its runs may call, by name.
//! A key (`keys create --agents a,b --tools x,y`), a JWT (`agents`, `tools` claims) and
//! a tenant (`serve --tenants FILE`) may each carry one; what a caller may use is the
//! intersection of its tenant's and its own. A list that is absent limits nothing; an
//! empty list allows nothing. A name ending in `*` stands for every name it begins
//! (`github__*`: every tool of the MCP server `github`).

use serde::{Deserialize, Serialize};

/// What a caller may start and call. `None` in a field: no limit on it.
///
/// ```
/// use toolgate_protocol::allow::Allow;
/// let key = Allow { agents: Some(vec!["a".into(), "b".into()]), tools: None };
/// let tenant = Allow { agents: Some(vec!["b".into(), "c".into()]), tools: Some(vec!["x*".into()]) };
/// let both = key.meet(&tenant);
/// assert!(both.agent("b") && !both.agent("a") && !both.agent("c"));
/// assert!(both.tool("xray") && !both.tool("y"));
/// assert!(Allow::default().tool("anything"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

impl Allow {
    /// No limit at all.
    pub fn is_open(&self) -> bool {
        self.agents.is_none() && self.tools.is_none()
    }

    /// Whether agent `name` may be started.
    pub fn agent(&self, name: &str) -> bool {
        admits(self.agents.as_deref(), name)
    }

    /// Whether tool `name` may be called.
    pub fn tool(&self, name: &str) -> bool {
        admits(self.tools.as_deref(), name)
    }

    /// What both allow: each list the names allowed by both (a name of one list kept
    /// when the other admits it, so `x*` met with `xy` is `xy`).
    pub fn meet(&self, other: &Allow) -> Allow {
        Allow {
            agents: meet(self.agents.as_deref(), other.agents.as_deref()),
            tools: meet(self.tools.as_deref(), other.tools.as_deref()),
        }
    }

    /// Reads a comma-separated list as given on a command line (`a,b`); blank names
    /// are dropped, so `""` is an empty list (nothing allowed).
    pub fn list(text: &str) -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// Whether `name` is in `list` (a pattern `p*` covers every name starting with `p`);
/// no list admits everything.
fn admits(list: Option<&[String]>, name: &str) -> bool {
    list.is_none_or(|l| l.iter().any(|p| matches(p, name)))
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

fn meet(a: Option<&[String]>, b: Option<&[String]>) -> Option<Vec<String>> {
    match (a, b) {
        (None, None) => None,
        (Some(l), None) | (None, Some(l)) => Some(l.to_vec()),
        (Some(a), Some(b)) => {
            let mut out: Vec<String> = Vec::new();
            for (mine, theirs) in [(a, b), (b, a)] {
                for p in mine {
                    // A pattern of one side is kept when the other side's list covers
                    // all it names; a plain name, when the other admits it.
                    let covered = match p.strip_suffix('*') {
                        Some(prefix) => theirs
                            .iter()
                            .any(|t| t.strip_suffix('*').is_some_and(|tp| prefix.starts_with(tp))),
                        None => admits(Some(theirs), p),
                    };
                    if covered && !out.contains(p) {
                        out.push(p.clone());
                    }
                }
            }
            Some(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(agents: Option<&[&str]>, tools: Option<&[&str]>) -> Allow {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Allow {
            agents: agents.map(v),
            tools: tools.map(v),
        }
    }

    #[test]
    fn the_intersection_holds_only_what_both_allow() {
        let key = allow(Some(&["a", "b"]), Some(&["x", "gh__*"]));
        let tenant = allow(Some(&["b", "c"]), Some(&["gh__issues", "x", "y"]));
        let both = key.meet(&tenant);
        assert_eq!(both.agents.as_deref(), Some(&["b".to_string()][..]));
        for (tool, ok) in [
            ("x", true),
            ("gh__issues", true),
            ("gh__push", false),
            ("y", false),
        ] {
            assert_eq!(both.tool(tool), ok, "{tool}");
        }
        // One side without a list leaves the other's.
        assert_eq!(key.meet(&Allow::default()), key);
        // Two patterns: the narrower stays.
        let wide = allow(None, Some(&["gh__*"]));
        let narrow = allow(None, Some(&["gh__issue*"]));
        assert!(wide.meet(&narrow).tool("gh__issues") && !wide.meet(&narrow).tool("gh__pr"));
    }

    #[test]
    fn an_empty_list_allows_nothing_and_no_list_everything() {
        let none = allow(Some(&[]), Some(&[]));
        assert!(!none.agent("a") && !none.tool("x"));
        assert!(Allow::default().agent("a") && Allow::default().is_open());
        assert_eq!(Allow::list(" a, ,b "), ["a", "b"]);
        assert!(Allow::list("").is_empty());
    }
}
