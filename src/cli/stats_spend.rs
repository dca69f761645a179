//! `toolgate stats --spend-by agent|conversation|tenant|key`: the tokens and money of
//! the recorded model requests, summed one way, largest cost first (cost by the price
//! table, in US dollars).

use std::io::Write;

use toolgate::protocol::budget::usd;
use toolgate::store::{Scope, SpendBy, SpendRow, Store};

use super::Wait;
use super::out::{self, print_json};
use super::{Failure, table};

/// Prints the spend by `by`.
pub fn show(store: &Store, by: &str, json: bool) -> Result<(), Failure> {
    let by: SpendBy = by.parse().map_err(|_| {
        Failure::bad_input(format!(
            "--spend-by {by}: group by conversation, agent, tenant or key"
        ))
    })?;
    let rows = store
        .spend_by(by, Scope::All)
        .wait()?
        .map_err(super::store_failure)?;
    let mut out = out::stdout();
    if json {
        let value: Vec<serde_json::Value> = rows.iter().map(row_json).collect();
        return print_json(
            &mut out,
            &serde_json::json!({"by": by, "rows": value}),
            false,
        );
    }
    let text = render(by, &rows);
    out.write_all(text.as_bytes()).map_err(out::write_failure)
}

/// A row with its cost also in dollars (`cost_usd`, a decimal string: exact).
fn row_json(r: &SpendRow) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    v["cost_usd"] = usd(r.spend.cost_nanos).into();
    v
}

fn render(by: SpendBy, rows: &[SpendRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let s = &r.spend;
            vec![
                r.name.clone(),
                s.requests.to_string(),
                s.prompt_tokens.to_string(),
                s.completion_tokens.to_string(),
                s.total_tokens.to_string(),
                format!("${}", usd(s.cost_nanos)),
            ]
        })
        .collect();
    let head = by.as_str().to_uppercase();
    table::render(
        &[&head, "REQUESTS", "PROMPT", "COMPLETION", "TOKENS", "COST"],
        &body,
    )
}
