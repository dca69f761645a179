//! `toolgate stats --limits`: a running server's limiter, live (`GET /v1/limits`): per
//! limiter (the process's, each agent's share) and category, what runs, waits, was
//! refused and timed out, with the limits it applies.

use std::io::Write;
use std::process::ExitCode;

use toolgate::engine::{LimiterView, LimitsView};

use super::out::{self, print_json};
use super::{Failure, table};

/// Reads `server`'s limiter (with `key` when the server needs one) and prints it.
pub fn show(server: &str, key: Option<&str>, json: bool) -> Result<ExitCode, Failure> {
    let url = format!("{}/v1/limits", server.trim_end_matches('/'));
    let rt = super::run::runtime()?;
    let body: serde_json::Value = rt.block_on(async {
        let mut req = reqwest::Client::new().get(&url);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let resp = req.send().await.map_err(|e| {
            Failure::other(format!(
                "cannot reach {url}: {e} (is toolgate serve running there? --server URL)"
            ))
        })?;
        let status = resp.status();
        let body: serde_json::Value = resp
            .json()
            .await
            .map_err(|e| Failure::other(format!("{url} answered {status} without JSON: {e}")))?;
        if !status.is_success() {
            let why = body["error"]["message"]
                .as_str()
                .unwrap_or("no reason given");
            return Err(Failure::other(format!("{url} answered {status}: {why}")));
        }
        Ok(body)
    })?;
    let mut out = out::stdout();
    if json {
        return print_json(&mut out, &body, false).map(|()| ExitCode::SUCCESS);
    }
    let view: LimitsView = serde_json::from_value(body)
        .map_err(|e| Failure::other(format!("{url} answered an unexpected shape: {e}")))?;
    out.write_all(render(&view).as_bytes())
        .map_err(out::write_failure)?;
    Ok(ExitCode::SUCCESS)
}

fn render(view: &LimitsView) -> String {
    let mut rows = Vec::new();
    let mut add = |limiter: &str, v: &LimiterView| {
        let c = &v.config;
        let limit_of = |category: Option<&str>| match category {
            None => c.global.to_string(),
            Some(cat) => c
                .per_category
                .get(cat)
                .map_or("-".to_string(), ToString::to_string),
        };
        let all = std::iter::once((None, &v.metrics.all));
        let each = v
            .metrics
            .per_category
            .iter()
            .map(|(k, m)| (Some(k.as_str()), m));
        for (category, m) in all.chain(each) {
            rows.push(vec![
                limiter.to_string(),
                category.unwrap_or("all").to_string(),
                limit_of(category),
                m.current.to_string(),
                m.queued.to_string(),
                m.acquired.to_string(),
                m.rejected.to_string(),
                m.timed_out.to_string(),
                format!("{:.1}", m.mean_execution_ms),
            ]);
        }
    };
    add("process", &view.process);
    for (agent, v) in &view.agents {
        add(&format!("agent/{agent}"), v);
    }
    let p = &view.process.config;
    format!(
        "process limits: {} at once, queue {}, strategy {}\n\n{}",
        p.global,
        p.queue,
        serde_json::to_value(p.strategy)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        table::render(
            &[
                "LIMITER",
                "CATEGORY",
                "LIMIT",
                "RUNNING",
                "QUEUED",
                "ACQUIRED",
                "REJECTED",
                "TIMED OUT",
                "MEAN MS",
            ],
            &rows,
        )
    )
}
