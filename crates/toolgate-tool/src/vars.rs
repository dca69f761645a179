//! Variables in tool files and MCP declarations, filled from toolgate's environment:
//! `${VAR}`, `${VAR:-default}` and `${env:VAR}` (Cursor's and VS Code's form).
//! `${input:ID}` (a value VS Code asks its user for) and any other `${kind:...}`
//! cannot be answered here and are refused, naming the variable.

/// `template` with its variables filled, or why one cannot be.
pub fn expand(template: &str) -> Result<String, VarError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        // `${VAR:-default}`: the default when VAR is not set.
        let (inner, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let name = match inner.split_once(':') {
            None => inner,
            Some(("env", name)) => name,
            Some(("input", id)) => {
                return Err(VarError::Input(id.to_string()));
            }
            Some((kind, _)) => {
                return Err(VarError::Kind {
                    inner: inner.to_string(),
                    kind: kind.to_string(),
                });
            }
        };
        let value = match (std::env::var(name), default) {
            (Ok(v), _) => v,
            (Err(_), Some(d)) => d.to_string(),
            (Err(_), None) => {
                return Err(VarError::Unset(name.to_string()));
            }
        };
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A variable that cannot be filled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    /// `${input:ID}`: a value an editor asks its user for.
    #[error(
        "${{input:{0}}} is a value the editor asks its user for, which toolgate cannot ask; put it in an environment variable and write ${{env:VAR}}"
    )]
    Input(String),
    /// `${kind:...}` of another kind (`inner`: what stands between the braces).
    #[error(
        "${{{inner}}}: '{kind}:' variables are not supported (${{VAR}}, ${{VAR:-default}} and ${{env:VAR}} are)"
    )]
    Kind { inner: String, kind: String },
    /// A variable that is not set and has no default.
    #[error("the environment variable {0} is not set")]
    Unset(String),
}

impl From<VarError> for String {
    fn from(e: VarError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_form_is_filled_or_refused_by_name() {
        // PATH is set wherever tests run; this name is set nowhere.
        let path = std::env::var("PATH").unwrap();
        let unset = "TOOLGATE_TEST_SURELY_UNSET_VARIABLE";
        assert_eq!(expand("a ${PATH} b").unwrap(), format!("a {path} b"));
        assert_eq!(expand("${env:PATH}").unwrap(), path);
        assert_eq!(expand(&format!("${{{unset}:-x y}}")).unwrap(), "x y");
        assert_eq!(expand(&format!("${{env:{unset}:-d}}")).unwrap(), "d");
        assert_eq!(expand("${PATH:-d}").unwrap(), path);
        assert!(
            expand(&format!("${{{unset}}}"))
                .unwrap_err()
                .to_string()
                .contains(unset)
        );
        assert!(
            expand("${input:token}")
                .unwrap_err()
                .to_string()
                .contains("input:token")
        );
        assert!(
            expand("${secret:x}")
                .unwrap_err()
                .to_string()
                .contains("'secret:'")
        );
        assert_eq!(expand("no ${ end").unwrap(), "no ${ end");
    }
}
