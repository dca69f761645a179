//! `POST /v1/agents/{name}/validate` and `POST /v1/reload` on a real `toolgate serve`
//! (admins): a sound agent is valid, one with an unknown model and tool names both,
//! with its files named within their folders; a reload reports a broken tool file and,
//! once it is mended, none; `toolgate agents check` gives the same verdicts (one
//! implementation).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use crate::serving::{Server, Site, cli};

const ADMIN: &str = "the-admin-key-of-the-catalogue-test";

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_validates_agents_and_reloads_the_folders() {
    let site = Site::new();
    let root = site.path().to_path_buf();
    site.agent("sound", "[calculator]", "  - content: Done.\n");
    std::fs::write(
        root.join("agents/broken.yaml"),
        "name: broken\nmodel: gpt:nothing\ntools: [calculator, teleport]\n",
    )
    .unwrap();
    std::fs::write(root.join("tools/half.yaml"), "name: half\nparameters: [\n").unwrap();
    let server = Server::start(&site, Some(ADMIN), &[]);

    let (s, ok) = server
        .send_as(ADMIN, "POST", "/v1/agents/sound/validate", None)
        .await;
    assert_eq!(s, 200, "{ok}");
    assert_eq!(
        (&ok["valid"], &ok["problems"]),
        (&json!(true), &json!([])),
        "{ok}"
    );
    assert_eq!(ok["file"], "sound.yaml");

    let (s, bad) = server
        .send_as(ADMIN, "POST", "/v1/agents/broken/validate", None)
        .await;
    assert_eq!(s, 200, "{bad}");
    assert_eq!(bad["valid"], false);
    let problems = bad["problems"].to_string();
    assert!(
        problems.contains("'gpt:nothing' is not a model"),
        "{problems}"
    );
    assert!(problems.contains("unknown tool(s): teleport"), "{problems}");
    assert!(
        !problems.contains(root.to_str().unwrap()),
        "the host's folders are not named: {problems}"
    );
    let (s, _) = server
        .send_as(ADMIN, "POST", "/v1/agents/nobody/validate", None)
        .await;
    assert_eq!(s, 404);

    let (s, now) = server.send_as(ADMIN, "POST", "/v1/reload", None).await;
    assert_eq!(s, 200, "{now}");
    let agents: Vec<&str> = now["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        agents.contains(&"sound") && agents.contains(&"broken"),
        "{now}"
    );
    let broken_tool = now["tool_problems"].to_string();
    assert!(broken_tool.contains("half.yaml"), "{now}");
    assert!(!broken_tool.contains(root.to_str().unwrap()), "{now}");
    // Mended: the next reload says so.
    std::fs::write(root.join("tools/half.yaml"), "name: half\n").unwrap();
    let (_, now) = server.send_as(ADMIN, "POST", "/v1/reload", None).await;
    assert_eq!(now["tool_problems"], json!([]), "{now}");

    // The command line: the same check, the same verdicts.
    let out = cli(
        &site,
        &[
            "agents", "check", "--dir", "agents", "--tools", "tools", "--json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checks: Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdict = |name: &str| {
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["valid"].clone())
    };
    assert_eq!(verdict("sound"), Some(json!(true)), "{checks}");
    assert_eq!(verdict("broken"), Some(json!(false)), "{checks}");
    let out = cli(&site, &["agents", "check", "--dir", "agents", "sound"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
