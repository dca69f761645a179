//! Credential checks (`toolgate tools validate`, `secrets set --validate`,
//! `POST /v1/tools/{name}/validate`) against real peers: a Dify provider whose
//! `_validate_credentials` runs through toolgate's adapter with python3, accepting one
//! key and refusing another (quoting it); an http tool whose `validate:` request goes to
//! a local HTTP server that checks a bearer token (and quotes it back); an MCP server of
//! the official Python SDK that starts only with the right token. Each verdict is
//! the upstream's, kept as the tools' last validation; no output and no byte of the
//! database ever holds a credential in clear.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};
use toolgate_test_support::toolgate;

use crate::launching::{all, feed};
use crate::serving::Site;

const GOOD: &str = "good-key-5d1e90";
const BAD: &str = "bad-key-a7c3f2";

const PROVIDER_YAML: &str = "identity:\n  author: toolgate\n  name: vault\n  label: {en_US: Vault}\ncredentials_for_provider:\n  api_key: {type: secret-input, required: true}\ntools:\n  - tools/peek.yaml\nextra:\n  python: {source: provider/vault.py}\n";

/// Refuses every key but GOOD, quoting the key it was given (as careless providers do).
const PROVIDER_PY: &str = r#"from dify_plugin import ToolProvider
from dify_plugin.errors.tool import ToolProviderCredentialValidationError


class VaultProvider(ToolProvider):
    def _validate_credentials(self, credentials):
        key = credentials.get("api_key")
        if key != "good-key-5d1e90":
            raise ToolProviderCredentialValidationError("the vault refused key %s" % key)
"#;

const TOOL_YAML: &str = "identity: {name: peek, author: toolgate}\ndescription: {human: {en_US: Peek.}, llm: Peeks into the vault.}\nparameters: []\nextra:\n  python: {source: tools/peek.py}\n";

const TOOL_PY: &str = "from dify_plugin import Tool\n\n\nclass Peek(Tool):\n    def _invoke(self, tool_parameters):\n        yield self.create_text_message('peeked')\n";

