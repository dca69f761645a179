//! Tools' last credential checks through the facade.

use super::super::{Backend, SecretScope, Store, StoreError, ToolValidation};

impl Store {
    /// Keeps `check` as its tool's last credential check in `scope`.
    pub async fn record_validation(
        &self,
        scope: SecretScope<'_>,
        check: ToolValidation,
    ) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => Ok(s.record_validation(scope, check).await?),
            Backend::Postgres(s) => s.record_validation(scope, check).await,
        }
    }

    /// Every tool's last credential check in `scope`, by tool name.
    pub async fn validations(
        &self,
        scope: SecretScope<'_>,
    ) -> Result<Vec<ToolValidation>, StoreError> {
        let tenant = scope.tenant().to_string();
        match &self.backend {
            Backend::Sqlite(s) => {
                s.blocking(move |s| s.validations(SecretScope::of(Some(tenant.as_str()))))
                    .await
            }
            Backend::Postgres(s) => s.validations(scope).await,
        }
    }
}
