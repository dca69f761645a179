//! The tools compiled into toolgate, always in the library, by handler name.

mod calculator;
mod echo;
mod files;
mod http_request;
mod shell;
mod time;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use toolgate_tool::source::{Origin, ToolSource};
use toolgate_tool::{
    Entry, LoadedTool, Permission, Schema, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// The source's name in its tools' origin.
pub const NAME: &str = "built-in";

/// The built-in tools: in every library, with no file.
pub struct Builtins;

impl ToolSource for Builtins {
    fn name(&self) -> &'static str {
        NAME
    }

    fn fixed(&self) -> Vec<LoadedTool> {
        let origin = Origin {
            source: NAME,
            file: None,
        };
        specs()
            .into_iter()
            .filter_map(|spec| {
                // Built-in schemas are written in this crate and compile.
                let schema = Schema::compile(&spec.parameters).ok()?;
                let Entry::Builtin { handler: name } = &spec.entry else {
                    return None;
                };
                let runner = handler(name, spec.clone())?;
                Some(LoadedTool::new(
                    spec,
                    schema,
                    None,
                    origin.clone(),
                    Some(runner),
                ))
            })
            .collect()
    }
}

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
        crate::web::fetch::spec(),
        crate::web::search::spec(),
    ]
}

/// What a handler returns: its call's future.
pub type Handled<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A built-in handler.
type Handler = for<'a> fn(&'a ToolContext, Map<String, Value>) -> Handled<'a>;

/// A built-in tool: a spec and the function that runs it.
struct Builtin {
    spec: ToolSpec,
    handler: Handler,
}

#[async_trait]
impl Tool for Builtin {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        (self.handler)(ctx, args).await
    }
}

/// The tool for `spec` whose entry names built-in `handler`.
pub fn handler(handler: &str, spec: ToolSpec) -> Option<Arc<dyn Tool>> {
    let handler: Handler = match handler {
        "echo" => echo::echo,
        "calculator" => calculator::calculator,
        "current_time" => time::current_time,
        "http_request" => http_request::http_request,
        "read_file" => files::read_file,
        "list_dir" => files::list_dir,
        "write_file" => files::write_file,
        "shell" => return Some(Arc::new(shell::Shell { spec })),
        "web_fetch" => crate::web::fetch::web_fetch,
        "web_search" => crate::web::search::web_search,
        _ => return None,
    };
    Some(Arc::new(Builtin { spec, handler }))
}

pub const HANDLERS: [&str; 10] = [
    "echo",
    "calculator",
    "current_time",
    "http_request",
    "read_file",
    "list_dir",
    "write_file",
    "shell",
    "web_fetch",
    "web_search",
];

/// A built-in spec: its entry names its own handler.
pub(crate) fn spec(
    name: &str,
    description: &str,
    permission: Permission,
    parameters: Value,
) -> ToolSpec {
    ToolSpec {
        tags: vec!["builtin".to_string()],
        ..ToolSpec::new(name, description, permission, parameters)
    }
}

/// A string argument the schema made sure of.
pub(crate) fn text_arg<'a>(args: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}
