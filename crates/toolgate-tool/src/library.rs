//! `ToolLibrary`, the global set of tools (those of every registered source, and tools
//! added by a program), each a `LoadedTool`: its spec, compiled schemas, origin and
//! runner. One agent's view of it is a `Toolkit` (toolkit.rs).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::folder::{LoadError, ToolDef, load_dir};
use super::output::{Part, ToolError, ToolOutput};
use super::runnable::{Tool, ToolContext};
use super::schema::Schema;
use super::source::Origin;
use super::source::Sources;
use super::spec::{Permission, ToolSpec};
use super::toolkit::{Toolkit, ToolkitError};
use toolgate_parse::Schemas;

/// A tool ready to use: its spec, compiled schema and what runs it (`None` for
/// definition-only tools).
pub struct LoadedTool {
    pub spec: ToolSpec,
    pub schema: Schema,
    /// The compiled [`ToolSpec::output`], checked against every output the tool returns.
    pub output: Option<Schema>,
    /// Where it came from.
    pub origin: Origin,
    runner: Option<Arc<dyn Tool>>,
    /// Whether its parameters mark anything secret (most tools: no, and then no call
    /// of it needs a look for secret values).
    secret: bool,
    /// Its tool file's rules, hooks and approval deadline.
    pub policy: crate::policy::Policy,
    /// Who decides its calls (`approvers:`, `four_eyes:` in its tool file).
    pub rule: toolgate_protocol::identity::DecisionRule,
}

impl std::fmt::Debug for LoadedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTool")
            .field("spec", &self.spec)
            .field("origin", &self.origin)
            .finish()
    }
}

impl LoadedTool {
    /// A tool of `origin` run by `runner` (`None`: definition only), with no rules of
    /// its own.
    pub fn new(
        spec: ToolSpec,
        schema: Schema,
        output: Option<Schema>,
        origin: Origin,
        runner: Option<Arc<dyn Tool>>,
    ) -> Self {
        Self {
            secret: crate::secrets::has_secrets(&spec.parameters),
            spec,
            schema,
            output,
            origin,
            runner,
            policy: Default::default(),
            rule: Default::default(),
        }
    }

    /// What runs its calls; `None` for a definition-only tool.
    pub(crate) fn runner(&self) -> Option<&Arc<dyn Tool>> {
        self.runner.as_ref()
    }

    /// The OAuth provider whose per-user token its calls carry ([`Tool::user_oauth`]).
    pub fn user_oauth(&self) -> Option<crate::oauth::OAuthProvider> {
        self.runner.as_ref()?.user_oauth()
    }

    pub fn definition_only(&self) -> bool {
        self.runner.is_none()
    }

    /// The same tool with its programs in `policy`'s sandbox; `None` for a tool that
    /// starts no program.
    pub fn with_sandbox(&self, policy: toolgate_sandbox::SandboxPolicy) -> Option<LoadedTool> {
        let runner = self.runner.as_ref()?.with_sandbox(policy.clone())?;
        Some(LoadedTool {
            spec: self.spec.with_sandbox(policy),
            schema: self.schema.clone(),
            output: self.output.clone(),
            origin: self.origin.clone(),
            runner: Some(runner),
            secret: self.secret,
            policy: self.policy.clone(),
            rule: self.rule.clone(),
        })
    }

    /// Validates arguments (coercing, filling defaults); every problem at once.
    pub fn check(&self, args: Map<String, Value>) -> Result<Map<String, Value>, ToolError> {
        self.schema
            .check(args)
            .map_err(|errors| ToolError::InvalidArguments {
                tool: self.spec.name.clone(),
                errors,
            })
    }

    /// The arguments with secret parameters hidden, for logs and records.
    pub fn redact(&self, args: &Map<String, Value>) -> Map<String, Value> {
        if !self.secret {
            return args.clone();
        }
        crate::secrets::mask_args(&self.spec.parameters, args)
    }

    /// Adds the secret values of `args` (those under a parameter marked secret) to `out`.
    pub fn secret_values(&self, args: &Map<String, Value>, out: &mut Vec<String>) {
        if self.secret {
            crate::secrets::secret_values(&self.spec.parameters, args, out);
        }
    }

