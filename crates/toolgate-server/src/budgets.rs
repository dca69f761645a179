//! The spend limits a new run's owner brings: its tenant's (the `--tenants` file's
//! `budget:`) and, for a caller with an issued key, the key's (`keys create --budget`).
//! The agent's own come from its file; the run keeps all of them in its state.

use toolgate_protocol::budget::{OwnedBudget, Whose};
use toolgate_protocol::identity::Identity;

use super::AppState;
use super::error::ApiError;

impl AppState {
    /// The budgets of `who`'s tenant and key, for a run `who` starts.
    pub async fn owner_budgets(&self, who: &Identity) -> Result<Vec<OwnedBudget>, ApiError> {
        let mut budgets: Vec<OwnedBudget> = self
            .tenant_allows
            .budgets(&who.tenant)
            .iter()
            .map(|b| OwnedBudget {
                whose: Whose::Tenant(who.tenant.clone()),
                budget: *b,
            })
            .collect();
        if who.key_id.is_some() {
            let of_key = self.runner.store.key_budgets(&who.name).await?;
            budgets.extend(of_key.into_iter().map(|b| OwnedBudget {
                whose: Whose::Key(who.name.clone()),
                budget: b,
            }));
        }
        Ok(budgets)
    }
}
