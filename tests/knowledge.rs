//! Knowledge bases through the binary, on both store backends: full-text recall on a
//! corpus of Markdown, HTML, PDF and text (questions with known answers), semantic and
//! hybrid search against an embeddings server, a refused model mismatch, re-adding
//! (unchanged: nothing; changed: replaced), unreadable files, scores on one scale, a
//! rerank step, and tenants walled off from each other's bases.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::databases::TestDb;
use crate::knowledge_corpus::{EmbeddingsServer, recall, write_corpus};

/// `toolgate --db DB ARGS` in `dir`, with the embeddings endpoint `base_url` if any.
fn kb(db: &TestDb, dir: &Path, base_url: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.current_dir(dir).arg("--db").arg(db.arg()).args(args);
    cmd.env_remove("OPENAI_API_KEY")
        .env_remove("TOOLGATE_RERANK_BASE_URL");
    match base_url {
        Some(url) => cmd.env("OPENAI_BASE_URL", url),
        None => cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
    };
    cmd.output().unwrap()
}

/// The output, checked to have succeeded.
fn ok(db: &TestDb, o: Output) -> Output {
    assert!(
        o.status.success(),
        "{}: {:?}\nstdout: {}\nstderr: {}",
        db.name(),
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The last JSON line of the output (`kb add --json`'s totals).
fn last_line(o: &Output) -> Value {
    let text = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// `kb search NAME QUERY --json ARGS`: each passage's source and text.
fn search(
    db: &TestDb,
    dir: &Path,
    url: Option<&str>,
    q: &str,
    args: &[&str],
) -> Vec<(String, String)> {
    let mut all = vec!["kb", "search", "docs", q, "--json"];
    all.extend_from_slice(args);
    let out = ok(db, kb(db, dir, url, &all));
    json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["source"].as_str().unwrap().to_string(),
                p["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A folder with the corpus and a base `docs` holding it (small chunks: the answer
/// must be found among many passages, not among seven documents).
fn corpus_base(db: &TestDb, url: Option<&str>, embeddings: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_corpus(dir.path());
    let p = dir.path();
    ok(
        db,
        kb(
            db,
            p,
            url,
            &[
                "kb",
                "create",
                "docs",
                "--embeddings",
                embeddings,
                "--chunk",
                "120",
                "--overlap",
                "30",
            ],
        ),
    );
    let added = ok(
        db,
        kb(db, p, url, &["kb", "add", "docs", "corpus", "--json"]),
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&added.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = lines.last().unwrap();
    assert_eq!(summary["added"], 7, "{}: {lines:?}", db.name());
    assert_eq!(summary["failed"], 0, "{}: {lines:?}", db.name());
    assert!(
        summary["chunks"].as_u64().unwrap() >= 25,
        "{}: {summary}",
        db.name()
    );
    dir
}

#[test]
fn full_text_search_finds_the_answers_on_both_backends() {
    for db in TestDb::both() {
        let dir = corpus_base(&db, None, "none");
        let p = dir.path();
        let (r, misses) = recall(|q| search(&db, p, None, q, &["--mode", "fulltext"]));
        assert!(
            r >= 0.9,
            "{}: full-text recall@5 {r}: {misses:#?}",
            db.name()
        );

        // The PDF came apart by page, the HTML without its scripts and navigation.
        let shown = json(&ok(
            &db,
            kb(&db, p, None, &["kb", "show", "docs", "--json"]),
        ));
        let sources: Vec<&str> = shown["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["source"].as_str().unwrap())
            .collect();
        assert_eq!(sources.len(), 7, "{sources:?}");
        let reset = json(&ok(
            &db,
            kb(
                &db,
                p,
                None,
                &[
                    "kb",
                    "search",
                    "docs",
                    "reset button",
                    "--json",
                    "--top-k",
                    "1",
                ],
            ),
        ));
        assert_eq!(
            reset[0]["source"],
            "corpus/manual.pdf",
            "{}: {reset}",
            db.name()
        );
        assert_eq!(reset[0]["section"], "page 2", "{}: {reset}", db.name());
        assert_eq!(reset[0]["score"], 1.0);
        for gone in ["gift store", "window.track", "Site menu"] {
            let hits = search(&db, p, None, gone, &[]);
            assert!(
                hits.iter().all(|(_, t)| !t.contains(gone)),
                "{}: {gone}: {hits:?}",
                db.name()
            );
        }
        // Sections carry the heading trail.
        let proof = json(&ok(
            &db,
            kb(
                &db,
                p,
                None,
                &[
                    "kb",
                    "search",
                    "docs",
                    "proof overnight fridge",
                    "--json",
                    "--top-k",
                    "1",
                ],
            ),
        ));
        assert_eq!(
            proof[0]["section"],
            "Sourdough bread > Proofing",
            "{}",
            db.name()
        );
    }
}

#[test]
fn semantic_and_hybrid_search_use_the_embeddings_endpoint() {
    for db in TestDb::both() {
        let server = EmbeddingsServer::start();
        let url = Some(server.base_url.as_str());
        let dir = corpus_base(&db, url, "openai:fake-embed");
        let p = dir.path();
        for mode in ["semantic", "hybrid"] {
            let (r, misses) = recall(|q| search(&db, p, url, q, &["--mode", mode]));
            assert!(r >= 0.9, "{}: {mode} recall@5 {r}: {misses:#?}", db.name());
        }
        // Words the documents do not use, meaning what they say.
        let q = "reboot switch";
        assert!(search(&db, p, url, q, &["--mode", "fulltext"]).is_empty());
        for mode in ["semantic", "hybrid"] {
            let hits = search(&db, p, url, q, &["--mode", mode, "--top-k", "1"]);
            assert!(
                hits[0].1.contains("reset button"),
                "{}: {mode}: {hits:?}",
                db.name()
            );
        }
        let asked = server.asked.lock().unwrap();
        assert!(
            asked.models.iter().all(|m| m == "fake-embed"),
            "{:?}",
            asked.models
        );
        assert!(asked.inputs >= 25);
        drop(asked);

        // Another model's vectors do not compare: refused, as bad input.
        let refused = kb(
            &db,
            p,
            url,
            &[
                "kb",
                "search",
                "docs",
                "tides",
                "--embeddings",
                "openai:other",
            ],
        );
        assert_eq!(refused.status.code(), Some(2), "{}", db.name());
        assert!(String::from_utf8_lossy(&refused.stderr).contains("openai:fake-embed"));
    }
}

#[test]
fn scores_share_one_scale_and_rerank_reorders() {
    let db = TestDb::sqlite();
    let server = EmbeddingsServer::start();
    let url = Some(server.base_url.as_str());
    let dir = corpus_base(&db, url, "openai:fake-embed");
    let p = dir.path();
    for mode in ["fulltext", "semantic", "hybrid"] {
        let all = json(&ok(
            &db,
            kb(
                &db,
                p,
                url,
                &[
                    "kb",
                    "search",
                    "docs",
                    "moon tides",
                    "--json",
                    "--mode",
                    mode,
                    "--top-k",
                    "20",
                ],
            ),
        ));
        let scores: Vec<f64> = all
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["score"].as_f64().unwrap())
            .collect();
        assert!(
            scores.iter().all(|s| (0.0..=1.0).contains(s)),
            "{mode}: {scores:?}"
        );
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "{mode}: {scores:?}"
        );
        let kept = json(&ok(
            &db,
            kb(
                &db,
                p,
                url,
                &[
                    "kb",
                    "search",
                    "docs",
                    "moon tides",
                    "--json",
                    "--mode",
                    mode,
                    "--top-k",
                    "20",
                    "--threshold",
                    "0.5",
                ],
            ),
        ));
        let expected = scores.iter().filter(|s| **s >= 0.5).count();
        assert_eq!(kept.as_array().unwrap().len(), expected, "{mode}");
    }
    let reranked = json(&ok(
        &db,
        kb(
            &db,
            p,
            url,
            &[
                "kb",
                "search",
                "docs",
                "queen eggs",
                "--json",
                "--rerank",
                "fake-rerank",
            ],
        ),
    ));
    assert_eq!(server.asked.lock().unwrap().reranks, 1);
    assert!(
        reranked[0]["text"]
            .as_str()
            .unwrap()
            .contains("two thousand eggs"),
        "{reranked}"
    );
    assert_eq!(reranked[0]["score"], 1.0);
}

#[test]
fn re_adding_skips_unchanged_files_and_replaces_changed_ones() {
    for db in TestDb::both() {
        let dir = corpus_base(&db, None, "none");
        let p = dir.path();
        let again = last_line(&ok(
            &db,
            kb(
                &db,
                p,
                None,
                &[
                    "kb",
                    "add",
                    "docs",
                    "corpus/notes.txt",
                    "corpus/guides",
                    "--json",
                ],
            ),
        ));
        assert_eq!(
            (
                again["unchanged"].as_u64(),
                again["added"].as_u64(),
                again["replaced"].as_u64()
            ),
            (Some(4), Some(0), Some(0)),
            "{}: {again}",
            db.name()
        );

        std::fs::write(
            p.join("corpus/notes.txt"),
            "The budget for the garden project is now six thousand euros.\n",
        )
        .unwrap();
        ok(
            &db,
            kb(&db, p, None, &["kb", "add", "docs", "corpus/notes.txt"]),
        );
        let hits = search(&db, p, None, "garden budget", &["--top-k", "10"]);
        let notes: Vec<&String> = hits
            .iter()
            .filter(|(s, _)| s == "corpus/notes.txt")
            .map(|(_, t)| t)
            .collect();
        assert_eq!(
            notes.len(),
            1,
            "{}: the old chunks are gone: {hits:?}",
            db.name()
        );
        assert!(notes[0].contains("six thousand"), "{}", db.name());

        ok(
            &db,
            kb(&db, p, None, &["kb", "rm", "docs", "corpus/notes.txt"]),
        );
        assert!(
            search(&db, p, None, "garden budget", &[])
                .iter()
                .all(|(s, _)| s != "corpus/notes.txt")
        );
        let missing = kb(&db, p, None, &["kb", "rm", "docs", "corpus/notes.txt"]);
        assert_eq!(missing.status.code(), Some(2), "{}", db.name());
    }
}

#[test]
fn an_unreadable_file_is_one_line_and_the_rest_is_added() {
    let db = TestDb::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir(p.join("in")).unwrap();
    std::fs::write(p.join("in/broken.pdf"), b"%PDF-1.4 this is not a PDF").unwrap();
    std::fs::write(p.join("in/latin1.txt"), b"caf\xe9 au lait").unwrap();
    std::fs::write(
        p.join("in/good.md"),
        "# Good\n\nThe lighthouse keeper lights the lamp at dusk.\n",
    )
    .unwrap();
    std::fs::write(p.join("in/picture.png"), b"\x89PNG").unwrap();
    ok(&db, kb(&db, p, None, &["kb", "create", "docs"]));
    let out = kb(&db, p, None, &["kb", "add", "docs", "in", "missing.md"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let failures: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("in/") || l.contains("missing.md"))
        .collect();
    assert_eq!(failures.len(), 3, "{err}");
    assert!(err.contains("in/broken.pdf: cannot read the PDF"), "{err}");
    assert!(err.contains("in/latin1.txt: not UTF-8"), "{err}");
    assert!(err.contains("missing.md: cannot read it"), "{err}");
    assert!(err.contains("1 added"), "{err}");
    assert_eq!(search(&db, p, None, "lighthouse", &[]).len(), 1);
}

#[test]
fn tenants_cannot_see_or_search_each_others_bases() {
    for db in TestDb::both() {
        let dir = tempfile::tempdir().unwrap();
        write_corpus(dir.path());
        let p = dir.path();
        ok(
            &db,
            kb(&db, p, None, &["--tenant", "acme", "kb", "create", "docs"]),
        );
        ok(
            &db,
            kb(
                &db,
                p,
                None,
                &["--tenant", "acme", "kb", "add", "docs", "corpus/notes.txt"],
            ),
        );
        let theirs = kb(
            &db,
            p,
            None,
            &["--tenant", "globex", "kb", "search", "docs", "budget"],
        );
        assert_eq!(theirs.status.code(), Some(2), "{}", db.name());
        assert!(
            String::from_utf8_lossy(&theirs.stderr).contains("there is no knowledge base 'docs'")
        );
        let listed = json(&ok(
            &db,
            kb(
                &db,
                p,
                None,
                &["--tenant", "globex", "kb", "list", "--json"],
            ),
        ));
        assert_eq!(listed, serde_json::json!([]), "{}", db.name());
        // Their own base of the same name holds only their documents.
        ok(
            &db,
            kb(
                &db,
                p,
                None,
                &["--tenant", "globex", "kb", "create", "docs"],
            ),
        );
        ok(
            &db,
            kb(
                &db,
                p,
                None,
                &[
                    "--tenant",
                    "globex",
                    "kb",
                    "add",
                    "docs",
                    "corpus/guides/tides.md",
                ],
            ),
        );
        let budget = json(&ok(
            &db,
            kb(
                &db,
                p,
                None,
                &[
                    "--tenant",
                    "globex",
                    "kb",
                    "search",
                    "docs",
                    "garden budget euros",
                    "--json",
                ],
            ),
        ));
        assert_eq!(budget, serde_json::json!([]), "{}", db.name());
        let removed = kb(&db, p, None, &["--tenant", "globex", "kb", "rm", "docs"]);
        assert!(removed.status.success());
        let still = json(&ok(
            &db,
            kb(
                &db,
                p,
                None,
                &[
                    "--tenant",
                    "acme",
                    "kb",
                    "search",
                    "docs",
                    "garden budget",
                    "--json",
                ],
            ),
        ));
        assert_eq!(still.as_array().unwrap().len(), 1, "{}", db.name());
    }
}