    /// Checks an output against the declared output schema, if any. An output the tool
    /// marked as an error is passed on as it is. The value checked is the output's JSON
    /// part when it has exactly one, else its text, with each of `hidden` (the call's
    /// secret and credential values) shown as `[secret]`, so that a message about it
    /// never quotes one.
    pub fn check_output(
        &self,
        out: ToolOutput,
        hidden: &[String],
    ) -> Result<ToolOutput, ToolError> {
        let Some(schema) = &self.output else {
            return Ok(out);
        };
        if out.is_error {
            return Ok(out);
        }
        let mut json = out.parts.iter().filter_map(|p| match p {
            Part::Json { json } => Some(json),
            _ => None,
        });
        let mut value = match (json.next(), json.next()) {
            (Some(v), None) => v.clone(),
            _ => Value::String(out.to_text()),
        };
        mask_strings(&mut value, hidden);
        match schema.check_value_of(value) {
            Ok(_) => Ok(out),
            Err(errors) => Err(ToolError::Execution(format!(
                "'{}' returned an output that does not match its declared output schema: {}",
                self.spec.name,
                errors
                    .iter()
                    .map(|e| if e.param.is_empty() {
                        e.message.clone()
                    } else {
                        e.to_string()
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            ))),
        }
    }

    /// Validates and runs one call within the tool's timeout; a panic becomes an error.
    /// The tool runs inside the caller's task, not on one of its own: spawning it cost a
    /// hand-off between threads per call (a wake of another worker and one back), more
    /// than the whole call of a quick tool. Dropping the call (cancelled, timed out)
    /// drops the tool's future at once, which stops its programs.
    pub async fn invoke(
        &self,
        ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        use futures_util::FutureExt;
        let mut args = self.check(args)?;
        // Credentials join after the check: the model's schema does not list them.
        for (k, v) in &ctx.injected {
            args.insert(k.clone(), v.clone());
        }
        let Some(runner) = self.runner.as_ref() else {
            return Err(ToolError::ClientSide(self.spec.name.clone()));
        };
        // The call's secret values: never quoted by an output check nor a streamed part.
        let mut hidden = Vec::new();
        if self.output.is_some() || ctx.streams() {
            self.secret_values(&args, &mut hidden);
            hidden.extend(
                ctx.injected
                    .values()
                    .filter_map(|v| v.as_str().map(String::from)),
            );
        }
        let masked;
        let ctx = if hidden.is_empty() {
            ctx
        } else {
            masked = ctx.clone().with_masks(hidden.clone());
            &masked
        };
        // A server started at the first call starts before the call's time counts.
        if let Some(ready) = runner.ready(ctx) {
            ready.await?;
        }
        let timeout = self
            .spec
            .timeout
            .map_or(ctx.default_timeout, std::time::Duration::from_secs_f64);
        let mut call =
            std::pin::pin!(std::panic::AssertUnwindSafe(runner.call(ctx, args)).catch_unwind());
        // A tool done at its first poll (most built-ins) needs no timer: registering
        // one and taking it down again costs more than such a call.
        let ended = match futures_util::poll!(call.as_mut()) {
            std::task::Poll::Ready(ended) => Ok(ended),
            std::task::Poll::Pending => tokio::time::timeout(timeout, call).await,
        };
        match ended {
            Ok(Ok(result)) => result.and_then(|out| self.check_output(out, &hidden)),
            Ok(Err(payload)) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_string());
                Err(ToolError::Panicked(message))
            }
            // The tool's future is dropped by now: its programs are stopped.
            Err(_) => Err(ToolError::Timeout(timeout)),
        }
    }
}

/// `v` with each of `hidden` in its strings shown as `[secret]`.
fn mask_strings(v: &mut Value, hidden: &[String]) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(m) = crate::secrets::mask_values(s, hidden) {
                *s = m;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mask_strings(x, hidden)),
        Value::Object(o) => o.values_mut().for_each(|x| mask_strings(x, hidden)),
        _ => {}
    }
}

/// Every tool toolgate knows.
#[derive(Default)]
pub struct ToolLibrary {
    tools: BTreeMap<String, Arc<LoadedTool>>,
    errors: Vec<LoadError>,
    watched: Vec<PathBuf>,
}

impl ToolLibrary {
    /// The built-in tools only: what `sources` bring with no file.
    pub fn builtin(sources: &Sources) -> Self {
        let mut lib = Self::default();
        for source in sources.iter() {
            for tool in source.fixed() {
                lib.tools.insert(tool.spec.name.clone(), Arc::new(tool));
            }
        }
        lib
    }

    /// The built-ins plus the tools of `dir`, read by `sources`. A file
    /// that cannot be used is in [`ToolLibrary::errors`] and does not stop the others.
    /// A file may redefine a built-in of the same name.
    pub fn load(dir: &Path, sources: &Sources) -> Result<Self, LoadError> {
        // No tool's sandbox shows the tools folder, even inside a workspace.
        toolgate_sandbox::protect(dir);
        let mut lib = Self::builtin(sources);
        let loaded = load_dir(dir, sources)?;
        lib.errors = loaded.errors;
        lib.watched = loaded.watched;
        for def in loaded.tools {
            lib.add_def(def);
        }
        lib.drop_broken_workflows();
        Ok(lib)
    }

