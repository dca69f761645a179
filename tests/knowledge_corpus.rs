//! The knowledge tests' corpus and peers: documents of every kind toolgate reads
//! (Markdown, HTML with navigation and scripts, a two-page PDF made here, plain text),
//! questions whose answers are known, and an embeddings server (OpenAI's
//! `/v1/embeddings` shape, plus a Cohere-shaped `/v1/rerank`) whose vectors are
//! deterministic: a bag of stemmed words hashed into 512 dimensions, with a few
//! synonyms sharing a dimension, so that meaning reaches where words do not.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The Markdown, HTML and text documents: (path, content).
pub const DOCUMENTS: &[(&str, &str)] = &[
    (
        "guides/tides.md",
        "# Tides\n\nTides are the regular rise and fall of the sea along the coast.\n\n\
         ## Causes\n\nThe gravity of the moon pulls the oceans toward it, raising a bulge of water on the near side of the Earth; \
         a second bulge forms on the far side. The sun pulls too, but less than half as strongly.\n\n\
         ## Spring and neap tides\n\nSpring tides happen at new moon and full moon, when the sun and moon line up and the range between high and low water is largest. \
         Neap tides come at the quarter moons, when the range is smallest.\n\n\
         ## Tide tables\n\nHarbours publish tide tables listing the times and heights of high and low water for each day of the year.\n",
    ),
    (
        "guides/bread.md",
        "# Sourdough bread\n\nSourdough is leavened by wild yeast and lactic acid bacteria instead of baker's yeast.\n\n\
         ## Starter\n\nMix equal weights of flour and water in a jar and feed it every day; after about a week it bubbles and smells sour.\n\n\
         ## Proofing\n\nShape the dough and let it proof overnight in the fridge, for about twelve hours; the cold slows the yeast and deepens the flavour.\n\n\
         ## Baking\n\nBake the loaf in a Dutch oven preheated to 250 degrees Celsius, lid on for twenty minutes, then lid off until the crust is dark brown.\n",
    ),
    (
        "guides/chess.md",
        "# Chess openings\n\nAn opening is the first few moves of a game of chess.\n\n\
         ## Sicilian Defence\n\nThe Sicilian Defence begins 1.e4 c5: Black fights for the centre from the side and the game turns sharp.\n\n\
         ## Queen's Gambit\n\nThe Queen's Gambit begins 1.d4 d5 2.c4: White offers a pawn to draw Black's pawn away from the centre.\n\n\
         ## Castling\n\nCastling moves the king two squares toward a rook and puts the rook on the other side of the king, in one move.\n",
    ),
    (
        "pages/volcanoes.html",
        "<!doctype html><html><head><title>Volcanoes</title><script>window.track('volcano');</script>\
         <style>body { color: red }</style></head><body><nav><a href='/'>Home</a> <a href='/shop'>Shop the gift store</a></nav>\
         <h1>Volcanoes</h1><p>A volcano is an opening in the crust of a planet through which lava, ash and gases escape.</p>\
         <h2>Magma</h2><p>Magma is molten rock beneath the crust. When it reaches the surface it is called lava.</p>\
         <h2>Eruptions</h2><p>An explosive eruption can send a <em>pyroclastic flow</em>, a fast current of hot gas and volcanic ash, down the slopes at hundreds of kilometres per hour.</p>\
         <footer>Copyright the gift store</footer></body></html>",
    ),
    (
        "pages/bees.html",
        "<html><body><header>Site menu</header><h1>Honey bees</h1><p>Honey bees live in colonies of tens of thousands of workers.</p>\
         <h2>Waggle dance</h2><p>A forager that found flowers performs the waggle dance to communicate the direction and distance of the food to her sisters.</p>\
         <h2>The hive</h2><p>The queen lays up to two thousand eggs a day in the wax cells of the comb.</p></body></html>",
    ),
    (
        "notes.txt",
        "Meeting notes, garden committee.\n\nThe budget for the garden project is four thousand euros, agreed by everyone present.\n\n\
         The contractor starts work in March and plants the apple trees in April.\n\nNext meeting: the first Monday of May in the library.\n",
    ),
];

/// The PDF's pages: a router's manual.
pub const PDF_PAGES: &[&[&str]] = &[
    &[
        "Router setup",
        "Connect the router to the modem with the yellow Ethernet cable.",
        "The default admin password is printed on the label under the device.",
    ],
    &[
        "Resetting",
        "Hold the reset button for ten seconds until the light blinks orange.",
        "Firmware updates are downloaded automatically every Sunday night.",
    ],
];

/// Questions, the source that answers each, and words the answering passage holds.
pub const QUESTIONS: &[(&str, &str, &str)] = &[
    (
        "What causes the tides?",
        "guides/tides.md",
        "gravity of the moon",
    ),
    (
        "When do spring tides happen?",
        "guides/tides.md",
        "new moon and full moon",
    ),
    (
        "How long should sourdough proof in the fridge?",
        "guides/bread.md",
        "twelve hours",
    ),
    (
        "What temperature should the Dutch oven be for baking bread?",
        "guides/bread.md",
        "250 degrees",
    ),
    ("What is magma?", "pages/volcanoes.html", "molten rock"),
    (
        "What is a pyroclastic flow?",
        "pages/volcanoes.html",
        "hot gas and volcanic ash",
    ),
    (
        "How do bees communicate the direction of flowers?",
        "pages/bees.html",
        "waggle dance",
    ),
    (
        "How many eggs does the queen lay a day?",
        "pages/bees.html",
        "two thousand eggs",
    ),
    ("How do I reset the router?", "manual.pdf", "ten seconds"),
    (
        "Where is the default admin password?",
        "manual.pdf",
        "label under the device",
    ),
    (
        "What is the budget of the garden project?",
        "notes.txt",
        "four thousand euros",
    ),
    (
        "Which moves begin the Queen's Gambit?",
        "guides/chess.md",
        "1.d4 d5 2.c4",
    ),
];

