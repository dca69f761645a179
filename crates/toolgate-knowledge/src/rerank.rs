//! An optional rerank step against a `/rerank` endpoint in the Cohere/Jina shape
//! (Dify's): `{model, query, documents, top_n}` in, `results[].{index,
//! relevance_score}` out.

use serde_json::{Value, json};

use crate::{Endpoint, KnowledgeError};

/// A rerank model at an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reranker {
    pub model: String,
    pub endpoint: Endpoint,
}

impl Reranker {
    /// Each document's relevance to `query` (index into `documents`, score), best first.
    pub async fn rerank(
        &self,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<(usize, f64)>, KnowledgeError> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let answer = self
            .endpoint
            .post(
                "rerank",
                &json!({"model": self.model, "query": query, "documents": documents, "top_n": documents.len()}),
            )
            .await?;
        read_results(&answer, documents.len())
    }
}

/// The `results` of a rerank answer.
fn read_results(answer: &Value, count: usize) -> Result<Vec<(usize, f64)>, KnowledgeError> {
    let bad = |why: &str| KnowledgeError::Endpoint(format!("the rerank answer {why}"));
    let results = answer
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("has no results array"))?;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        let index = r
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("has a result without an index"))?;
        let score = r
            .get("relevance_score")
            .and_then(Value::as_f64)
            .ok_or_else(|| bad("has a result without a relevance_score"))?;
        if index as usize >= count {
            return Err(bad("has an index out of range"));
        }
        out.push((index as usize, score));
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn results_come_best_first() {
        let a = json!({"results": [{"index": 0, "relevance_score": 0.1}, {"index": 1, "relevance_score": 0.9}]});
        assert_eq!(read_results(&a, 2).unwrap(), vec![(1, 0.9), (0, 0.1)]);
        assert!(read_results(&a, 1).is_err());
        assert!(read_results(&json!({}), 1).is_err());
    }
}
