//! Stored secrets, managed: the one implementation behind `toolgate secrets` and the
//! admin routes `/v1/secrets`. A value is sealed with the database's keyring before it
//! is stored and is never read back out; lists carry names and times only.

use toolgate_store::{SecretInfo, SecretScope, Store, StoreError};
use toolgate_tool::secrets::Keyring;

/// Why a secret could not be stored or removed.
#[derive(Debug)]
pub enum SecretError {
    /// Bad input: a name or an empty value.
    Invalid(String),
    /// No secret of that name in that scope.
    NoSecret(String),
    /// The keyring could not seal the value (its key file unreadable or wrong).
    Seal(String),
    Store(StoreError),
}

impl std::fmt::Display for SecretError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretError::Invalid(m) | SecretError::Seal(m) => f.write_str(m),
            SecretError::NoSecret(name) => write!(f, "there is no secret named '{name}'"),
            SecretError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl From<StoreError> for SecretError {
    fn from(e: StoreError) -> Self {
        SecretError::Store(e)
    }
}

/// A secret's name: letters, digits, `_`, `-`, `.`.
pub fn check_name(name: &str) -> Result<(), SecretError> {
    if name.is_empty()
        || name.len() > 200
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(SecretError::Invalid(format!(
            "'{name}' is not a secret name: use letters, digits, '_', '-' and '.'"
        )));
    }
    Ok(())
}

/// Stores (or replaces) secret `name` of `scope`, sealed with `keyring`.
pub async fn set(
    store: &Store,
    keyring: &Keyring,
    scope: SecretScope<'_>,
    name: &str,
    value: &str,
) -> Result<(), SecretError> {
    check_name(name)?;
    if value.is_empty() {
        return Err(SecretError::Invalid("the value is empty".into()));
    }
    let sealed = keyring
        .seal(value)
        .map_err(|e| SecretError::Seal(e.to_string()))?;
    store.set_secret(scope, name, sealed).await?;
    Ok(())
}

/// The names and times of `scope`'s secrets, never their values.
pub async fn list(store: &Store, scope: SecretScope<'_>) -> Result<Vec<SecretInfo>, SecretError> {
    Ok(store.secrets(scope).await?)
}

/// Removes secret `name` of `scope`.
pub async fn remove(store: &Store, scope: SecretScope<'_>, name: &str) -> Result<(), SecretError> {
    if store.remove_secret(scope, name).await? {
        Ok(())
    } else {
        Err(SecretError::NoSecret(name.to_string()))
    }
}
