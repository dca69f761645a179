//! The tools compiled into toolgate, always in the library, by handler name.

mod calculator;
mod echo;
mod files;
mod http_request;
mod shell;
mod time;

use std::sync::Arc;

use serde_json::Value;

use super::runnable::Tool;
use super::spec::{Entry, Permission, ToolSpec};

/// The handler names, with the default spec of the tool of the same name.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        echo::spec(),
        calculator::spec(),
        time::spec(),
        http_request::spec(),
        files::read_spec(),
        files::list_spec(),
        files::write_spec(),
        shell::spec(),
    ]
}

/// The tool for `spec` whose entry names built-in `handler`.
pub fn handler(handler: &str, spec: ToolSpec) -> Option<Arc<dyn Tool>> {
    Some(match handler {
        "echo" => Arc::new(echo::Echo(spec)),
        "calculator" => Arc::new(calculator::Calculator(spec)),
        "current_time" => Arc::new(time::CurrentTime(spec)),
        "http_request" => Arc::new(http_request::HttpRequest(spec)),
        "read_file" => Arc::new(files::ReadFile(spec)),
        "list_dir" => Arc::new(files::ListDir(spec)),
        "write_file" => Arc::new(files::WriteFile(spec)),
        "shell" => Arc::new(shell::Shell(spec)),
        _ => return None,
    })
}

pub const HANDLERS: [&str; 8] = [
    "echo",
    "calculator",
    "current_time",
    "http_request",
    "read_file",
    "list_dir",
    "write_file",
    "shell",
];

/// A built-in spec: its entry names its own handler.
fn spec(name: &str, description: &str, permission: Permission, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
        permission,
        entry: Entry::Builtin {
            handler: name.to_string(),
        },
        category: None,
        timeout: None,
        tags: vec!["builtin".to_string()],
        version: None,
    }
}

/// A string argument the schema made sure of.
fn text_arg<'a>(args: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}
