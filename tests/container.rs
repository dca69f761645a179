//! The container files: the Dockerfile and compose.yaml are checked in every run (a
//! non-root runtime with a /healthz HEALTHCHECK, two workers on one PostgreSQL database,
//! the secrets key from a compose secret, agents and tools mounted from folders that
//! exist, the example agent valid); the whole set is built and run with podman in an
//! ignored test, since its first run (debootstrap, two images) takes minutes:
//! `cargo test --test all container:: -- --ignored --nocapture`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(name: &str) -> String {
    std::fs::read_to_string(root().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The Dockerfile's instructions of the last (runtime) stage, joined across `\` lines.
fn runtime_stage() -> Vec<String> {
    let text = read("Dockerfile").replace("\\\n", " ");
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let start = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
    lines[start..].to_vec()
}

#[test]
fn the_image_runs_as_a_user_and_checks_healthz() {
    let stage = runtime_stage();
    let find = |word: &str| {
        stage
            .iter()
            .filter(|l| l.starts_with(word))
            .collect::<Vec<_>>()
    };
    assert!(stage[0].contains("${BASE_IMAGE}"), "{stage:?}");
    let user = find("USER ");
    assert_eq!(user.len(), 1, "{stage:?}");
    assert!(
        !["USER root", "USER 0"].contains(&user[0].as_str()),
        "{user:?}"
    );
    let health = find("HEALTHCHECK ");
    assert_eq!(health.len(), 1, "{stage:?}");
    assert!(health[0].contains("/healthz"), "{health:?}");
    assert!(find("COPY --from=binary /out/toolgate /usr/local/bin/toolgate").len() == 1);
    assert_eq!(
        find("ENTRYPOINT "),
        [&r#"ENTRYPOINT ["toolgate"]"#.to_string()]
    );
    // The stages it names exist, and the prebuilt binary is let through .dockerignore.
    let all = read("Dockerfile");
    for stage in ["AS builder", "AS prebuilt", "AS binary", "AS runtime"] {
        assert!(all.contains(stage), "no stage {stage}");
    }
    assert!(
        read(".dockerignore")
            .lines()
            .any(|l| l == "!target/container/toolgate")
    );
}

fn compose() -> Value {
    serde_saphyr::from_str(&read("compose.yaml")).expect("compose.yaml is YAML")
}

/// `${NAME:-default}` as compose reads it with NAME unset.
fn default_of(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(start) = out.find("${") {
        let end = start + out[start..].find('}').unwrap();
        let inner = &out[start + 2..end];
        let value = inner.split_once(":-").map_or("", |(_, d)| d).to_string();
        out.replace_range(start..=end, &value);
    }
    out
}

#[test]
fn two_workers_share_one_database_with_the_secret_and_mounts() {
    let c = compose();
    let services = c["services"].as_object().unwrap();
    let workers: Vec<&Value> = services
        .values()
        .filter(|s| s["command"][0] == "serve")
        .collect();
    assert_eq!(workers.len(), 2, "two serve workers");
    let pg = &services["postgres"];
    assert!(pg["healthcheck"]["test"].to_string().contains("pg_isready"));
    let password = default_of(pg["environment"]["POSTGRES_PASSWORD"].as_str().unwrap());
    let db = format!(
        "postgres://{}:{password}@postgres:5432/{}",
        pg["environment"]["POSTGRES_USER"].as_str().unwrap(),
        pg["environment"]["POSTGRES_DB"].as_str().unwrap()
    );
    let mut ports = Vec::new();
    for w in &workers {
        let env = &w["environment"];
        assert_eq!(default_of(env["TOOLGATE_DB"].as_str().unwrap()), db);
        assert_eq!(env["TOOLGATE_SECRET_KEY_FILE"], "/run/secrets/secret_key");
        let secrets = w["secrets"].to_string();
        assert!(
            secrets.contains("secret_key") && secrets.contains("api_key"),
            "{secrets}"
        );
        assert!(w["command"].to_string().contains("/run/secrets/api_key"));
        assert_eq!(w["depends_on"]["postgres"]["condition"], "service_healthy");
        for volume in w["volumes"].as_array().unwrap() {
            let volume = default_of(volume.as_str().unwrap());
            let host = volume.split(':').next().unwrap();
            assert!(root().join(host).is_dir(), "{host} is mounted but missing");
        }
        ports.push(default_of(w["ports"][0].as_str().unwrap()));
    }
    assert_ne!(ports[0], ports[1], "the workers publish different ports");
    for name in ["secret_key", "api_key"] {
        assert!(c["secrets"][name]["file"].is_string(), "no secret {name}");
    }
}

#[test]
fn the_mounted_example_agent_waits_for_its_approval() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(toolgate_test_support::bin())
        .current_dir(dir.path())
        .args(["run", "--db", "runs.db", "--agent"])
        .arg(root().join("container/agents/filer.yaml"))
        .arg("write the note")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("call_note  approval  write_file"), "{text}");
}

/// The real thing: builds the images with podman (installed by container/build.sh) and
/// runs container/test.sh: /healthz and HEALTHCHECK of both workers, a run started on one
/// and approved on the other. TOOLGATE_CONTAINER_BINARY names the binary to put in the
/// image (default: the one under test, which is built for this Debian).
#[test]
#[ignore = "builds images (minutes the first time): cargo test --test all container:: -- --ignored --nocapture"]
fn the_compose_set_runs_and_a_run_crosses_workers() {
    let binary = std::env::var("TOOLGATE_CONTAINER_BINARY")
        .unwrap_or_else(|_| toolgate_test_support::bin().to_string());
    let out = Command::new("bash")
        .arg(root().join("container/test.sh"))
        .args(["--prebuilt", &binary])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "container/test.sh failed:\n{stdout}\n{stderr}"
    );
    println!("{}", stdout.trim());
    assert!(stdout.contains("container check passed"), "{stdout}");
}