/// Writes the corpus under `dir/corpus` (the PDF made here).
pub fn write_corpus(dir: &Path) {
    for (path, text) in DOCUMENTS {
        let file = dir.join("corpus").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    std::fs::write(dir.join("corpus/manual.pdf"), pdf(PDF_PAGES)).unwrap();
}

/// A PDF of text pages (Helvetica, one line of text per line given), every offset in
/// its cross-reference table right.
pub fn pdf(pages: &[&[&str]]) -> Vec<u8> {
    let n = pages.len();
    let font = 3 + 2 * n;
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {n} >>",
            (0..n)
                .map(|i| format!("{} 0 R", 3 + 2 * i))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    ];
    for (i, lines) in pages.iter().enumerate() {
        let mut content = String::from("BT /F1 12 Tf 72 720 Td 16 TL\n");
        for line in lines.iter() {
            let escaped = line
                .replace('\\', "\\\\")
                .replace('(', "\\(")
                .replace(')', "\\)");
            content.push_str(&format!("({escaped}) Tj T*\n"));
        }
        content.push_str("ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R /Resources << /Font << /F1 {font} 0 R >> >> >>",
            4 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    objects.push(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
    );
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// The fraction of `QUESTIONS` whose answering passage is among `search`'s results
/// (each result: source and text); the misses, for the failure message.
pub fn recall(search: impl Fn(&str) -> Vec<(String, String)>) -> (f64, Vec<String>) {
    let mut misses = Vec::new();
    for (question, source, words) in QUESTIONS {
        let found = search(question);
        if !found
            .iter()
            .any(|(s, text)| s.ends_with(source) && squash(text).contains(&squash(words)))
        {
            misses.push(format!("{question} -> {found:?}"));
        }
    }
    let hits = QUESTIONS.len() - misses.len();
    (hits as f64 / QUESTIONS.len() as f64, misses)
}

/// Text with its whitespace runs made single spaces.
fn squash(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Dimensions of the fake embeddings.
pub const DIMS: usize = 512;

/// Words that mean the same to the fake model (the second stands for the first).
const SYNONYMS: &[(&str, &str)] = &[
    ("reboot", "reset"),
    ("gadget", "router"),
    ("restart", "reset"),
    ("switch", "button"),
];

/// The fake model's vector for `text`: each stemmed word adds 1 to its dimension.
pub fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; DIMS];
    for word in toolgate::knowledge::terms::terms(text) {
        let word = SYNONYMS
            .iter()
            .find(|(s, _)| *s == word)
            .map_or(word.as_str(), |(_, w)| w)
            .to_string();
        let stem = word.trim_end_matches('s');
        let hash = stem.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        v[(hash % DIMS as u64) as usize] += 1.0;
    }
    v
}

/// What the fake server was asked.
#[derive(Default)]
pub struct Asked {
    /// The `model` of each embeddings request.
    pub models: Vec<String>,
    pub inputs: usize,
    pub reranks: usize,
}

/// The fake embeddings (and rerank) server, on a free loopback port.
pub struct EmbeddingsServer {
    pub base_url: String,
    pub asked: Arc<Mutex<Asked>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl EmbeddingsServer {
    pub fn start() -> EmbeddingsServer {
        let asked = Arc::new(Mutex::new(Asked::default()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = asked.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let app = axum::Router::new()
                    .route("/v1/embeddings", axum::routing::post(embeddings))
                    .route("/v1/rerank", axum::routing::post(rerank))
                    .with_state(state);
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        EmbeddingsServer {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            asked,
            _stop: stop,
        }
    }
}

type State = axum::extract::State<Arc<Mutex<Asked>>>;

/// `POST /v1/embeddings` in OpenAI's shape: `input` a string or an array of them.
async fn embeddings(state: State, body: axum::Json<Value>) -> axum::Json<Value> {
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        other => panic!("input must be a string or an array, not {other}"),
    };
    let model = body["model"]
        .as_str()
        .expect("every request names its model")
        .to_string();
    {
        let mut asked = state.0.lock().unwrap();
        asked.models.push(model.clone());
        asked.inputs += inputs.len();
    }
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": embed(t)}))
        .collect();
    axum::Json(
        json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
    )
}

/// `POST /v1/rerank` in Cohere's shape: the share of the query's words a document has.
async fn rerank(state: State, body: axum::Json<Value>) -> axum::Json<Value> {
    state.0.lock().unwrap().reranks += 1;
    let query = toolgate::knowledge::terms::terms(body["query"].as_str().unwrap());
    let docs = body["documents"].as_array().unwrap();
    let mut results: Vec<Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let words = toolgate::knowledge::terms::terms(d.as_str().unwrap());
            let shared = query.iter().filter(|q| words.contains(q)).count();
            json!({"index": i, "relevance_score": shared as f64 / query.len().max(1) as f64})
        })
        .collect();
    results.sort_by(|a, b| {
        b["relevance_score"]
            .as_f64()
            .unwrap()
            .total_cmp(&a["relevance_score"].as_f64().unwrap())
    });
    axum::Json(
        json!({"id": "rr-1", "results": results, "meta": {"billed_units": {"search_units": 1}}}),
    )
}
