//! `toolgate oauth connect RUN`: completes a paused run's consent on this machine. The
//! consent URL sends the browser back to a loopback address (the CLI's callback,
//! `http://localhost:8080/v1/oauth/callback` by default); this command listens there for
//! the one redirect, exchanges the code, stores the tokens sealed, decides the run's
//! `authorization` item and continues the run, as `toolgate serve` does with its own
//! callback.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use axum::extract::Query;
use axum::response::Html;
use serde::Deserialize;
use toolgate::oauth::Callback;
use toolgate::protocol::{Decision, ItemKind, RequiredItem, RunObject};

use super::out::say;
use super::run::{Op, drive, finish, runner, runtime};
use super::{Failure, open_existing_store};

/// What the authorization server redirects the browser with.
#[derive(Debug, Deserialize)]
struct Redirect {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

pub fn connect(run: &str, timeout: u64, json: bool, db: &Path) -> Result<ExitCode, Failure> {
    let store = open_existing_store(db)?;
    super::check_run_tenant(&store, run)?;
    runtime()?.block_on(async {
        let runner = runner(store.clone());
        let top = runner.get(run).await.map_err(super::run::run_failure)?;
        let item = consent_item(&top)?;
        let url = item
            .arguments
            .get("consent_url")
            .and_then(|u| u.as_str())
            .ok_or_else(|| Failure::other("the authorization item carries no consent URL"))?;
        let (addr, path) = loopback(url)?;
        let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| {
            Failure::other(format!(
                "cannot listen on {addr} for the callback ({e}); is `toolgate serve` running there? It takes the callback itself"
            ))
        })?;
        let provider = item.arguments.get("provider").and_then(|p| p.as_str()).unwrap_or("the provider");
        say!("toolgate: open this URL to connect {provider}:\n  {url}\nwaiting {timeout} s for the browser to come back to http://{addr}{path}");
        let answer = tokio::time::timeout(Duration::from_secs(timeout), one_redirect(listener, &path))
            .await
            .map_err(|_| Failure::other(format!("no callback within {timeout} s; the run still waits (run this again)")))??;
        let holder = item.run_id.clone().unwrap_or_else(|| top.id.clone());
        let providers = runner.oauth_providers_of(&holder).await.map_err(super::run::run_failure)?;
        let done = runner
            .oauth_broker(Some(top.tenant.clone()))
            .complete(&answer, |name| providers.iter().find(|p| p.name == name).cloned())
            .await
            .map_err(|e| Failure::other(format!("the consent could not be completed: {e}")))?;
        let decision = match &done.outcome {
            Ok(()) => {
                say!("toolgate: connected {} for {}", done.owner.provider, done.owner.user);
                Decision::Approve
            }
            Err(why) => {
                say!("toolgate: not connected: {why}");
                Decision::Deny { reason: Some(why.clone()) }
            }
        };
        let by = toolgate::store::Decider {
            by: format!("oauth:{}", done.owner.user),
            ..Default::default()
        };
        let decided = runner
            .decide_as(&top.id, Some(&item.call_id), decision, by)
            .await
            .map_err(super::run::run_failure)?;
        if decided.waiting > 0 {
            let run = runner.get(&top.id).await.map_err(super::run::run_failure)?;
            return finish(&store, run, json).await;
        }
        let run = drive(&store, json, Op::Resume(top.id.clone()))
            .await
            .map_err(super::run::run_failure)?;
        finish(&store, run, json).await
    })
}

/// The run's (or a child's) waiting `authorization` item.
fn consent_item(run: &RunObject) -> Result<RequiredItem, Failure> {
    run.required_action
        .iter()
        .flat_map(|r| r.items.iter())
        .find(|i| i.kind == ItemKind::Authorization)
        .cloned()
        .ok_or_else(|| {
            Failure::bad_input(format!(
                "run {} waits for no account connection (status {})",
                run.id,
                run.status.as_str()
            ))
        })
}

/// The loopback address and path a consent URL's `redirect_uri` names; anything else
/// is not this machine's to take.
fn loopback(consent: &str) -> Result<(String, String), Failure> {
    let url = url::Url::parse(consent)
        .map_err(|e| Failure::other(format!("the consent URL cannot be read: {e}")))?;
    let redirect = url
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .ok_or_else(|| Failure::other("the consent URL names no redirect_uri"))?;
    let back = url::Url::parse(&redirect)
        .map_err(|e| Failure::other(format!("the redirect URI {redirect} cannot be read: {e}")))?;
    let local = matches!(back.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    if back.scheme() != "http" || !local {
        return Err(Failure::bad_input(format!(
            "the consent returns to {redirect}, not to this machine: open the URL and let that server take the callback"
        )));
    }
    let host = back.host_str().unwrap_or("127.0.0.1");
    let port = back.port_or_known_default().unwrap_or(80);
    Ok((format!("{host}:{port}"), back.path().to_string()))
}

/// Serves `path` on `listener` until one redirect comes; answers the browser a page.
async fn one_redirect(listener: tokio::net::TcpListener, path: &str) -> Result<Callback, Failure> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Redirect>(1);
    let page = Html(
        "<!doctype html><meta charset=utf-8><title>toolgate</title><p>Done: go back to the terminal; the run goes on there.</p>",
    );
    let app = axum::Router::new().route(
        path,
        axum::routing::get(move |Query(q): Query<Redirect>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(q).await;
                page
            }
        }),
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stop_rx.await;
            })
            .await
    });
    let q = rx
        .recv()
        .await
        .ok_or_else(|| Failure::other("the callback listener stopped"))?;
    let _ = stop_tx.send(());
    let _ = server.await;
    Ok(Callback {
        state: q
            .state
            .filter(|s| !s.is_empty())
            .ok_or_else(|| Failure::other("the callback has no state"))?,
        code: q.code,
        error: q.error,
        error_description: q.error_description,
    })
}
