//! Knowledge bases: import throughput (MB/s of Markdown: read, hash, extract, chunk,
//! store) and search latency at 100,000 chunks, full text and hybrid (an in-process
//! embeddings server answering the query's vector), on SQLite and PostgreSQL.
//!
//! Run: `cargo bench --bench knowledge` (the import figures print first). The
//! PostgreSQL server is `TOOLGATE_TEST_POSTGRES_URL`'s, else one started with
//! `tests/postgres/server.sh` for the run. The 100,000 chunks are written through the
//! store directly (64-dimension vectors made here), not re-extracted.
#![allow(clippy::too_many_lines, reason = "a benchmark reads best whole")]

use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use divan::Bencher;
use serde_json::{Value, json};
use toolgate::knowledge::{ChunkSize, Endpoint, Knowledge, Mode, Query};
use toolgate::store::Store;
use toolgate::store::knowledge::{NewBase, NewChunk, NewDocument};

fn main() {
    divan::main();
}

const CHUNKS: usize = 100_000;
const PER_DOCUMENT: usize = 100;
const DIMS: usize = 64;
const VOCABULARY: usize = 20_000;

/// A deterministic word list: syllables put together.
fn vocabulary() -> &'static [String] {
    static WORDS: OnceLock<Vec<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        const SYL: [&str; 24] = [
            "ka", "lo", "mi", "ne", "tor", "ван", "sa", "bri", "del", "fu", "gan", "hor", "is",
            "jul", "ker", "lum", "mor", "nix", "op", "pra", "qui", "ros", "sel", "tun",
        ];
        (0..VOCABULARY)
            .map(|i| {
                let (a, b, c) = (i % 24, (i / 24) % 24, (i / 576) % 24);
                format!("{}{}{}", SYL[a], SYL[b], SYL[c]).replace("ван", "van")
            })
            .collect()
    })
}

/// A small linear congruential generator: the same text on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// A word, the frequent ones more often (a rough Zipf).
    fn word(&mut self) -> &'static str {
        let r = self.next() % (VOCABULARY as u64);
        let skewed = (r * r) / VOCABULARY as u64;
        &vocabulary()[skewed as usize]
    }

    fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| self.word())
            .collect::<Vec<_>>()
            .join(" ")
            + "."
    }
}

/// A Markdown document of `sections` sections of three paragraphs.
fn markdown(seed: u64, sections: usize) -> String {
    let mut g = Lcg(seed);
    let mut out = format!("# {}\n\n", g.sentence(4));
    for _ in 0..sections {
        out.push_str(&format!("## {}\n\n", g.sentence(3)));
        for _ in 0..3 {
            out.push_str(&g.sentence(40));
            out.push_str("\n\n");
        }
    }
    out
}

/// The fake model's vector: each word adds 1 to its hashed dimension.
fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIMS];
    for w in toolgate::knowledge::terms::terms(text) {
        let h = w.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        v[(h % DIMS as u64) as usize] += 1.0;
    }
    v
}

/// An embeddings server on a free port (its thread lives as long as the process).
fn embeddings_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    listener
        .set_nonblocking(true)
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    std::thread::spawn(move || {
        let rt = runtime();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/embeddings",
                axum::routing::post(|body: axum::Json<Value>| async move {
                    let inputs: Vec<String> = match &body["input"] {
                        Value::Array(a) => a
                            .iter()
                            .map(|v| v.as_str().unwrap_or_default().to_string())
                            .collect(),
                        v => vec![v.as_str().unwrap_or_default().to_string()],
                    };
                    let data: Vec<Value> = inputs
                        .iter()
                        .enumerate()
                        .map(|(i, t)| json!({"index": i, "embedding": embed(t)}))
                        .collect();
                    axum::Json(json!({"data": data, "model": body["model"]}))
                }),
            );
            let listener =
                tokio::net::TcpListener::from_std(listener).unwrap_or_else(|e| panic!("{e}"));
            axum::serve(listener, app)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        });
    });
    format!("http://127.0.0.1:{port}/v1")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A PostgreSQL server's URL: the environment's, or one started for this run.
