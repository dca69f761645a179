//! toolgate-parse for Python: the module `toolgate_parse._native`, which
//! `toolgate_parse` re-exports. `parse` reads one whole model output, `StreamParser`
//! one fed in chunks; both give the Rust crate's results as Python objects.

mod json;
mod options;
mod stream;
mod types;

use pyo3::prelude::*;

/// Parses one whole model output: text in any text dialect, a chat.completion JSON or a
/// recorded SSE stream (with `dialect="auto"` or `"openai"`).
#[pyfunction]
#[pyo3(signature = (text, dialect = "auto", tools = None, *, strict = false, reasoning_opened = false, id_prefix = "call_"))]
fn parse(
    py: Python<'_>,
    text: &str,
    dialect: &str,
    tools: Option<&Bound<'_, PyAny>>,
    strict: bool,
    reasoning_opened: bool,
    id_prefix: &str,
) -> PyResult<types::ParsedTurn> {
    let opts = options::build(dialect, tools, strict, reasoning_opened, id_prefix)?;
    let turn = py.detach(|| toolgate_parse::parse_input(text, &opts));
    Ok(types::ParsedTurn(turn))
}

/// The dialect names `parse` and `StreamParser` take (aliases left out).
#[pyfunction]
fn dialects() -> Vec<&'static str> {
    options::DIALECTS.to_vec()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(dialects, m)?)?;
    m.add_class::<types::ParsedTurn>()?;
    m.add_class::<types::ToolCall>()?;
    m.add_class::<types::Reasoning>()?;
    m.add_class::<types::Problem>()?;
    m.add_class::<types::TextDelta>()?;
    m.add_class::<stream::StreamParser>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
