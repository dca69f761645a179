//! `toolgate parse`: one model output (or many, with `--jsonl`) to JSON on stdout.

mod jsonl;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use toolgate::parse::{Dialect, InputParser, ParseOptions, ParsedTurn, collect};

use super::out::{self, print_json};
use super::{Failure, load_tools};

#[derive(Args, Debug)]
pub struct ParseArgs {
    /// The dialect: auto, xml, hermes, qwen3-coder, invoke, openai, glm, kimi-k2,
    /// deepseek, harmony, mistral, llama3, pythonic (bare JSON and pythonic lists only
    /// by name).
    #[arg(long, default_value = "auto")]
    dialect: String,
    /// Folder of tool files whose schemas guide value coercion [default: ./tools].
    #[arg(long, env = "TOOLGATE_TOOLS")]
    tools: Option<PathBuf>,
    /// Report structural faults and drop the calls that have them, instead of recovering.
    #[arg(long)]
    strict: bool,
    /// The prompt opened a `<think>` block (a template that starts the model thinking):
    /// the output is reasoning up to its `</think>`.
    #[arg(long)]
    reasoning_opened: bool,
    /// Feed the input through the streaming parser in chunks of N bytes (same output).
    #[arg(long, value_name = "N")]
    stream: Option<usize>,
    /// Read one model output per line (a JSON object with a "text" field); print one result per line.
    #[arg(long)]
    jsonl: bool,
    /// Indent the JSON output.
    #[arg(long)]
    pretty: bool,
    /// The model output to parse; stdin when absent.
    file: Option<PathBuf>,
}

pub fn run(args: ParseArgs) -> Result<ExitCode, Failure> {
    let dialect: Dialect = args.dialect.parse().map_err(Failure::bad_input)?;
    if args.stream == Some(0) {
        return Err(Failure::bad_input(
            "--stream needs a chunk size of at least 1 byte",
        ));
    }
    let tools = load_tools(args.tools.as_deref())?;
    let opts = ParseOptions::default()
        .with_dialect(dialect)
        .with_strict(args.strict)
        .with_reasoning_opened(args.reasoning_opened)
        .with_schemas(Arc::new(tools.schemas()));
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out::stdout());
    let pretty = args.pretty;
    if !args.jsonl {
        let input = read_input(args.file.as_ref())?;
        let turn = parse_one(strip_bom(&input), &opts, args.stream);
        print_json(&mut out, &turn, pretty)?;
        return flush(out).map(|()| ExitCode::SUCCESS);
    }
    let settings = jsonl::Settings {
        opts: &opts,
        stream: args.stream,
        pretty,
    };
    let bad_lines = match args.file.as_ref() {
        Some(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| Failure::bad_input(format!("cannot read {}: {e}", path.display())))?;
            jsonl::run(file, &mut out, settings)?
        }
        None => jsonl::run(std::io::stdin(), &mut out, settings)?,
    };
    flush(out)?;
    if let Some(first) = bad_lines.first() {
        return Err(Failure::bad_input(format!(
            "{} input line(s) could not be read, the first at line {first}; their results say why",
            bad_lines.len()
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn flush(mut out: impl Write) -> Result<(), Failure> {
    out.flush().map_err(out::write_failure)
}

fn read_input(file: Option<&PathBuf>) -> Result<Vec<u8>, Failure> {
    match file {
        Some(path) => std::fs::read(path)
            .map_err(|e| Failure::bad_input(format!("cannot read {}: {e}", path.display()))),
        None => {
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .map_err(|e| Failure::bad_input(format!("cannot read stdin: {e}")))?;
            Ok(buf)
        }
    }
}

fn strip_bom(b: &[u8]) -> &[u8] {
    b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b)
}

fn parse_one(input: &[u8], opts: &ParseOptions, stream: Option<usize>) -> ParsedTurn {
    let mut parser = InputParser::new(opts.clone());
    let mut turn = ParsedTurn::default();
    match stream {
        Some(n) => {
            for chunk in input.chunks(n) {
                collect(&mut turn, parser.feed_bytes(chunk));
            }
        }
        None => collect(&mut turn, parser.feed_bytes(input)),
    }
    collect(&mut turn, parser.finish());
    turn
}
