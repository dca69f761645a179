//! Identities for tests: keys issued through `toolgate keys create`, HS256 JWTs signed
//! with a test secret, and the clock their `exp` is set from.

use std::process::Command;

use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::Value;

use super::{Site, bin};

/// The HS256 secret the tests' JWTs are signed with.
pub const SECRET: &str = "an-hs256-secret-of-at-least-32-bytes!!";

/// Issues a key through `toolgate keys create --json` on the site's database and
/// returns it, checking what the command printed.
pub fn keys_create(site: &Site, tenant: &str, name: &str, role: &str, groups: &str) -> String {
    let mut cmd = Command::new(bin());
    cmd.arg("--db").arg(site.db()).args([
        "--tenant", tenant, "keys", "create", "--name", name, "--role", role, "--json",
    ]);
    if !groups.is_empty() {
        cmd.args(["--groups", groups]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["name"], name);
    assert_eq!(v["role"], role);
    assert_eq!(v["tenant"], tenant);
    v["key"].as_str().unwrap().to_string()
}

/// A JWT of `claims`, signed HS256 with `secret`.
pub fn jwt(secret: &str, claims: Value) -> String {
    encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

/// Now, in Unix seconds (for `exp`, `nbf`).
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
