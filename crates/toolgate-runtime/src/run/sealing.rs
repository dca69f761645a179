//! A run's secrets at its storage boundary: the loop holds clear values in memory;
//! what it saves (messages, state, edited arguments) has every secret value sealed, and
//! what it loads is opened again. Runs whose tools mark nothing secret skip all of it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Live, RunError, Runner};
use std::sync::Arc;
use toolgate_store::SecretScope;

use toolgate_parse::Schemas;
use toolgate_tool::Credential;
use toolgate_tool::secrets::{self, Keyring, SecretError};

impl From<SecretError> for RunError {
    fn from(e: SecretError) -> Self {
        RunError::Secret(e.to_string())
    }
}

/// Whether any tool of these schemas marks a parameter secret.
pub(crate) fn any_secret(schemas: &Schemas) -> bool {
    schemas.values().any(secrets::has_secrets)
}

/// Every secret value of the run's calls: those of its messages and of its turn,
/// edited arguments included, and every one seen earlier in this drive (a result fed
/// back after its turn is gone may still echo an edited value).
pub(crate) fn secrets_of(live: &mut Live) -> Vec<String> {
    if !live.secret_tools {
        return Vec::new();
    }
    let mut out = std::mem::take(&mut live.known_secrets);
    let mut add = |name: &str, args: &Map<String, Value>| {
        if let Some(schema) = live.schemas.get(name) {
            secrets::secret_values(schema, args, &mut out);
        }
    };
    for m in &live.state.messages {
        for c in &m.tool_calls {
            add(&c.name, &c.arguments);
        }
    }
    for c in live.state.turn.iter().flatten() {
        add(&c.call.name, &c.call.arguments);
        if let Some(edited) = &c.edited {
            add(&c.call.name, edited);
        }
    }
    out.sort();
    out.dedup();
    live.known_secrets.clone_from(&out);
    out
}

impl Runner {
    /// Where the tools' credentials come from: environment variables, and secrets
    /// stored sealed in this runner's database, opened with its key.
    pub fn credentials(&self) -> toolgate_tool::Resolver {
        self.credentials_for(None)
    }

    /// [`Runner::credentials`] for a run of `tenant`: its own secrets first, then the
    /// shared ones. The resolver waits for the store: it is called on the blocking pool
    /// (the engine resolves a call's credentials there), never on an async task.
    pub fn credentials_for(&self, tenant: Option<String>) -> toolgate_tool::Resolver {
        let (store, keyring) = (self.store.clone(), Arc::clone(&self.keyring));
        toolgate_tool::Resolver(Arc::new(move |source: &Credential| match source {
            Credential::Env(var) => Ok(std::env::var(var).ok()),
            Credential::Secret(name) => match tokio::runtime::Handle::try_current()
                .map_err(|e| format!("stored secrets need the runtime: {e}"))?
                .block_on(store.secret(SecretScope::of(tenant.as_deref()), name))
                .map_err(|e| e.to_string())?
            {
                Some(sealed) => keyring
                    .open_token(&sealed)
                    .map(Some)
                    .map_err(|e| e.to_string()),
                None => Ok(None),
            },
        }))
    }

    /// `value` as stored: JSON with `secrets` sealed.
    pub(crate) fn sealed<T: Serialize>(
        &self,
        value: &T,
        secrets: &[String],
    ) -> Result<String, RunError> {
        sealed(&self.keyring, value, secrets)
    }

    /// A stored value read back, its secrets opened.
    pub(crate) fn opened<T: DeserializeOwned>(
        &self,
        text: &str,
        what: &str,
    ) -> Result<T, RunError> {
        opened(&self.keyring, text, what)
    }
}

/// `value` as stored: JSON with `secrets` sealed.
pub(crate) fn sealed<T: Serialize>(
    keyring: &Keyring,
    value: &T,
    secrets: &[String],
) -> Result<String, RunError> {
    {
        if secrets.is_empty() {
            return serde_json::to_string(value)
                .map_err(|e| RunError::Corrupt(format!("cannot save the run: {e}")));
        }
        let mut json = serde_json::to_value(value)
            .map_err(|e| RunError::Corrupt(format!("cannot save the run: {e}")))?;
        secrets::seal_json(&mut json, secrets, keyring)?;
        Ok(json.to_string())
    }
}

/// A call's arguments as stored: [`sealed`], numbers and booleans at the top level too.
pub(crate) fn sealed_arguments(
    keyring: &Keyring,
    arguments: &Map<String, Value>,
    secrets: &[String],
) -> Result<Map<String, Value>, RunError> {
    let mut json = Value::Object(arguments.clone());
    secrets::seal_arguments(&mut json, secrets, keyring)?;
    match json {
        Value::Object(m) => Ok(m),
        _ => Err(RunError::Corrupt(
            "sealed arguments are not an object".into(),
        )),
    }
}

/// A stored value read back, its secrets opened.
pub(crate) fn opened<T: DeserializeOwned>(
    keyring: &Keyring,
    text: &str,
    what: &str,
) -> Result<T, RunError> {
    {
        let corrupt =
            |e: serde_json::Error| RunError::Corrupt(format!("{what} cannot be read: {e}"));
        if !text.contains(secrets::TOKEN_START) {
            return serde_json::from_str(text).map_err(corrupt);
        }
        let mut json: Value = serde_json::from_str(text).map_err(corrupt)?;
        secrets::unseal_json(&mut json, keyring)?;
        serde_json::from_value(json).map_err(corrupt)
    }
}
