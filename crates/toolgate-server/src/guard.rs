//! Which requests reach the routes at all, before the key is looked at: the `Host`
//! allow-list (a page at a name that resolves to this server — DNS rebinding — is
//! refused with 421); for state changes (`POST`, `PUT`, `PATCH`, `DELETE`), a foreign
//! `Origin` (another site's page, or another local port) refused with 403, and a body a
//! browser could send cross-site without asking first (a form post) refused with 415
//! where the server is open (no key needed; else the key check answers 401).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::ApiError;

/// The header a client may send instead of a JSON content type to mark a state change
/// as its own (a browser sends no custom header cross-site without asking first).
pub const CLIENT_HEADER: &str = "x-toolgate-request";

/// The host names this server answers to. IP literals always pass (a rebinding page
/// needs a name it controls); names pass when they are loopback names (`localhost`,
/// `*.localhost`) or listed.
#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    /// Every host (`--allowed-host '*'`: a proxy in front checks `Host`).
    any: bool,
    /// Lower-case names, each with the port it must come with (`None`: any).
    names: Vec<(String, Option<u16>)>,
}

/// An `--allowed-host` entry that is not a host name or `NAME:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--allowed-host '{entry}' is not a host name or NAME:PORT")]
pub struct BadAllowedHost {
    pub entry: String,
}

impl AllowedHosts {
    /// The loopback names and `entries` (`NAME`, `NAME:PORT` or `*`).
    pub fn new<S: AsRef<str>>(entries: &[S]) -> Result<AllowedHosts, BadAllowedHost> {
        let mut hosts = AllowedHosts::default();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry == "*" {
                hosts.any = true;
                continue;
            }
            let bad = || BadAllowedHost {
                entry: entry.to_string(),
            };
            let (name, port) = split_authority(entry).ok_or_else(bad)?;
            if name.is_empty() || name.contains(['/', '@', ' ']) {
                return Err(bad());
            }
            hosts.names.push((name.to_ascii_lowercase(), port));
        }
        Ok(hosts)
    }

    /// Adds the host of a URL people reach the server at (`--public-url`).
    pub fn add_url(&mut self, url: &url::Url) {
        if let Some(host) = url.host_str() {
            self.names.push((host.to_ascii_lowercase(), None));
        }
    }

    /// Whether `name[:port]` was named with `--allowed-host` (not merely a loopback
    /// name or an address): pages there may change state too.
    pub fn listed(&self, name: &str, port: Option<u16>) -> bool {
        let name = name.to_ascii_lowercase();
        self.names
            .iter()
            .any(|(n, p)| *n == name && (p.is_none() || *p == port))
    }

    /// Whether a request's `Host` (`NAME`, `NAME:PORT`, `[V6]:PORT`) is one of ours.
    pub fn allows(&self, authority: &str) -> bool {
        if self.any {
            return true;
        }
        let Some((name, port)) = split_authority(authority) else {
            return false;
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if name.parse::<IpAddr>().is_ok() || is_loopback_name(&name) {
            return true;
        }
        self.names
            .iter()
            .any(|(n, p)| *n == name && (p.is_none() || *p == port))
    }
}

/// `localhost` and the names under it (RFC 6761: they resolve to loopback only).
fn is_loopback_name(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost")
}

/// A `Host` value's name (brackets of an IPv6 literal removed) and port.
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse().ok()?),
        };
        return Some((v6, port));
    }
    match authority.rsplit_once(':') {
        Some((name, port)) => Some((name, Some(port.parse().ok()?))),
        None => Some((authority, None)),
    }
}

/// The request's `Host` (or, for an absolute-form request, its URI's authority).
fn host_of(req: &Request) -> Option<String> {
    match req.headers().get(header::HOST) {
        Some(h) => h.to_str().ok().map(str::to_string),
        None => req.uri().authority().map(|a| a.as_str().to_string()),
    }
}

