//! Spend through the facade: what a budget sums before a model request, and the
//! spend by conversation, agent, tenant or key that `stats` shows.

use super::super::{Backend, Scope, Store, StoreError};
use crate::spend::{Spend, SpendBy, SpendFilter, SpendRow};

impl Store {
    /// The tokens and money of the recorded model requests `filter` matches.
    pub async fn spend(&self, filter: &SpendFilter) -> Result<Spend, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => {
                let filter = filter.clone();
                s.blocking(move |s| s.spend(&filter)).await
            }
            Backend::Postgres(s) => s.spend(filter).await,
        }
    }

    /// The spend grouped `by` conversation, agent, tenant or key, in `scope`, largest
    /// cost first.
    pub async fn spend_by(
        &self,
        by: SpendBy,
        scope: Scope<'_>,
    ) -> Result<Vec<SpendRow>, StoreError> {
        match &self.backend {
            Backend::Sqlite(s) => {
                let tenant = scope.tenant().map(str::to_string);
                s.blocking(move |s| s.spend_by(by, Scope::of(tenant.as_deref())))
                    .await
            }
            Backend::Postgres(s) => s.spend_by(by, scope).await,
        }
    }
}
