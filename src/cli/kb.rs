//! `toolgate kb`: knowledge bases in the database: create one, add files and folders
//! to it (progress on stderr, one line per file that cannot be read), list, show,
//! search (full text, semantic, hybrid; optional rerank), remove a base or a source.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use toolgate_knowledge::{
    ChunkSize, Imported, Knowledge, KnowledgeError, Mode, Passage, Query, parse_spec,
};

use super::out::{self, print, print_json, say};
use super::run::runtime;
use super::{Failure, open_existing_store, open_store, table};

#[derive(Args, Debug)]
pub struct KbArgs {
    #[command(subcommand)]
    command: KbCommand,
}

#[derive(Subcommand, Debug)]
enum KbCommand {
    /// Create a knowledge base.
    #[command(after_help = "Book: docs/src/howto/knowledge.md")]
    Create {
        name: String,
        /// `openai:MODEL` (an OpenAI-compatible /v1/embeddings: OPENAI_BASE_URL,
        /// OPENAI_API_KEY) for semantic and hybrid search, or `none` for full text only.
        #[arg(long, default_value = "none")]
        embeddings: String,
        /// Characters per chunk.
        #[arg(long, default_value_t = 800)]
        chunk: usize,
        /// Characters a chunk shares with the one before it (same section only).
        #[arg(long, default_value_t = 100)]
        overlap: usize,
    },
    /// Add files and folders (Markdown, text, HTML, PDF); unchanged files are skipped,
    /// changed ones replaced.
    #[command(after_help = "Book: docs/src/howto/knowledge.md")]
    Add {
        name: String,
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// One JSON object per file on stdout, then the totals.
        #[arg(long)]
        json: bool,
    },
    /// List the knowledge bases.
    #[command(after_help = "Book: docs/src/howto/knowledge.md")]
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show a knowledge base and its sources.
    #[command(after_help = "Book: docs/src/howto/knowledge.md")]
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Search a knowledge base; passages with source, section, position and score (0-1).
    #[command(after_help = "Book: docs/src/howto/knowledge.md")]
    Search(SearchArgs),
    /// Remove a knowledge base, or one source from it.
    #[command(after_help = "Book: docs/src/howto/knowledge.md")]
    Rm {
        name: String,
        /// The source to remove (as `kb show` lists it); without it, the whole base.
        source: Option<String>,
    },
}

#[derive(Args, Debug)]
struct SearchArgs {
    name: String,
    query: String,
    /// Passages to return at most.
    #[arg(long, default_value_t = 5)]
    top_k: usize,
    /// The lowest score kept, 0 to 1 (the same scale in every mode).
    #[arg(long, default_value_t = 0.0)]
    threshold: f64,
    /// How to rank (default: hybrid when the base has embeddings, else fulltext).
    #[arg(long)]
    mode: Option<ModeArg>,
    /// Reorder the candidates with this rerank model (a Cohere/Jina-style /rerank:
    /// TOOLGATE_RERANK_BASE_URL, TOOLGATE_RERANK_API_KEY, else the OpenAI ones).
    #[arg(long, value_name = "MODEL")]
    rerank: Option<String>,
    /// Refuse unless the base was made with this embeddings model.
    #[arg(long)]
    embeddings: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
enum ModeArg {
    Fulltext,
    Semantic,
    Hybrid,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Fulltext => Mode::Fulltext,
            ModeArg::Semantic => Mode::Semantic,
            ModeArg::Hybrid => Mode::Hybrid,
        }
    }
}

/// The tenant the bases belong to: `--tenant`, else `default` (as new runs).
fn tenant() -> &'static str {
    super::tenant().unwrap_or("default")
}

/// A knowledge error as the CLI's failure (bad input, or anything else).
fn failure(e: KnowledgeError) -> Failure {
    if e.is_bad_input() {
        Failure::bad_input(e.to_string())
    } else {
        Failure::other(e.to_string())
    }
}