/// The checks, in order: Host, Origin, then how a state change is sent.
pub async fn check(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let Some(host) = host_of(&req) else {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "host_not_allowed",
            "the request names no Host".to_string(),
        );
    };
    if !state.allowed_hosts.allows(&host) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "host_not_allowed",
            format!(
                "this server does not answer to Host '{}'; start it with --allowed-host NAME to add a name",
                printable(&host)
            ),
        );
    }
    let changes = changes_state(req.method());
    if changes
        && let Some(origin) = req.headers().get(header::ORIGIN)
        && !origin_allowed(origin.to_str().unwrap_or(""), &host, &state)
    {
        return refuse(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            format!(
                "changes from the page at '{}' are refused: only this server's own pages (or --allowed-host names) may make them",
                printable(origin.to_str().unwrap_or("?"))
            ),
        );
    }
    // A form post rides on nothing but the server being open: where every request
    // needs a key, one without it is refused by the key check (401) instead.
    if changes
        && !announced(req.headers())
        && !matches!(super::auth::needs_key(&state).await, Ok(true))
    {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!(
                "a {} needs Content-Type: application/json (an empty body may be '{{}}'), or an {CLIENT_HEADER} header",
                req.method()
            ),
        );
    }
    next.run(req).await
}

fn refuse(status: StatusCode, kind: &str, message: String) -> Response {
    let mut response = ApiError::new(status, kind, message).into_response();
    // The body was not read: the connection cannot carry another request.
    response.headers_mut().insert(
        header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// At most 200 characters of a header value, control characters escaped: it goes into
/// an error message and a log line.
fn printable(value: &str) -> String {
    value
        .chars()
        .take(200)
        .flat_map(char::escape_default)
        .collect()
}

/// Whether a page at `origin` may change state: this server's own pages, its public
/// address, or a name given with `--allowed-host`.
fn origin_allowed(origin: &str, host: &str, state: &AppState) -> bool {
    if same_origin(origin, host, state.public_origin.as_deref()) {
        return true;
    }
    url::Url::parse(origin).ok().is_some_and(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.host_str()
                .is_some_and(|h| state.allowed_hosts.listed(h, u.port_or_known_default()))
    })
}

/// Whether `origin` (`scheme://host[:port]`) is this very server as the request reached
/// it, or its public address.
fn same_origin(origin: &str, host: &str, public: Option<&str>) -> bool {
    if public.is_some_and(|p| p.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Ok(url) = url::Url::parse(origin) else {
        return false; // `null` (a sandboxed frame, a file) included
    };
    if !matches!(url.scheme(), "http" | "https") || url.path() != "/" {
        return false;
    }
    let Some(name) = url.host_str() else {
        return false;
    };
    let authority = match url.port() {
        Some(p) => format!("{name}:{p}"),
        None => name.to_string(),
    };
    authority.eq_ignore_ascii_case(host)
        || (url.port().is_none()
            && strip_default_port(host, url.scheme()).eq_ignore_ascii_case(name))
}

/// `host` without `:80` (http) or `:443` (https).
fn strip_default_port<'a>(host: &'a str, scheme: &str) -> &'a str {
    let default = if scheme == "https" { ":443" } else { ":80" };
    host.strip_suffix(default).unwrap_or(host)
}

fn changes_state(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// Whether a state change says it is a client's own: a JSON body, or a header a
/// browser never sends cross-site without a preflight this server does not grant.
fn announced(headers: &HeaderMap) -> bool {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| {
            v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
        });
    json || headers.contains_key(CLIENT_HEADER)
        || headers.contains_key(header::AUTHORIZATION)
        || headers.contains_key("mcp-session-id")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn loopback_names_and_ip_literals_pass_other_names_do_not() {
        let h = AllowedHosts::new::<&str>(&[]).unwrap();
        for ok in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "app.localhost:9",
            "[::1]:8080",
            "10.1.2.3",
            "localhost.",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "",
            "[::1",
            "x:notaport",
        ] {
            assert!(!h.allows(bad), "{bad}");
        }
    }

    #[test]
    fn listed_names_pass_with_their_port() {
        let h = AllowedHosts::new(&["toolgate.example", "api.example:8443"]).unwrap();
        assert!(h.allows("toolgate.example:1234"));
        assert!(h.allows("api.example:8443"));
        assert!(!h.allows("api.example:8444"));
        assert!(
            AllowedHosts::new(&["*"])
                .unwrap()
                .allows("anything.example")
        );
        assert!(AllowedHosts::new(&["a/b"]).is_err());
    }

    #[test]
    fn an_origin_must_be_the_host_itself() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080", None));
        assert!(same_origin("http://localhost", "localhost:80", None));
        assert!(!same_origin(
            "http://127.0.0.1:9999",
            "127.0.0.1:8080",
            None
        ));
        assert!(!same_origin("null", "127.0.0.1:8080", None));
        assert!(!same_origin("http://evil.example", "127.0.0.1:8080", None));
        assert!(same_origin(
            "https://tg.example",
            "10.0.0.1:8080",
            Some("https://tg.example")
        ));
    }
}
