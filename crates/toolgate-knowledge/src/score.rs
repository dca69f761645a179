//! Scores on one scale: whatever the mode, a passage's score is in [0, 1], 1 the best
//! a query can get, so that one `threshold` means the same everywhere.
//!
//! - full text: the backend's rank (BM25, `ts_rank`) over the best rank of the query;
//! - semantic: the cosine similarity of query and chunk, below 0 counted as 0;
//! - hybrid: reciprocal rank fusion of both lists, over the fusion score of a chunk
//!   first in both;
//! - rerank: the reranker's relevance score (Cohere and Jina give 0 to 1), clamped.

/// The `k` of reciprocal rank fusion (the value of the original paper, and Dify's).
pub const RRF_K: f64 = 60.0;

/// Full-text raw scores (higher is better) over the best of them.
pub fn relative(raw: &[f64]) -> Vec<f64> {
    let best = raw.iter().copied().fold(0.0_f64, f64::max);
    raw.iter()
        .map(|r| {
            if best > 0.0 {
                (r / best).clamp(0.0, 1.0)
            } else {
                0.0
            }
        })
        .collect()
}

/// The cosine similarity of two vectors (0 when either is zero or they differ in length).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0_f64, 0.0_f64, 0.0_f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// A cosine similarity as a score.
pub fn semantic(cos: f64) -> f64 {
    cos.clamp(0.0, 1.0)
}

/// Reciprocal rank fusion of ranked lists of ids: each id's fused score, normalised so
/// that an id first in every list scores 1; best first (ties by first appearance).
pub fn fuse(lists: &[Vec<i64>]) -> Vec<(i64, f64)> {
    let mut scores: Vec<(i64, f64)> = Vec::new();
    for list in lists {
        for (rank, id) in list.iter().enumerate() {
            let add = 1.0 / (RRF_K + rank as f64 + 1.0);
            match scores.iter_mut().find(|(i, _)| i == id) {
                Some((_, s)) => *s += add,
                None => scores.push((*id, add)),
            }
        }
    }
    let best = lists.len().max(1) as f64 / (RRF_K + 1.0);
    for (_, s) in &mut scores {
        *s = (*s / best).clamp(0.0, 1.0);
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement_and_stays_in_range() {
        let fused = fuse(&[vec![1, 2, 3], vec![2, 1, 4]]);
        let ids: Vec<i64> = fused.iter().map(|f| f.0).collect();
        assert_eq!(&ids[..2], &[1, 2]);
        assert!(fused.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        assert_eq!(fuse(&[vec![7], vec![7]])[0].1, 1.0);
        let alone = fuse(&[vec![7], vec![]]);
        assert!((alone[0].1 - 0.5).abs() < 1e-9);
    }

    #[test]
    fn relative_and_cosine_are_on_the_same_scale() {
        assert_eq!(relative(&[4.0, 2.0, 0.0]), [1.0, 0.5, 0.0]);
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(semantic(cosine(&[1.0, 0.0], &[-1.0, 0.0])), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 2.0]), 0.0);
    }
}
