//! PDF to text with `pdf-extract` (pure Rust over `lopdf`: fonts, encodings and CMaps
//! decoded, pages in order). Off the async workers, and a panic inside the crate (it
//! has them on some malformed files) is an error like any other.

use toolgate_tool::ToolError;

/// The text of the PDF `bytes`, fetched from `url`.
pub(crate) async fn text(bytes: Vec<u8>, url: &str) -> Result<String, ToolError> {
    let url = url.to_string();
    let outcome = tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(&bytes))
    })
    .await
    .map_err(|e| ToolError::Execution(format!("reading the PDF from {url} stopped: {e}")))?;
    let text = match outcome {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => {
            return Err(ToolError::Execution(format!(
                "the PDF from {url} cannot be read: {e}"
            )));
        }
        Err(_) => {
            return Err(ToolError::Execution(format!(
                "the PDF from {url} cannot be read: its structure is not understood"
            )));
        }
    };
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(ToolError::Execution(format!(
            "the PDF from {url} has no text layer (a scanned document?)"
        )));
    }
    Ok(text)
}
