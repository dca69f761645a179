//! Embeddings from an OpenAI-compatible `/embeddings` endpoint, in batches, in input
//! order. A base names its model as `openai:MODEL`; the model's name goes with every
//! request, and vectors of another length than the base's are refused.

use serde_json::{Value, json};

use crate::{Endpoint, KnowledgeError};

/// Inputs per request (OpenAI accepts up to 2048).
const BATCH: usize = 128;

/// An embedding model at an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Embedder {
    /// As stored with the base: `openai:MODEL`.
    pub spec: String,
    pub endpoint: Endpoint,
}

/// `--embeddings` as written: `openai:MODEL`, or `none` (`None`).
pub fn parse_spec(spec: &str) -> Result<Option<String>, KnowledgeError> {
    match spec.trim() {
        "" | "none" => Ok(None),
        s => match s.split_once(':') {
            Some(("openai", model)) if !model.trim().is_empty() => Ok(Some(s.to_string())),
            _ => Err(KnowledgeError::Invalid(format!(
                "--embeddings '{s}' is not openai:MODEL or none (for example openai:text-embedding-3-small)"
            ))),
        },
    }
}

impl Embedder {
    /// The model name sent to the endpoint.
    pub fn model(&self) -> &str {
        self.spec
            .split_once(':')
            .map_or(self.spec.as_str(), |(_, m)| m)
    }

    /// One vector per input, in order.
    pub async fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>, KnowledgeError> {
        let mut out = Vec::with_capacity(inputs.len());
        for batch in inputs.chunks(BATCH) {
            let answer = self
                .endpoint
                .post(
                    "embeddings",
                    &json!({"model": self.model(), "input": batch}),
                )
                .await?;
            out.extend(read_vectors(&answer, batch.len())?);
        }
        Ok(out)
    }
}

/// The vectors of an embeddings answer (`data[].embedding`, placed by `index`).
fn read_vectors(answer: &Value, expected: usize) -> Result<Vec<Vec<f32>>, KnowledgeError> {
    let bad = |why: &str| KnowledgeError::Endpoint(format!("the embeddings answer {why}"));
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("has no data array"))?;
    if data.len() != expected {
        return Err(bad(&format!(
            "has {} vectors for {expected} inputs",
            data.len()
        )));
    }
    let mut out = vec![Vec::new(); expected];
    for (i, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(i, |n| n as usize);
        let vector: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("has an item without an embedding array"))?
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("has a non-number in an embedding"))?;
        let slot = out
            .get_mut(index)
            .ok_or_else(|| bad("has an index out of range"))?;
        *slot = vector;
    }
    if out.iter().any(Vec::is_empty) {
        return Err(bad("left an input without a vector"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn specs_are_openai_or_none() {
        assert_eq!(parse_spec("none").unwrap(), None);
        assert_eq!(parse_spec("openai:m").unwrap().as_deref(), Some("openai:m"));
        assert!(parse_spec("cohere:m").is_err());
        assert!(parse_spec("openai:").is_err());
    }

    #[test]
    fn vectors_are_placed_by_index() {
        let answer =
            json!({"data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0]}]});
        assert_eq!(
            read_vectors(&answer, 2).unwrap(),
            vec![vec![1.0], vec![2.0]]
        );
        assert!(read_vectors(&answer, 3).is_err());
    }
}