/// A Dify plugin `vault` in `tools/vault`.
fn provider(tools: &Path) {
    let root = tools.join("vault");
    for (path, text) in [
        ("provider/vault.yaml", PROVIDER_YAML),
        ("provider/vault.py", PROVIDER_PY),
        ("tools/peek.yaml", TOOL_YAML),
        ("tools/peek.py", TOOL_PY),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

fn cli(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = toolgate(dir);
    cmd.args(args).env_remove("TOOLGATE_PYTHON");
    feed(cmd, stdin)
}

/// No credential in clear anywhere in the database's files.
fn nowhere_in_the_database(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("toolgate.db") && !name.ends_with(".key") {
            let bytes = std::fs::read(&path).unwrap();
            for v in [GOOD, BAD] {
                assert!(
                    !bytes.windows(v.len()).any(|w| w == v.as_bytes()),
                    "{v} in {name}"
                );
            }
        }
    }
}

fn clean(out: &Output) -> String {
    let text = all(out);
    assert!(
        !text.contains(GOOD) && !text.contains(BAD),
        "a credential shown: {text}"
    );
    text
}

fn listed(dir: &Path, tool: &str) -> Value {
    let out = cli(dir, &["tools", "list", "--json"], None);
    assert!(out.status.success(), "{}", all(&out));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    clean(&out);
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .cloned()
        .unwrap()
}

#[test]
fn a_dify_provider_check_passes_and_fails_through_the_adapter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    provider(&d.join("tools"));

    // Nothing stored yet: the check cannot run, and says what to set.
    let out = cli(d, &["tools", "validate", "vault"], None);
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert!(
        all(&out).contains("secrets set vault.api_key"),
        "{}",
        all(&out)
    );

    // A wrong key: stored, refused by the provider with its reason, the key masked.
    let out = cli(
        d,
        &["secrets", "set", "vault.api_key", "--validate"],
        Some(&format!("{BAD}\n")),
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let text = clean(&out);
    assert!(
        text.contains("invalid") && text.contains("the vault refused key [secret]"),
        "{text}"
    );
    let peek = listed(d, "vault__peek");
    assert_eq!(peek["validation"]["valid"], false, "{peek}");
    assert_eq!(
        peek["validation"]["reason"],
        "the vault refused key [secret]"
    );
    let out = cli(d, &["tools", "list"], None);
    assert!(
        all(&out)
            .lines()
            .any(|l| l.starts_with("vault__peek") && l.contains("invalid"))
    );

    // The right key: valid, by provider name or tool name, in a table or JSON.
    let out = cli(
        d,
        &["secrets", "set", "vault.api_key", "--validate"],
        Some(&format!("{GOOD}\n")),
    );
    assert!(out.status.success(), "{}", all(&out));
    assert!(clean(&out).contains("valid"));
    let out = cli(d, &["tools", "validate", "vault__peek", "--json"], None);
    assert!(out.status.success(), "{}", all(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        answer,
        json!([{"tools": ["vault__peek"], "provider": "vault", "status": "valid"}])
    );
    assert_eq!(listed(d, "vault__peek")["validation"]["valid"], true);

    // A tool with no check is told so; an unknown name too.
    let out = cli(d, &["tools", "validate", "calculator"], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(all(&out).contains("no credential check"), "{}", all(&out));
    let out = cli(d, &["tools", "validate", "nothing_here"], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    nowhere_in_the_database(d);
}

/// A local server: `/whoami` answers 200 to `Bearer GOOD`, 401 quoting any other token.
const SERVER: &str = r#"
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        ok = auth == "Bearer good-key-5d1e90"
        body = b'{"user": "ann"}' if ok else ("token %s is not known" % auth[7:]).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json" if ok else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

struct Upstream(Child);

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn upstream() -> (Upstream, u16) {
    let mut child = Command::new("python3")
        .args(["-c", SERVER])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (Upstream(child), line.trim().parse().unwrap())
}

fn http_tool(port: u16) -> String {
    format!(
        "name: whoami\ndescription: Who the token is.\npermission: auto\nread_only: true\ncredentials:\n  token: \"${{secret:WHOAMI_TOKEN}}\"\nentry:\n  type: http\n  url: http://127.0.0.1:{port}/whoami\n  allow_hosts: [127.0.0.1]\n  validate:\n    url: http://127.0.0.1:{port}/whoami\n    headers: {{Authorization: \"Bearer {{token}}\"}}\n"
    )
}

#[test]
fn an_http_tool_checks_its_token_with_a_local_server() {
    let (_server, port) = upstream();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("tools")).unwrap();
    std::fs::write(d.join("tools/whoami.yaml"), http_tool(port)).unwrap();

    let out = cli(
        d,
        &["secrets", "set", "WHOAMI_TOKEN", "--validate"],
        Some(&format!("{BAD}\n")),
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let text = clean(&out);
    assert!(
        text.contains("HTTP 401") && text.contains("token [secret] is not known"),
        "{text}"
    );

    let out = cli(
        d,
        &["secrets", "set", "WHOAMI_TOKEN"],
        Some(&format!("{GOOD}\n")),
    );
    assert!(out.status.success(), "{}", all(&out));
    let out = cli(d, &["tools", "validate"], None);
    assert!(out.status.success(), "{}", all(&out));
    assert!(
        clean(&out)
            .lines()
            .any(|l| l.starts_with("whoami") && l.contains("valid"))
    );
    assert_eq!(listed(d, "whoami")["validation"]["valid"], true);
    nowhere_in_the_database(d);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_checks_a_provider_over_http_and_the_catalogue_shows_it() {
    let site = Site::new();
    provider(&site.path().join("tools"));
    let mut cmd = Command::new(crate::serving::bin());
    cmd.current_dir(site.path())
        .arg("--db")
        .arg(site.db())
        .args(["secrets", "set", "vault.api_key", "--from-env", "VAULT_KEY"])
        .env("VAULT_KEY", BAD);
    let out = feed(cmd, None);
    assert!(out.status.success(), "{}", all(&out));
    let server = site.serve(Some("admin-key"));
    let (status, body) = server.post("/v1/tools/vault/validate", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "invalid", "{body}");
    assert_eq!(body["reason"], "the vault refused key [secret]");
    let (status, tools) = server.get("/v1/tools").await;
    assert_eq!(status, 200);
    let peek = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "vault__peek")
        .unwrap();
    assert_eq!(peek["validation"]["valid"], false, "{peek}");
    assert!(!tools.to_string().contains(BAD));
    let (status, _) = server
        .post("/v1/tools/nothing_here/validate", json!({}))
        .await;
    assert_eq!(status, 404);

    // The stored secret checked by name: every tool that uses it, as
    // `secrets set --validate` does.
    let (status, body) = server
        .post("/v1/secrets/vault.api_key/validate", json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    let checks = body.as_array().unwrap();
    assert_eq!(checks.len(), 1, "{body}");
    assert_eq!(checks[0]["provider"], "vault", "{body}");
    assert_eq!(checks[0]["status"], "invalid", "{body}");
    assert_eq!(checks[0]["reason"], "the vault refused key [secret]");
    assert!(!body.to_string().contains(BAD));
    let (status, body) = server
        .post("/v1/secrets/never_stored/validate", json!({}))
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, _) = server
        .post(
            "/v1/secrets",
            json!({"name": "unused_secret", "value": "v"}),
        )
        .await;
    assert_eq!(status, 204);
    let (status, body) = server
        .post("/v1/secrets/unused_secret/validate", json!({}))
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["type"], "no_check", "{body}");
}

#[test]
fn the_last_validation_is_kept_per_tenant_on_both_backends() {
    use toolgate::store::{SecretScope, ToolValidation};
    let rt = tokio::runtime::Runtime::new().unwrap();
    for db in crate::databases::TestDb::both() {
        let store = db.open();
        let check = |tool: &str, valid: bool, at: i64| ToolValidation {
            tool: tool.into(),
            valid,
            reason: (!valid).then(|| "refused".to_string()),
            checked_at: at,
        };
        rt.block_on(async {
            let shared = SecretScope::of(None);
            store
                .record_validation(shared, check("b", false, 1))
                .await
                .unwrap();
            store
                .record_validation(shared, check("a", true, 2))
                .await
                .unwrap();
            // A later check replaces the one before; another tenant's stays its own.
            store
                .record_validation(shared, check("b", true, 3))
                .await
                .unwrap();
            store
                .record_validation(SecretScope::of(Some("t2")), check("a", false, 4))
                .await
                .unwrap();
            let got = store.validations(shared).await.unwrap();
            assert_eq!(
                got,
                vec![check("a", true, 2), check("b", true, 3)],
                "{}",
                db.name()
            );
            let other = store
                .validations(SecretScope::of(Some("t2")))
                .await
                .unwrap();
            assert_eq!(other, vec![check("a", false, 4)], "{}", db.name());
        });
    }
}

/// An MCP server (the official Python SDK's) that refuses a wrong token when it starts.
fn mcp_site(python: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/vault_server.py");
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/vault.yaml"),
        format!(
            "mcp_server: vault\ncommand: {}\nargs: [{}]\npermission: auto\ncredentials: {{VAULT_TOKEN: \"${{secret:VAULT_TOKEN}}\"}}\n",
            python.display(),
            script.display()
        ),
    )
    .unwrap();
    dir
}

#[test]
fn an_mcp_server_is_checked_by_initialize_and_its_tool_list() {
    let python = crate::serving::python("credential_checks");
    let dir = mcp_site(&python);
    let d = dir.path();
    let out = cli(
        d,
        &["secrets", "set", "VAULT_TOKEN", "--validate"],
        Some(&format!("{BAD}\n")),
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let text = clean(&out);
    assert!(
        text.contains("invalid") && text.contains("token [secret] refused by the vault"),
        "{text}"
    );
    let out = cli(
        d,
        &["secrets", "set", "VAULT_TOKEN"],
        Some(&format!("{GOOD}\n")),
    );
    assert!(out.status.success(), "{}", all(&out));
    let out = cli(d, &["tools", "validate", "vault", "--json"], None);
    assert!(out.status.success(), "{}", all(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer[0]["status"], "valid", "{answer}");
    assert_eq!(answer[0]["provider"], "vault");
    assert_eq!(listed(d, "vault__peek")["validation"]["valid"], true);
    nowhere_in_the_database(d);
}

/// An OpenAPI file whose `validate:` names the document's safe `whoAmI` operation.
fn openapi_file(port: u16) -> String {
    format!(
        "openapi:\n  openapi: 3.0.0\n  info: {{title: who, version: '1'}}\n  paths:\n    /whoami:\n      get: {{operationId: whoAmI, responses: {{'200': {{description: ok}}}}}}\n    /pets:\n      post: {{operationId: addPet, responses: {{'200': {{description: ok}}}}}}\nname: who\nbase_url: http://127.0.0.1:{port}\nallow_hosts: [127.0.0.1]\nauth: {{type: bearer, token: \"${{secret:WHO_TOKEN}}\"}}\nvalidate: whoAmI\n"
    )
}

#[test]
fn an_openapi_file_checks_with_its_named_safe_operation() {
    let (_server, port) = upstream();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("tools")).unwrap();
    std::fs::write(d.join("tools/who.yaml"), openapi_file(port)).unwrap();
    let out = cli(
        d,
        &["secrets", "set", "WHO_TOKEN", "--validate"],
        Some(&format!("{BAD}\n")),
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let text = clean(&out);
    assert!(
        text.contains("HTTP 401") && text.contains("token [secret] is not known"),
        "{text}"
    );
    let out = cli(
        d,
        &["secrets", "set", "WHO_TOKEN"],
        Some(&format!("{GOOD}\n")),
    );
    assert!(out.status.success(), "{}", all(&out));
    let out = cli(d, &["tools", "validate", "who", "--json"], None);
    assert!(out.status.success(), "{}", all(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        answer,
        json!([{"tools": ["who__addPet", "who__whoAmI"], "provider": "who", "status": "valid"}])
    );
    // Both of the API's tools carry the verdict.
    assert_eq!(listed(d, "who__addPet")["validation"]["valid"], true);
    nowhere_in_the_database(d);

    // A check that would change something is refused when the file loads.
    std::fs::write(
        d.join("tools/who.yaml"),
        openapi_file(port).replace("validate: whoAmI", "validate: addPet"),
    )
    .unwrap();
    let out = cli(d, &["tools", "check"], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(
        all(&out).contains("must be a GET, HEAD or OPTIONS"),
        "{}",
        all(&out)
    );
}
