//! Dify tool providers and tool files as a tool source, read as Dify writes them: a
//! provider folder (plugin layout) or a provider YAML dropped into the tools folder
//! brings its tools as `PROVIDER__TOOL`; a lone tool YAML brings one tool. Each runs
//! its Python class through toolgate's adapter, with no Dify installed.

mod files;
mod messages;
mod params;
mod run;
mod source;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use params::env_name;
pub use run::{ADAPTER, Binding, DifyTool};
pub use source::{DifyFiles, NAME};

use files::{RawProvider, RawTool, english};
use toolgate_tool::display::Display;
use toolgate_tool::folder::{LoadError, ToolDef, line_of};
use toolgate_tool::schema::Schema;
use toolgate_tool::{Permission, SourceBinding, ToolSpec};

/// The Python that runs Dify plugins (default `python3`).
pub const PYTHON_ENV: &str = "TOOLGATE_PYTHON";

/// What a YAML file is, as far as Dify goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Provider,
    Tool,
}

fn read_value(path: &Path) -> Result<(String, Value), LoadError> {
    let fail = |line, message| LoadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| fail(None, format!("cannot read: {e}")))?;
    let value = serde_saphyr::from_str::<Value>(&text).map_err(|e| {
        fail(
            e.location().map(|l| l.line() as usize),
            toolgate_tool::folder::first_line(&e.to_string()),
        )
    })?;
    Ok((text, value))
}

/// Whether `path` is a Dify provider or tool YAML (a top-level `identity:` map).
pub fn kind(path: &Path) -> Option<Kind> {
    kind_in(path, &std::fs::read_to_string(path).ok()?)
}

/// [`kind`] for a file already read: `text` is its content.
pub fn kind_in(path: &Path, text: &str) -> Option<Kind> {
    if !matches!(path.extension()?.to_str()?, "yaml" | "yml") {
        return None;
    }
    if !text.contains("identity") {
        return None;
    }
    let v = serde_saphyr::from_str::<Value>(text).ok()?;
    let obj = v.as_object()?;
    if !obj.get("identity").is_some_and(Value::is_object) {
        return None;
    }
    if obj.contains_key("credentials_for_provider") || obj.contains_key("tools") {
        Some(Kind::Provider)
    } else {
        Some(Kind::Tool)
    }
}

/// The provider YAML of a folder: the one `manifest.yaml` names, else one under
/// `provider/`, else one beside the manifest.
pub fn provider_in(dir: &Path) -> Option<PathBuf> {
    if let Ok((_, manifest)) = read_value(&dir.join("manifest.yaml"))
        && let Some(p) = manifest.pointer("/plugins/tools/0").and_then(Value::as_str)
    {
        return Some(dir.join(p));
    }
    for d in [dir.join("provider"), dir.to_path_buf()] {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut yamls: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        yamls.sort();
        if let Some(p) = yamls.into_iter().find(|p| kind(p) == Some(Kind::Provider)) {
            return Some(p);
        }
    }
    None
}

/// The plugin's folder of a provider YAML: the folder above `provider/`, else its own.
fn plugin_root(provider: &Path) -> PathBuf {
    let dir = provider.parent().unwrap_or(Path::new("."));
    match (dir.file_name().and_then(|n| n.to_str()), dir.parent()) {
        (Some("provider"), Some(up)) => up.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// `rel` found from the plugin's folder, else beside `near`.
fn locate(root: &Path, near: &Path, rel: &str) -> PathBuf {
    let from_root = root.join(rel);
    if from_root.exists() {
        return from_root;
    }
    let beside = near.parent().unwrap_or(Path::new(".")).join(rel);
    if beside.exists() {
        return beside;
    }
    from_root
}

fn load_error(path: &Path, text: &str, e: serde_json::Error) -> LoadError {
    let m = e.to_string();
    let key = m.split('`').nth(1).unwrap_or_default().to_string();
    LoadError {
        path: path.to_path_buf(),
        line: line_of(text, &[&key]),
        message: m,
    }
}

/// The tools of a provider YAML; one error per file that cannot be used.
pub fn load_provider(path: &Path) -> (Vec<ToolDef>, Vec<LoadError>) {
    let (text, value) = match read_value(path) {
        Ok(v) => v,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let raw: RawProvider = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), vec![load_error(path, &text, e)]),
    };
    let provider = raw.identity.name.trim().to_string();
    let root = plugin_root(path);
    let credentials = match params::provider_credentials(&provider, &raw.credentials_for_provider) {
        Ok(c) => c,
        Err(m) => {
            return (
                Vec::new(),
                vec![LoadError {
                    path: path.to_path_buf(),
                    line: line_of(&text, &["credentials_for_provider"]),
                    message: m,
                }],
            );
        }
    };
    let tool_files: Vec<PathBuf> = match &raw.tools {
        Some(list) => list.iter().map(|t| locate(&root, path, t)).collect(),
        // Dify's built-in layout lists no tools: they are the YAMLs in tools/.
        None => {
            let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("tools"))
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| kind(p) == Some(Kind::Tool))
                .collect();
            found.sort();
            found
        }
    };
    let checker = raw
        .extra
        .python
        .as_ref()
        .map(|p| locate(&root, path, &p.source))
        .filter(|p| p.is_file())
        .map(|p| std::path::absolute(&p).unwrap_or(p));
    let mut defs = Vec::new();
    let mut errors = Vec::new();
    for file in tool_files {
        let shared = Shared {
            credentials: &credentials,
            checker: checker.as_deref(),
            icon: raw.identity._shown.get("icon"),
        };
        match tool_def(&file, &provider, &root, &shared) {
            Ok(def) => defs.push(def),
            Err(e) => errors.push(e),
        }
    }
    (defs, errors)
}