    /// Takes out each workflow whose steps call a tool the library does not have (or the
    /// workflow itself), with a load error that names the step.
    fn drop_broken_workflows(&mut self) {
        let broken: Vec<(String, LoadError)> =
            self.tools
                .values()
                .filter_map(|t| {
                    let crate::Entry::Workflow(w) = &t.spec.entry else {
                        return None;
                    };
                    let (i, step) = w.steps.iter().enumerate().find(|(_, s)| {
                        s.tool == t.spec.name || !self.tools.contains_key(&s.tool)
                    })?;
                    let why = if step.tool == t.spec.name {
                        "calls the workflow itself".to_string()
                    } else {
                        format!(
                            "calls '{}', which is not a tool of this folder nor a built-in",
                            step.tool
                        )
                    };
                    let error = LoadError {
                        path: t.origin.file.clone().unwrap_or_default(),
                        line: None,
                        message: format!("workflow '{}': step {} {why}", t.spec.name, i + 1),
                    };
                    Some((t.spec.name.clone(), error))
                })
                .collect();
        for (name, error) in broken {
            self.tools.remove(&name);
            self.errors.push(error);
        }
    }

    fn add_def(&mut self, def: ToolDef) {
        let origin = Origin {
            source: def.source,
            file: Some(def.path),
        };
        let mut tool = LoadedTool::new(def.spec, def.schema, def.output, origin, def.runner);
        tool.policy = def.policy;
        tool.rule = def.rule;
        self.tools.insert(tool.spec.name.clone(), Arc::new(tool));
    }

    /// Files outside the tools folder that its tools were read from.
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }

    /// Adds a tool implemented by the program itself.
    pub fn add(&mut self, tool: Arc<dyn Tool>) -> Result<(), AddToolError> {
        let spec = tool.spec().clone();
        let schema =
            Schema::compile(&spec.parameters).map_err(|source| AddToolError::Parameters {
                tool: spec.name.clone(),
                source,
            })?;
        let output = match &spec.output {
            None => None,
            Some(v) => Some(Schema::compile(v).map_err(|source| AddToolError::Output {
                tool: spec.name.clone(),
                source,
            })?),
        };
        let loaded = LoadedTool::new(spec, schema, output, Origin::PROGRAM, Some(tool));
        self.tools
            .insert(loaded.spec.name.clone(), Arc::new(loaded));
        Ok(())
    }

    /// This library plus `tools` (a tool of the same name is replaced), for one agent's
    /// own additions such as its sub-agents.
    pub fn extended(&self, tools: Vec<Arc<dyn Tool>>) -> Result<ToolLibrary, AddToolError> {
        let mut lib = ToolLibrary {
            tools: self.tools.clone(),
            errors: self.errors.clone(),
            watched: self.watched.clone(),
        };
        for tool in tools {
            lib.add(tool)?;
        }
        Ok(lib)
    }

    /// Adds a tool already loaded (kept from an earlier load of the same folder).
    pub(crate) fn insert(&mut self, tool: Arc<LoadedTool>) {
        self.tools.insert(tool.spec.name.clone(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<LoadedTool>> {
        self.tools.get(name)
    }

    /// The tools in name order.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<LoadedTool>> {
        self.tools.values()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// Files that could not be loaded.
    pub fn errors(&self) -> &[LoadError] {
        &self.errors
    }

    /// Name -> parameter schema of every tool, for the parser.
    pub fn schemas(&self) -> Schemas {
        self.tools
            .iter()
            .map(|(k, t)| (k.clone(), t.schema.coercion_schema().clone()))
            .collect()
    }

    /// One agent's view: `names` (each must exist) with permission `overrides`.
    pub fn toolkit(
        self: &Arc<Self>,
        names: &[String],
        overrides: HashMap<String, Permission>,
    ) -> Result<Toolkit, ToolkitError> {
        let missing: Vec<&str> = names
            .iter()
            .filter(|n| !self.tools.contains_key(*n))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(ToolkitError::UnknownTools(format!(
                "unknown tool(s): {}; the library has: {}",
                missing.join(", "),
                self.names().join(", ")
            )));
        }
        if let Some(bad) = overrides.keys().find(|k| !names.contains(k)) {
            return Err(ToolkitError::StrayPermission(format!(
                "a permission is given for '{bad}', which is not in the tool list"
            )));
        }
        Ok(Toolkit::new(Arc::clone(self), names.to_vec(), overrides))
    }
}

/// Why a tool the program implements cannot be added to a library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddToolError {
    /// Its parameters schema does not compile.
    #[error("{tool}: parameters: {source}")]
    Parameters {
        tool: String,
        source: crate::SchemaError,
    },
    /// Its output schema does not compile.
    #[error("{tool}: output: {source}")]
    Output {
        tool: String,
        source: crate::SchemaError,
    },
}

impl From<AddToolError> for String {
    fn from(e: AddToolError) -> String {
        e.to_string()
    }
}
