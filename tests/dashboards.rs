//! The Grafana dashboard and the Prometheus alerting rules in monitoring/: the rules
//! pass `promtool check rules` (Debian's `prometheus` package, installed by
//! tests/prometheus/setup.sh), and every metric either names is exported by a fresh
//! `toolgate serve` before its first run, as every family it exports is: with its
//! series, at zero (an alert on a fresh server reads 0, not "no data").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::serving::Site;

fn monitoring() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("monitoring")
}

/// Every `toolgate_...` name in `text`.
fn names_in(text: &str, into: &mut BTreeSet<String>) {
    let mut rest = text;
    while let Some(at) = rest.find("toolgate_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        into.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
}

/// The metric names the dashboard's queries and the rules' expressions use.
fn named() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(monitoring().join("toolgate-dashboard.json")).unwrap(),
    )
    .unwrap();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            names_in(target["expr"].as_str().unwrap(), &mut names);
        }
    }
    let rules = std::fs::read_to_string(monitoring().join("toolgate-rules.yaml")).unwrap();
    for line in rules.lines().filter(|l| !l.trim_start().starts_with('#')) {
        names_in(line, &mut names);
    }
    names
}

/// A scrape in the classic text format: each sample's name with its values, and each
/// family (`# TYPE`) with its type.
fn read(scrape: &str) -> (BTreeMap<String, Vec<f64>>, BTreeMap<String, String>) {
    let (mut samples, mut families) = (BTreeMap::<String, Vec<f64>>::new(), BTreeMap::new());
    for line in scrape.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            let (name, kind) = t.split_once(' ').unwrap();
            families.insert(name.to_string(), kind.to_string());
        } else if !line.starts_with('#') && !line.is_empty() {
            let name = line.split(['{', ' ']).next().unwrap();
            let value = line.rsplit(' ').next().unwrap().parse().unwrap();
            samples.entry(name.to_string()).or_default().push(value);
        }
    }
    (samples, families)
}

#[test]
fn the_alerting_rules_pass_promtool() {
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prometheus/setup.sh"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "tests/prometheus/setup.sh failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let promtool = stdout.lines().last().unwrap().trim().to_string();
    let checked = Command::new(&promtool)
        .args(["check", "rules"])
        .arg(monitoring().join("toolgate-rules.yaml"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    assert!(checked.status.success(), "promtool check rules: {said}");
    assert!(said.contains("SUCCESS: 7 rules found"), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_metric_the_dashboard_and_rules_name_is_exported_at_zero_by_a_fresh_server() {
    let site = Site::new();
    let server = site.serve(None);
    let r = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let scrape = r.text().await.unwrap();
    let (samples, families) = read(&scrape);

    // Every family has its series from the start.
    let empty: Vec<&String> = families
        .keys()
        .filter(|f| !samples.keys().any(|s| s.starts_with(f.as_str())))
        .collect();
    assert!(
        empty.is_empty(),
        "families without a series: {empty:?}\n{scrape}"
    );
    // Nothing has run: every counter and histogram count is zero (but the store's
    // commits: a server writes as it starts).
    for (name, values) in &samples {
        let counted =
            name.ends_with("_total") || name.ends_with("_count") || name.ends_with("_bucket");
        if counted && !name.starts_with("toolgate_store_commit_duration_seconds") {
            assert!(values.iter().all(|v| *v == 0.0), "{name}: {values:?}");
        }
    }
    // The agents of the folder, their tools and models have their series.
    assert!(
        scrape.contains("toolgate_runs_total{agent=\"assistant\",status=\"completed\"} 0"),
        "{scrape}"
    );
    assert!(
        scrape.contains("tool=\"calculator\",status=\"failed\""),
        "{scrape}"
    );

    let named = named();
    assert!(named.len() >= 15, "{named:?}");
    let missing: Vec<&String> = named.iter().filter(|n| !samples.contains_key(*n)).collect();
    assert!(
        missing.is_empty(),
        "named but not exported: {missing:?}\n{scrape}"
    );
}