/// A lone tool YAML: a provider of its own (named after the tool), no credentials.
pub fn load_tool(path: &Path) -> (Vec<ToolDef>, Vec<LoadError>) {
    let root = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let provider = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("dify")
        .to_string();
    let shared = Shared {
        credentials: &Default::default(),
        checker: None,
        icon: None,
    };
    match tool_def(path, &provider, &root, &shared) {
        Ok(def) => (vec![def], Vec::new()),
        Err(e) => (Vec::new(), vec![e]),
    }
}

/// What a provider gives each of its tools.
struct Shared<'a> {
    credentials: &'a std::collections::BTreeMap<String, toolgate_tool::Credential>,
    /// The provider's Python file (its credential check).
    checker: Option<&'a Path>,
    /// The provider's icon, for a tool without its own.
    icon: Option<&'a Value>,
}

/// Label, icon and help of a tool YAML: `identity.label`, `identity.icon` (else the
/// provider's; a file in the plugin's `_assets/`), `description.human`. An icon that
/// cannot be shown (a URL, a missing file) is left out with a warning: plugins are
/// often copied without their assets.
fn display_of(
    raw: &RawTool,
    path: &Path,
    root: &Path,
    shared: &Shared,
) -> Result<Display, LoadError> {
    let help = raw.description.as_ref().and_then(|d| d.human.as_ref());
    let mut display = Display::read(raw.identity._shown.get("label"), None, help, &[]).map_err(
        |(key, message)| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            LoadError {
                path: path.to_path_buf(),
                line: line_of(&text, &[&key]),
                message,
            }
        },
    )?;
    let icon = raw.identity._shown.get("icon").or(shared.icon);
    if let Some(Value::String(icon)) = icon {
        let assets = root.join("_assets");
        let near = path.parent().unwrap_or(root);
        match toolgate_tool::display::read_icon(icon, &[&assets, root, near]) {
            Ok(icon) => display.icon = Some(icon),
            Err(e) => tracing::warn!(file = %path.display(), "icon left out: {e}"),
        }
    }
    Ok(display)
}

fn tool_def(
    path: &Path,
    provider: &str,
    root: &Path,
    shared: &Shared,
) -> Result<ToolDef, LoadError> {
    let provider_credentials = shared.credentials;
    let provider_source = shared.checker;
    let (text, value) = read_value(path)?;
    let fail = |keys: &[&str], message: String| LoadError {
        path: path.to_path_buf(),
        line: line_of(&text, keys),
        message,
    };
    let raw: RawTool = serde_json::from_value(value).map_err(|e| load_error(path, &text, e))?;
    let tool = raw.identity.name.trim().to_string();
    let split = params::split(provider, &tool, &raw.parameters)
        .map_err(|m| fail(&["parameters"], format!("parameters: {m}")))?;
    let mut credentials = provider_credentials.clone();
    for (k, c) in split.credentials {
        if credentials.contains_key(&k) {
            return Err(fail(
                &["parameters", &k],
                format!("parameters: '{k}' is also a credential of the provider"),
            ));
        }
        credentials.insert(k, c);
    }
    let source = match raw.extra.python.as_ref() {
        Some(p) => locate(root, path, &p.source),
        None => path.with_extension("py"),
    };
    if !source.is_file() {
        return Err(fail(
            &["extra", "source"],
            format!("the tool's Python file {} is not there", source.display()),
        ));
    }
    let display = display_of(&raw, path, root, shared)?;
    let description = raw
        .description
        .as_ref()
        .and_then(|d| d.llm.clone().or_else(|| english(&d.human)))
        .unwrap_or_default();
    let schema = Schema::compile_full(&split.schema)
        .map_err(|e| fail(&["parameters"], format!("parameters: {e}")))?;
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let binding = Binding {
        provider: provider.to_string(),
        tool: tool.clone(),
        source: std::path::absolute(&source).unwrap_or(source),
        root: std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf()),
        python: std::env::var(PYTHON_ENV).unwrap_or_else(|_| "python3".into()),
        provider_credentials: provider_credentials.keys().cloned().collect(),
        provider_source: provider_source.map(Path::to_path_buf),
        form_defaults: split.form_defaults,
    };
    let spec = ToolSpec {
        name: format!("{}__{}", clean(provider), clean(&tool)),
        description,
        parameters: split.schema,
        permission: Permission::Confirm,
        entry: SourceBinding::entry("dify", format!("dify:{}", binding.provider), &binding),
        category: Some("dify".into()),
        timeout: None,
        tags: Vec::new(),
        version: None,
        read_only: false,
        output: None,
        credentials,
        is_final: false,
        hidden: false,
        sandbox: Some(toolgate_sandbox::SandboxPolicy::default()),
        display,
    };
    let runner: std::sync::Arc<dyn toolgate_tool::Tool> =
        std::sync::Arc::new(DifyTool::new(spec.clone()));
    Ok(ToolDef::new(spec, schema, path, NAME, Some(runner)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn provider_and_tool_files_are_recognised() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("t.yaml");
        std::fs::write(
            &tool,
            "identity: {name: odd}\ndescription: {llm: Odd.}\nparameters: []\n",
        )
        .unwrap();
        let r = read_value(&tool);
        assert!(r.is_ok(), "{:?}", r.err());
        assert_eq!(kind(&tool), Some(Kind::Tool));
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/dify/weather");
        let provider = provider_in(&fixture).unwrap();
        assert!(provider.ends_with("provider/weather.yaml"));
        assert_eq!(kind(&provider), Some(Kind::Provider));
    }
}
