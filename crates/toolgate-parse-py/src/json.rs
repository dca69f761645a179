//! JSON values between Rust and Python: arguments out as dicts, lists and scalars;
//! tool schemas in through the standard library's `json` (what it cannot encode is a
//! `TypeError` naming the value).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

/// `value` as the Python object `json.loads` would give for it.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or_default().into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => object_to_py(py, map)?.into_any(),
    })
}

/// A JSON object as a dict, keys in their order.
pub fn object_to_py<'py>(
    py: Python<'py>,
    map: &serde_json::Map<String, Value>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in map {
        dict.set_item(key, to_py(py, value)?)?;
    }
    Ok(dict)
}

/// A Python value (dicts, lists, strings, numbers, booleans, None) as JSON.
pub fn from_py(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    let text: String = value
        .py()
        .import("json")?
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&text)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("not JSON: {e}")))
}
