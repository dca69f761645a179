//! OpenAPI 3.x and Swagger 2.0 documents as a tool source: an `openapi:` file in the
//! tools folder names a document (a path, or the document inline) and makes one tool
//! per operation, `NAME__operationId`, called over HTTP with the `http` entry's network
//! rule. A document itself in the tools folder is data for such a file, not a tool.

mod binding;
mod call;
mod config;
mod document;
mod operations;
mod source;

use std::path::Path;

use serde_json::Value;

pub use binding::{Auth, Binding, BodyBinding, BodyShape, Field, Location, Param};
pub use call::{ERROR_EXCERPT, OpenApiTool, request};
pub use document::{Document, RefError, Version};
pub use source::{NAME, OpenApiFiles};

use toolgate_tool::folder::{LoadError, ToolDef, line_of};
use toolgate_tool::schema::Schema;

/// What a YAML or JSON file in the tools folder is, as far as OpenAPI goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An `openapi:` file: a source of tools.
    Source,
    /// An OpenAPI or Swagger document (read through a source file).
    Document,
}

/// Whether `path` is an `openapi:` file or a document; `None` for anything else.
pub fn kind(text: &str) -> Option<Kind> {
    if !text.contains("openapi") && !text.contains("swagger") {
        return None;
    }
    let v = document::parse_text(text).ok()?;
    let obj = v.as_object()?;
    if obj.contains_key("paths") && (obj.contains_key("openapi") || obj.contains_key("swagger")) {
        return Some(Kind::Document);
    }
    match obj.get("openapi") {
        Some(Value::String(_) | Value::Object(_)) => Some(Kind::Source),
        _ => None,
    }
}

/// The tools of one `openapi:` file, and one error per problem: the file's own (then
/// there are no tools), or an operation that cannot be a tool (the others load).
pub fn load(path: &Path) -> (Vec<ToolDef>, Vec<LoadError>) {
    let fail = |line: Option<usize>, message: String| LoadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return (Vec::new(), vec![fail(None, format!("cannot read: {e}"))]),
    };
    let value = match document::parse_text(&text) {
        Ok(v) => v,
        Err(e) => return (Vec::new(), vec![fail(None, e)]),
    };
    let raw: config::RawSource = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            let m = e.to_string();
            let key = m.split('`').nth(1).unwrap_or_default().to_string();
            return (Vec::new(), vec![fail(line_of(&text, &[&key]), m)]);
        }
    };
    match tools(path, &text, &raw) {
        Ok(found) => found,
        Err(e) => (Vec::new(), vec![e]),
    }
}

