//! The result types as Python classes: each wraps the Rust value, compares by value,
//! reads through properties and turns into plain dicts with `to_dict()` (the JSON shape
//! `toolgate parse` prints).

use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;

use crate::json::object_to_py;

/// The value's JSON form as a dict.
fn dict<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyDict>> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(map)) => object_to_py(py, &map),
        Ok(_) | Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(
            "the value has no JSON object form",
        )),
    }
}

/// One tool call, whatever dialect it was written in.
#[pyclass(frozen, eq, module = "toolgate_parse")]
#[derive(Clone, PartialEq)]
pub struct ToolCall(pub toolgate_parse::ToolCall);

#[pymethods]
impl ToolCall {
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }
    /// The arguments, typed by the tool's schema when one was given (a new dict each time).
    #[getter]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        object_to_py(py, &self.0.arguments)
    }
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.0)
    }
    fn __repr__(&self) -> String {
        format!(
            "ToolCall(id={:?}, name={:?}, arguments={})",
            self.0.id,
            self.0.name,
            serde_json::Value::Object(self.0.arguments.clone())
        )
    }
}

/// One block (or, from a stream, one piece) of the model's reasoning.
#[pyclass(frozen, eq, module = "toolgate_parse")]
#[derive(Clone, PartialEq)]
pub struct Reasoning(pub toolgate_parse::Reasoning);

#[pymethods]
impl Reasoning {
    #[getter]
    fn text(&self) -> &str {
        &self.0.text
    }
    /// Where the text starts in the input, a UTF-8 byte offset.
    #[getter]
    fn start(&self) -> usize {
        self.0.start
    }
    #[getter]
    fn end(&self) -> usize {
        self.0.end
    }
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.0)
    }
    fn __repr__(&self) -> String {
        format!(
            "Reasoning(text={:?}, start={}, end={})",
            self.0.text, self.0.start, self.0.end
        )
    }
}

/// Something odd met while parsing: a call dropped, a tag closed for the model, a
/// value left as written.
#[pyclass(frozen, eq, module = "toolgate_parse")]
#[derive(Clone, PartialEq)]
pub struct Problem(pub toolgate_parse::Problem);

#[pymethods]
impl Problem {
    /// What kind of oddity, in snake_case (`truncated_call`, `invalid_json`, ...).
    #[getter]
    fn kind(&self) -> String {
        match serde_json::to_value(self.0.kind) {
            Ok(serde_json::Value::String(kind)) => kind,
            _ => format!("{:?}", self.0.kind),
        }
    }
    #[getter]
    fn message(&self) -> &str {
        &self.0.message
    }
    /// Where in the input, a UTF-8 byte offset.
    #[getter]
    fn offset(&self) -> usize {
        self.0.offset
    }
    #[getter]
    fn call_id(&self) -> Option<&str> {
        self.0.call_id.as_deref()
    }
    #[getter]
    fn tool(&self) -> Option<&str> {
        self.0.tool.as_deref()
    }
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.0)
    }
    fn __repr__(&self) -> String {
        format!(
            "Problem(kind={:?}, offset={}, message={:?})",
            self.kind(),
            self.0.offset,
            self.0.message
        )
    }
}

/// Text of a streamed output that is not a call or reasoning, as soon as it is sure.
#[pyclass(frozen, eq, module = "toolgate_parse")]
#[derive(Clone, PartialEq)]
pub struct TextDelta {
    #[pyo3(get)]
    pub text: String,
}

#[pymethods]
impl TextDelta {
    #[new]
    fn new(text: String) -> Self {
        Self { text }
    }
    fn __repr__(&self) -> String {
        format!("TextDelta(text={:?})", self.text)
    }
}

/// The result of parsing one model output.
#[pyclass(frozen, eq, module = "toolgate_parse")]
#[derive(Clone, PartialEq)]
pub struct ParsedTurn(pub toolgate_parse::ParsedTurn);

#[pymethods]
impl ParsedTurn {
    /// Everything that is not a call or reasoning, in order.
    #[getter]
    fn text(&self) -> &str {
        &self.0.text
    }
    #[getter]
    fn reasoning(&self) -> Vec<Reasoning> {
        self.0.reasoning.iter().cloned().map(Reasoning).collect()
    }
    #[getter]
    fn calls(&self) -> Vec<ToolCall> {
        self.0.calls.iter().cloned().map(ToolCall).collect()
    }
    #[getter]
    fn problems(&self) -> Vec<Problem> {
        self.0.problems.iter().cloned().map(Problem).collect()
    }
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        dict(py, &self.0)
    }
    fn __repr__(&self) -> String {
        format!(
            "ParsedTurn(text={:?}, reasoning={}, calls={}, problems={})",
            self.0.text,
            self.0.reasoning.len(),
            self.0.calls.len(),
            self.0.problems.len()
        )
    }
}

/// A stream event as the Python object it is handed out as.
pub fn event(py: Python<'_>, event: toolgate_parse::StreamEvent) -> PyResult<Py<PyAny>> {
    use toolgate_parse::StreamEvent as E;
    Ok(match event {
        E::Text(text) => Py::new(py, TextDelta { text })?.into_any(),
        E::Reasoning(r) => Py::new(py, Reasoning(r))?.into_any(),
        E::Call(call) => Py::new(py, ToolCall(call))?.into_any(),
        E::Problem(p) => Py::new(py, Problem(p))?.into_any(),
    })
}
