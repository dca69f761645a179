//! Adding files and folders to a base: each file read, hashed (SHA-256 of its bytes),
//! skipped when the base holds the same hash, else extracted, chunked, embedded (when
//! the base has a model) and stored in one transaction replacing its old chunks. A file
//! that cannot be read is reported and the rest goes on.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toolgate_store::knowledge::{BaseRow, NewChunk, NewDocument, Stored};

use crate::bases::check_dims;
use crate::extract::{Kind, extract};
use crate::{ChunkSize, Knowledge, KnowledgeError, chunk};

/// What happened to one file of an import, as it happens.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Imported {
    /// The file was stored (or found unchanged).
    Stored {
        source: String,
        stored: Stored,
        chunks: usize,
        bytes: usize,
    },
    /// The file could not be read or stored; the import goes on.
    Failed { source: String, error: String },
}

/// What an import did, in total.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ImportSummary {
    pub added: usize,
    pub replaced: usize,
    pub unchanged: usize,
    pub failed: usize,
    pub chunks: usize,
    pub bytes: usize,
}

impl ImportSummary {
    fn count(&mut self, event: &Imported) {
        match event {
            Imported::Stored {
                stored,
                chunks,
                bytes,
                ..
            } => {
                match stored {
                    Stored::Added => self.added += 1,
                    Stored::Replaced => self.replaced += 1,
                    Stored::Unchanged => self.unchanged += 1,
                }
                self.chunks += chunks;
                self.bytes += bytes;
            }
            Imported::Failed { .. } => self.failed += 1,
        }
    }
}

/// The name a file is stored under: its path as given, without a leading `./`.
pub fn source_name(path: &Path) -> String {
    let shown = path.to_string_lossy().replace('\\', "/");
    shown.trim_start_matches("./").to_string()
}

/// The SHA-256 of `bytes`, in hex.
pub fn content_hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The files under `paths`: a file as named; a folder's readable files (by extension),
/// hidden ones skipped, in name order. A path that cannot be listed is a failure.
fn files(paths: &[PathBuf]) -> Vec<Result<PathBuf, (PathBuf, String)>> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut out);
        } else {
            out.push(Ok(path.clone()));
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<Result<PathBuf, (PathBuf, String)>>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            return out.push(Err((
                dir.to_path_buf(),
                format!("cannot list the folder: {e}"),
            )));
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let hidden = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if p.is_dir() {
            walk(&p, out);
        } else if Kind::of(&p.to_string_lossy()).is_some() {
            out.push(Ok(p));
        }
    }
}

impl Knowledge {
    /// Adds `paths` (files and folders) to base `name`, telling `progress` about each
    /// file as it is done.
    pub async fn add(
        &self,
        name: &str,
        paths: &[PathBuf],
        progress: &mut (dyn FnMut(&Imported) + Send),
    ) -> Result<ImportSummary, KnowledgeError> {
        let base = self.base(name).await?;
        let mut summary = ImportSummary::default();
        for file in files(paths) {
            let event = match file {
                Ok(path) => self.add_file(&base, &path).await,
                Err((path, error)) => Imported::Failed {
                    source: source_name(&path),
                    error,
                },
            };
            summary.count(&event);
            progress(&event);
        }
        Ok(summary)
    }

    /// One file of an import.
    async fn add_file(&self, base: &BaseRow, path: &Path) -> Imported {
        let source = source_name(path);
        let read = match tokio::fs::read(path).await {
            Ok(bytes) => self.add_bytes(base, &source, &bytes).await,
            Err(e) => Err(KnowledgeError::Invalid(format!("cannot read it: {e}"))),
        };
        match read {
            Ok(event) => event,
            Err(e) => Imported::Failed {
                source,
                error: e.to_string(),
            },
        }
    }

    /// Adds a document's bytes as `source` to `base` (its kind from the source's name).
    pub async fn add_bytes(
        &self,
        base: &BaseRow,
        source: &str,
        bytes: &[u8],
    ) -> Result<Imported, KnowledgeError> {
        let kind = Kind::of(source).ok_or_else(|| {
            KnowledgeError::Invalid(format!(
                "not a kind of document toolgate reads ({})",
                Kind::EXTENSIONS
            ))
        })?;
        let hash = content_hash(bytes);
        let stored = |stored, chunks| Imported::Stored {
            source: source.to_string(),
            stored,
            chunks,
            bytes: bytes.len(),
        };
        if self.store.knowledge_hash(base.id, source).await?.as_deref() == Some(hash.as_str()) {
            return Ok(stored(Stored::Unchanged, 0));
        }
        let bytes_owned = bytes.to_vec();
        let extracted = tokio::task::spawn_blocking(move || extract(kind, &bytes_owned))
            .await
            .map_err(|e| KnowledgeError::Invalid(format!("extraction stopped: {e}")))?
            .map_err(KnowledgeError::Invalid)?;
        let size = ChunkSize {
            size: base.chunk as usize,
            overlap: base.overlap as usize,
        };
        let chunks = chunk::chunk(&extracted, size);
        let vectors = self.vectors(base, &chunks).await?;
        let count = chunks.len();
        let doc = NewDocument {
            source: source.to_string(),
            hash,
            bytes: bytes.len() as i64,
            chunks: chunks
                .into_iter()
                .zip(vectors)
                .enumerate()
                .map(|(i, (c, v))| NewChunk {
                    ordinal: i as i64,
                    text: c.text,
                    section: c.section,
                    start: c.start as i64,
                    end: c.end as i64,
                    embedding: v,
                })
                .collect(),
        };
        let done = self.store.put_knowledge_document(base.id, doc).await?;
        Ok(stored(
            done,
            if done == Stored::Unchanged { 0 } else { count },
        ))
    }

    /// Each chunk's embedding, when the base has a model (`None`s otherwise).
    async fn vectors(
        &self,
        base: &BaseRow,
        chunks: &[chunk::Chunk],
    ) -> Result<Vec<Option<Vec<f32>>>, KnowledgeError> {
        let Some(embedder) = self.embedder(base, None)? else {
            return Ok(vec![None; chunks.len()]);
        };
        let texts: Vec<String> = chunks
            .iter()
            .map(|c| match &c.section {
                Some(s) => format!("{s}\n\n{}", c.text),
                None => c.text.clone(),
            })
            .collect();
        let vectors = embedder.embed(&texts).await?;
        if let Some(first) = vectors.first() {
            check_dims(base, first.len())?;
            if vectors.iter().any(|v| v.len() != first.len()) {
                return Err(KnowledgeError::Endpoint(
                    "the embeddings endpoint gave vectors of different lengths".into(),
                ));
            }
        }
        Ok(vectors.into_iter().map(Some).collect())
    }
}