pub fn run(args: KbArgs, db: &Path) -> Result<ExitCode, Failure> {
    let rt = runtime()?;
    match args.command {
        KbCommand::Create {
            name,
            embeddings,
            chunk,
            overlap,
        } => {
            let size = ChunkSize::new(chunk, overlap).map_err(Failure::bad_input)?;
            let model = parse_spec(&embeddings).map_err(failure)?;
            let kb = Knowledge::new(open_store(db)?, tenant());
            rt.block_on(kb.create(&name, model, size))
                .map_err(failure)?;
            say!("toolgate: knowledge base {name} created");
            Ok(ExitCode::SUCCESS)
        }
        KbCommand::Add { name, paths, json } => {
            let kb = Knowledge::new(open_existing_store(db)?, tenant());
            add(&rt, &kb, &name, &paths, json)
        }
        KbCommand::List { json } => {
            let kb = Knowledge::new(open_existing_store(db)?, tenant());
            let bases = rt.block_on(kb.list()).map_err(failure)?;
            if json {
                return print_json(&mut out::stdout(), &bases, false).map(|()| ExitCode::SUCCESS);
            }
            let rows: Vec<Vec<String>> = bases
                .iter()
                .map(|b| {
                    vec![
                        b.name.clone(),
                        b.embeddings.clone().unwrap_or_else(|| "none".into()),
                        b.documents.to_string(),
                        b.chunks.to_string(),
                    ]
                })
                .collect();
            print(&table::render(
                &["NAME", "EMBEDDINGS", "SOURCES", "CHUNKS"],
                &rows,
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        KbCommand::Show { name, json } => {
            let kb = Knowledge::new(open_existing_store(db)?, tenant());
            let detail = rt.block_on(kb.show(&name)).map_err(failure)?;
            if json {
                return print_json(&mut out::stdout(), &detail, false).map(|()| ExitCode::SUCCESS);
            }
            let b = &detail.base;
            print(&format!(
                "{}: embeddings {}, chunk {} overlap {}, {} sources, {} chunks, {} bytes\n",
                b.name,
                b.embeddings.as_deref().unwrap_or("none"),
                b.chunk,
                b.overlap,
                b.documents,
                b.chunks,
                b.bytes
            ))?;
            let rows: Vec<Vec<String>> = detail
                .sources
                .iter()
                .map(|d| {
                    vec![
                        d.source.clone(),
                        d.chunks.to_string(),
                        d.bytes.to_string(),
                        d.hash.get(..12).unwrap_or(&d.hash).to_string(),
                    ]
                })
                .collect();
            print(&table::render(
                &["SOURCE", "CHUNKS", "BYTES", "SHA-256"],
                &rows,
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        KbCommand::Search(args) => search(&rt, db, args),
        KbCommand::Rm { name, source } => {
            let kb = Knowledge::new(open_existing_store(db)?, tenant());
            match source {
                Some(source) => {
                    rt.block_on(kb.remove_source(&name, &source))
                        .map_err(failure)?;
                    say!("toolgate: {source} removed from knowledge base {name}");
                }
                None => {
                    rt.block_on(kb.remove(&name)).map_err(failure)?;
                    say!("toolgate: knowledge base {name} removed");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `kb add`: each file's outcome as it is done (on a terminal, or as JSON), failures
/// always; exit 1 when any file failed.
fn add(
    rt: &tokio::runtime::Runtime,
    kb: &Knowledge,
    name: &str,
    paths: &[PathBuf],
    json: bool,
) -> Result<ExitCode, Failure> {
    let chatty = std::io::stderr().is_terminal();
    let mut done = 0usize;
    let mut written: Result<(), Failure> = Ok(());
    let mut progress = |event: &Imported| {
        done += 1;
        if json && written.is_ok() {
            written = print_json(&mut out::stdout(), event, false);
        }
        match event {
            Imported::Failed { source, error } => say!("toolgate: {source}: {error}"),
            Imported::Stored {
                source,
                stored,
                chunks,
                ..
            } if chatty && !json => {
                let what: &str = stored.into();
                say!("toolgate: [{done}] {source}: {what}, {chunks} chunks");
            }
            Imported::Stored { .. } => {}
        }
    };
    let summary = rt
        .block_on(kb.add(name, paths, &mut progress))
        .map_err(failure)?;
    written?;
    if json {
        print_json(&mut out::stdout(), &summary, false)?;
    } else {
        say!(
            "toolgate: knowledge base {name}: {} added, {} replaced, {} unchanged, {} failed ({} chunks, {} bytes read)",
            summary.added,
            summary.replaced,
            summary.unchanged,
            summary.failed,
            summary.chunks,
            summary.bytes
        );
    }
    Ok(if summary.failed > 0 {
        ExitCode::from(super::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `kb search`: passages as JSON, or as text blocks naming source, section and score.
fn search(rt: &tokio::runtime::Runtime, db: &Path, args: SearchArgs) -> Result<ExitCode, Failure> {
    let kb = Knowledge::new(open_existing_store(db)?, tenant());
    let base = rt.block_on(kb.base(&args.name)).map_err(failure)?;
    kb.embedder(&base, args.embeddings.as_deref())
        .map_err(failure)?;
    let query = Query {
        text: args.query,
        top_k: args.top_k,
        threshold: args.threshold,
        mode: args.mode.map(Mode::from),
        rerank: args.rerank,
    };
    let passages = rt
        .block_on(kb.search(&args.name, &query))
        .map_err(failure)?;
    if args.json {
        print_json(&mut out::stdout(), &passages, false)?;
    } else {
        print(&passages.iter().map(render).collect::<String>())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One passage as text: a header line with its place and score, then its text.
fn render(p: &Passage) -> String {
    let section = p
        .section
        .as_deref()
        .map(|s| format!(" § {s}"))
        .unwrap_or_default();
    format!(
        "{}{section} (chunk {}, bytes {}-{}) score {:.3}\n{}\n\n",
        p.source, p.chunk, p.start, p.end, p.score, p.text
    )
}