fn server() -> String {
    if let Ok(url) = std::env::var("TOOLGATE_TEST_POSTGRES_URL")
        && !url.trim().is_empty()
    {
        return url.trim().to_string();
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres/server.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg(std::process::id().to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(out.status.success(), "{script} could not start PostgreSQL");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no URL"))
        .to_string()
}

/// A fresh PostgreSQL database on the server.
fn postgres_database(tag: &str) -> String {
    let server = server();
    let name = format!("bench_knowledge_{tag}_{}", std::process::id());
    runtime().block_on(async {
        let (client, conn) = tokio_postgres::connect(&server, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let conn = tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        drop(client);
        let _ = conn.await;
    });
    let mut url = url::Url::parse(&server).unwrap_or_else(|e| panic!("{e}"));
    url.set_path(&name);
    url.to_string()
}

/// Imports a folder of Markdown into a new base and prints MB/s.
fn import(store: Store, folder: &Path, backend: &str) {
    let kb = Knowledge::new(store, "bench");
    let rt = runtime();
    rt.block_on(kb.create("import", None, ChunkSize::default()))
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let summary = rt
        .block_on(kb.add("import", &[folder.to_path_buf()], &mut |_| {}))
        .unwrap_or_else(|e| panic!("{e}"));
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{backend}: import of {} Markdown files, {:.1} MB, {} chunks: {:.2} s, {:.2} MB/s",
        summary.added,
        summary.bytes as f64 / 1e6,
        summary.chunks,
        secs,
        summary.bytes as f64 / 1e6 / secs
    );
}

/// One backend with 100,000 chunks in base `big` (the embeddings server answering
/// its queries).
struct Filled {
    kb: Knowledge,
}

/// Both backends, filled once; the import figures printed on the way.
struct Fixture {
    _dir: tempfile::TempDir,
    sqlite: Filled,
    postgres: Filled,
}

/// Writes 100,000 chunks (1,000 documents of 100) with their vectors into base `big`.
fn fill(store: &Store, url: &str) -> Filled {
    let rt = runtime();
    let base = rt
        .block_on(store.create_knowledge_base(NewBase {
            tenant: "bench".into(),
            name: "big".into(),
            embeddings: Some("openai:bench-64".into()),
            chunk: 800,
            overlap: 100,
        }))
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let mut g = Lcg(7);
    for d in 0..CHUNKS / PER_DOCUMENT {
        let chunks = (0..PER_DOCUMENT)
            .map(|i| {
                let text = g.sentence(60);
                NewChunk {
                    ordinal: i as i64,
                    embedding: Some(embed(&text)),
                    start: 0,
                    end: text.len() as i64,
                    section: Some(format!("section {i}")),
                    text,
                }
            })
            .collect();
        let doc = NewDocument {
            source: format!("doc{d}.md"),
            hash: format!("{d}"),
            bytes: 1,
            chunks,
        };
        rt.block_on(store.put_knowledge_document(base.id, doc))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let backend = if store.is_shared() {
        "postgres"
    } else {
        "sqlite"
    };
    println!(
        "{backend}: 100,000 chunks written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let endpoint = Endpoint {
        base_url: url.to_string(),
        api_key: None,
    };
    Filled {
        kb: Knowledge::new(store.clone(), "bench").with_endpoints(endpoint.clone(), endpoint),
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let folder = dir.path().join("markdown");
        std::fs::create_dir(&folder).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..200 {
            std::fs::write(folder.join(format!("doc{i}.md")), markdown(i, 40))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let url = embeddings_server();
        let sqlite = Store::open(dir.path().join("knowledge.db")).unwrap_or_else(|e| panic!("{e}"));
        import(sqlite.clone(), &folder, "sqlite");
        let pg_url = postgres_database("k");
        let postgres = Store::open(&pg_url).unwrap_or_else(|e| panic!("{e}"));
        import(postgres.clone(), &folder, "postgres");
        let sqlite = fill(&sqlite, &url);
        let postgres = fill(&postgres, &url);
        for (backend, filled) in [("sqlite", &sqlite), ("postgres", &postgres)] {
            for mode in [Mode::Fulltext, Mode::Hybrid] {
                percentiles(backend, filled, mode);
            }
        }
        Fixture {
            _dir: dir,
            sqlite,
            postgres,
        }
    })
}

/// Prints p50 and p99 of 200 searches (a sample too small for divan's own table).
fn percentiles(backend: &str, filled: &Filled, mode: Mode) {
    let rt = runtime();
    let mut times: Vec<f64> = queries()
        .iter()
        .cycle()
        .take(200)
        .map(|text| {
            let q = Query {
                text: text.clone(),
                top_k: 5,
                threshold: 0.0,
                mode: Some(mode),
                rerank: None,
            };
            let started = Instant::now();
            let found = rt
                .block_on(filled.kb.search("big", &q))
                .unwrap_or_else(|e| panic!("{e}"));
            divan::black_box(found);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let mode: &str = mode.into();
    println!(
        "{backend} {mode} at 100,000 chunks: p50 {:.1} ms, p99 {:.1} ms",
        times[99], times[197]
    );
}

/// Three words of the vocabulary (a fixed sequence, so every run asks the same).
fn queries() -> Vec<String> {
    let mut g = Lcg(99);
    (0..64)
        .map(|_| format!("{} {} {}", g.word(), g.word(), g.word()))
        .collect()
}

fn search(bencher: Bencher, filled: &Filled, mode: Mode) {
    let rt = runtime();
    let queries = queries();
    let mut i = 0;
    bencher.bench_local(|| {
        i = (i + 1) % queries.len();
        let q = Query {
            text: queries[i].clone(),
            top_k: 5,
            threshold: 0.0,
            mode: Some(mode),
            rerank: None,
        };
        let found = rt
            .block_on(filled.kb.search("big", &q))
            .unwrap_or_else(|e| panic!("{e}"));
        divan::black_box(found);
    });
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn sqlite_fulltext(bencher: Bencher) {
    search(bencher, &fixture().sqlite, Mode::Fulltext);
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn sqlite_hybrid(bencher: Bencher) {
    search(bencher, &fixture().sqlite, Mode::Hybrid);
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn postgres_fulltext(bencher: Bencher) {
    search(bencher, &fixture().postgres, Mode::Fulltext);
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn postgres_hybrid(bencher: Bencher) {
    search(bencher, &fixture().postgres, Mode::Hybrid);
}