fn tools(
    path: &Path,
    text: &str,
    raw: &config::RawSource,
) -> Result<(Vec<ToolDef>, Vec<LoadError>), LoadError> {
    let fail = |key: &str, message: String| LoadError {
        path: path.to_path_buf(),
        line: line_of(text, &[key]),
        message,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let doc = document::read(&raw.openapi, dir).map_err(|m| fail("openapi", m))?;
    let api = api_name(path, raw).map_err(|(key, m)| fail(key, m))?;
    let base_url = base_url_of(raw, &doc).map_err(|(key, m)| fail(key, m))?;
    toolgate_tool::net::AllowList::parse(&raw.allow_hosts)
        .map_err(|e| fail("allow_hosts", format!("allow_hosts: {e}")))?;
    if raw.timeout.is_some_and(|t| !(t > 0.0 && t.is_finite())) {
        return Err(fail(
            "timeout",
            "timeout must be a positive number of seconds".into(),
        ));
    }
    let doc_auth = config::DocAuth {
        api_key: api_key_scheme(&doc),
        oauth: oauth_scheme(&doc),
    };
    let (auth, credentials) =
        config::read_auth(raw.auth.as_ref(), doc_auth, &api).map_err(|m| fail("auth", m))?;
    let common = operations::Common {
        api: &api,
        base_url: &base_url,
        auth: &auth,
        credentials: &credentials,
        permission: raw.permission,
        permissions: &raw.permissions,
        allow_hosts: &raw.allow_hosts,
        timeout: raw.timeout,
        max_response: raw.max_response,
        headers: &raw.headers,
    };
    let retry = raw
        .retry
        .as_ref()
        .map(toolgate_tool::RetryPolicy::from_raw)
        .transpose()
        .map_err(|m| fail("retry", format!("retry: {m}")))?;
    let cache = toolgate_tool::cache::CachePolicy::read(raw.cache.as_ref())
        .map_err(|m| fail("cache", m))?;
    let mut found = operations::operations(&doc, &common);
    if let Some(op) = &raw.validate {
        let check = check_binding(&found, op).map_err(|m| fail("validate", m))?;
        for f in &mut found {
            if let Ok(spec) = &mut f.tool {
                with_check(spec, &check);
            }
        }
    }
    let mut defs = Vec::new();
    let mut errors = Vec::new();
    let wanted = |op: &str| {
        raw.operations
            .as_ref()
            .is_none_or(|l| l.iter().any(|w| w == op))
    };
    errors.extend(
        unknown_operations(raw, &found)
            .into_iter()
            .map(|(key, m)| fail(key, m)),
    );
    for f in found {
        if !wanted(&f.operation) {
            continue;
        }
        let compiled = f.tool.and_then(|spec| {
            Schema::compile_full(&spec.parameters)
                .map(|schema| (spec, schema))
                .map_err(|e| format!("its input schema does not compile: {e}"))
        });
        match compiled {
            Ok((spec, schema)) => {
                let runner: std::sync::Arc<dyn toolgate_tool::Tool> =
                    std::sync::Arc::new(OpenApiTool::new(spec.clone()));
                let mut def = ToolDef::new(spec, schema, path, NAME, Some(runner));
                def.policy.retry = retry.clone();
                // Only the operations that change nothing keep their results.
                def.policy.cache = cache.clone().filter(|_| def.spec.read_only);
                defs.push(def);
            }
            // Operations toolgate cannot call (file uploads, binary bodies) are left
            // out, and named only when the file asks for them.
            Err(why) if raw.operations.is_some() => errors.push(fail(
                "operations",
                format!("operation '{}': {why}", f.operation),
            )),
            Err(_) => {}
        }
    }
    Ok((defs, errors))
}

/// The binding of the operation `validate:` names: a safe one (GET, HEAD, OPTIONS)
/// that needs no argument but the API's credentials.
fn check_binding(found: &[operations::Found], op: &str) -> Result<Binding, String> {
    let spec = found
        .iter()
        .find(|f| f.operation == op)
        .ok_or_else(|| format!("validate: the document has no operation '{op}'"))?
        .tool
        .as_ref()
        .map_err(|why| format!("validate: operation '{op}': {why}"))?;
    let toolgate_tool::Entry::Source(b) = &spec.entry else {
        return Err(format!("validate: operation '{op}' is not an API call"));
    };
    let binding: Binding = b.decode().map_err(|e| e.to_string())?;
    let required = spec
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    if !matches!(binding.method.as_str(), "GET" | "HEAD" | "OPTIONS") || required {
        return Err(format!(
            "validate: operation '{op}' must be a GET, HEAD or OPTIONS that needs no argument (it checks the credentials and changes nothing)"
        ));
    }
    Ok(binding)
}

/// `spec`'s binding with `check` as its API's credential check.
fn with_check(spec: &mut toolgate_tool::ToolSpec, check: &Binding) {
    if let toolgate_tool::Entry::Source(b) = &mut spec.entry
        && let Ok(value) = serde_json::to_value(check)
    {
        b.binding.insert("check".into(), value);
    }
}

/// The API's name: the file's `name`, else the file's stem; letters, digits, `_` or
/// `-`. The error is the key at fault and the message.
fn api_name(path: &Path, raw: &config::RawSource) -> Result<String, (&'static str, String)> {
    let api = match &raw.name {
        Some(n) => n.trim().to_string(),
        None => path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("api")
            .to_string(),
    };
    if api.is_empty()
        || !api
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    {
        return Err((
            "name",
            format!("name '{api}' must be letters, digits, '_' or '-'"),
        ));
    }
    Ok(api)
}

/// The base URL: the file's `base_url` (http or https), else the document's own.
fn base_url_of(raw: &config::RawSource, doc: &Document) -> Result<String, (&'static str, String)> {
    match raw.base_url.as_deref().map(|u| u.trim_end_matches('/')) {
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => Ok(u.to_string()),
        Some(u) => Err((
            "base_url",
            format!("base_url '{u}' must start with http:// or https://"),
        )),
        None => doc.base_url().ok_or_else(|| {
            (
                "openapi",
                "the document names no absolute server URL: set base_url".into(),
            )
        }),
    }
}

/// The operations the file's `operations` and `permissions` name that the document
/// does not have: the key and the message for each.
fn unknown_operations(
    raw: &config::RawSource,
    found: &[operations::Found],
) -> Vec<(&'static str, String)> {
    let mut errors = Vec::new();
    for name in raw.operations.iter().flatten() {
        if !found.iter().any(|f| &f.operation == name) {
            errors.push((
                "operations",
                format!("operations: the document has no operation '{name}'"),
            ));
        }
    }
    for name in raw.permissions.keys() {
        if !found.iter().any(|f| &f.operation == name) {
            errors.push((
                "permissions",
                format!("permissions: the document has no operation '{name}'"),
            ));
        }
    }
    errors
}

/// The document's security schemes, by name.
fn schemes(doc: &Document) -> Option<&serde_json::Map<String, Value>> {
    match doc.version {
        Version::Swagger2 => doc.root.get("securityDefinitions"),
        Version::OpenApi3 => doc.root.pointer("/components/securitySchemes"),
    }?
    .as_object()
}

/// The document's first oauth2 scheme with an authorization-code flow (OpenAPI 3's
/// `flows.authorizationCode`, Swagger 2's `flow: accessCode`).
fn oauth_scheme(doc: &Document) -> Option<config::OAuthScheme> {
    schemes(doc)?.values().find_map(|s| {
        if s.get("type")?.as_str()? != "oauth2" {
            return None;
        }
        let flow = match doc.version {
            Version::OpenApi3 => s.pointer("/flows/authorizationCode")?,
            Version::Swagger2 if s.get("flow")?.as_str()? == "accessCode" => s,
            Version::Swagger2 => return None,
        };
        let text = |k: &str| flow.get(k).and_then(Value::as_str).map(str::to_string);
        Some(config::OAuthScheme {
            authorize_url: text("authorizationUrl"),
            token_url: text("tokenUrl"),
            scopes: flow
                .get("scopes")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        })
    })
}

/// The document's first apiKey security scheme: where the key goes and its name.
fn api_key_scheme(doc: &Document) -> Option<(String, String)> {
    let schemes = schemes(doc)?;
    schemes.values().find_map(|s| {
        (s.get("type")?.as_str()? == "apiKey").then(|| {
            Some((
                s.get("in")?.as_str()?.to_string(),
                s.get("name")?.as_str()?.to_string(),
            ))
        })?
    })
}
