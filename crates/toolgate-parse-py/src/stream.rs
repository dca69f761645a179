//! `StreamParser`: a model output fed in chunks (str, or bytes cut anywhere, even inside
//! a character), events handed out as soon as they are sure; `finish()` ends it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use toolgate_parse::InputParser;

use crate::types::event;

/// Parses one model output fed in chunks. Any split gives what `parse` gives for the
/// whole: the text deltas join into its text, the calls, reasoning pieces and problems
/// come in its order.
#[pyclass(module = "toolgate_parse")]
pub struct StreamParser {
    /// `None` once finished.
    parser: Option<InputParser>,
}

#[pymethods]
impl StreamParser {
    #[new]
    #[pyo3(signature = (dialect = "auto", tools = None, *, strict = false, reasoning_opened = false, id_prefix = "call_"))]
    fn new(
        dialect: &str,
        tools: Option<&Bound<'_, PyAny>>,
        strict: bool,
        reasoning_opened: bool,
        id_prefix: &str,
    ) -> PyResult<Self> {
        let opts = crate::options::build(dialect, tools, strict, reasoning_opened, id_prefix)?;
        Ok(Self {
            parser: Some(InputParser::new(opts)),
        })
    }

    /// Reads the next chunk; returns the events it completed: `TextDelta`, `Reasoning`
    /// (a piece of a block), `ToolCall`, `Problem`.
    fn feed(&mut self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        let parser = self
            .parser
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("feed() after finish(): the stream has ended"))?;
        let events = if let Ok(bytes) = chunk.cast::<PyBytes>() {
            parser.feed_bytes(bytes.as_bytes())
        } else if let Ok(text) = chunk.cast::<PyString>() {
            parser.feed(&text.to_cow()?)
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "feed() takes str or bytes",
            ));
        };
        events.into_iter().map(|e| event(py, e)).collect()
    }

    /// Ends the output: the events of what was held back (a call the output ended
    /// inside becomes text and a `truncated_call` problem).
    fn finish(&mut self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let parser = self
            .parser
            .take()
            .ok_or_else(|| PyValueError::new_err("finish() called twice"))?;
        parser.finish().into_iter().map(|e| event(py, e)).collect()
    }
}
