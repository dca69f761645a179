//! Reading a file a person wrote (an agent, a tool) into the type that holds it, with a
//! fault that names the field the deserializer was in, and its line, whatever the
//! syntax: block YAML, flow YAML or JSON.

use serde::de::DeserializeOwned;

use toolgate_protocol::error_line::first_line;

/// Why a file could not be read into its type: the line (when known) and one line
/// naming the field (`field 'mode': unknown variant ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFault {
    pub line: Option<usize>,
    pub message: String,
}

/// Reads YAML `text` (JSON and flow style included) into `T`.
///
/// ```
/// #[derive(serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Agent { name: String, #[serde(default)] mode: Option<bool> }
/// let fault = toolgate_tool::user_file::from_yaml::<Agent>("{\"name\": \"a\", \"mode\": 3}")
///     .err().unwrap();
/// assert!(fault.message.starts_with("field 'mode': "), "{}", fault.message);
/// assert_eq!(fault.line, Some(1));
/// ```
pub fn from_yaml<T: DeserializeOwned>(text: &str) -> Result<T, FileFault> {
    let mut path = None;
    serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = Some(e.path().to_string());
            e.into_inner()
        })
    })
    .map_err(|e| FileFault {
        line: e.location().map(|l| l.line() as usize),
        message: named(path.as_deref(), &first_line(&e.to_string())),
    })
}

/// Reads JSON `text` into `T`.
pub fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, FileFault> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        json_fault(Some(&path), &e.into_inner())
    })?;
    de.end().map_err(|e| json_fault(None, &e))?;
    Ok(value)
}

/// A serde_json error as a fault, led by the field at `path`.
fn json_fault(path: Option<&str>, e: &serde_json::Error) -> FileFault {
    FileFault {
        line: Some(e.line()).filter(|l| *l > 0),
        message: named(path, &without_position(&e.to_string())),
    }
}

/// `message` led by the field at `path` (`.` is the file itself: no field to name).
fn named(path: Option<&str>, message: &str) -> String {
    match path.filter(|p| !p.is_empty() && *p != "." && *p != "?") {
        Some(path) => format!("field '{path}': {message}"),
        None => message.to_string(),
    }
}

/// serde_json's message without its ` at line L column C` tail (the fault has the line).
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) if message[i..].contains(" column ") => message[..i].to_string(),
        _ => message.to_string(),
    }
}
