//! Secret values at rest: sealed with an AEAD (XChaCha20-Poly1305) under a key that is
//! never in the database (`TOOLGATE_SECRET_KEY`, or a 0600 key file: beside a SQLite
//! file, or in the per-user data folder for a PostgreSQL database), opened
//! only to run a tool or replay history to the model, and shown as `[secret]` anywhere
//! else. `find` says which values are secret; `seal` rewrites stored JSON.

mod find;
mod home;
mod seal;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

pub use find::{has_secrets, mask_args, restore_masked, secret_values};
pub use home::{KEY_DIR_ENV, key_file};
pub use seal::{
    SEALED_VALUE, mask_output, mask_stored, mask_tokens, mask_values, seal_arguments, seal_json,
    unseal_json,
};

/// What a secret value is shown as.
pub const MASK: &str = "[secret]";

/// A sealed value inside stored text: `[[tgsecret:v1:BASE64(nonce || ciphertext)]]`.
pub const TOKEN_START: &str = "[[tgsecret:v1:";
pub(crate) const TOKEN_END: &str = "]]";

/// The environment variable holding the key (64 hex digits, or 32 bytes in base64).
pub const KEY_ENV: &str = "TOOLGATE_SECRET_KEY";
/// The environment variable naming the key file (created at first use when missing):
/// how a deployment configures where its key lives, whatever store it uses.
pub const KEY_FILE_ENV: &str = "TOOLGATE_SECRET_KEY_FILE";

/// Why a secret could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SecretError {
    #[error("{0}")]
    Key(String),
    #[error(
        "a secret stored in the database cannot be opened with this key ({source_name}); it was sealed with another key. Set {KEY_ENV} or restore the key file; nothing was changed"
    )]
    WrongKey { source_name: String },
}

/// Where the key comes from.
#[derive(Debug, Clone)]
enum Source {
    Env(String),
    File(PathBuf),
}

/// The key of one database, loaded (or created) at first use.
#[derive(Debug)]
pub struct Keyring {
    source: Source,
    cipher: OnceLock<Result<XChaCha20Poly1305, SecretError>>,
}

impl Keyring {
    /// The key for the database at `db`, from the configuration: `TOOLGATE_SECRET_KEY`
    /// when set, else the file `TOOLGATE_SECRET_KEY_FILE` names. Only when neither is
    /// set (the embedded default, one SQLite file) does the database's place choose the
    /// key file, as [`key_file`] says (created, mode 0600, when a secret is first
    /// sealed): `DB.key` beside it when that exists or the database is outside any git
    /// work tree, otherwise in the per-user data folder.
    ///
    /// A PostgreSQL database (`db` is its URL) has no file to sit beside: its key file
    /// is `postgres-HOST-PORT-DATABASE.key` in the per-user data folder
    /// ([`KEY_DIR_ENV`], else `$XDG_DATA_HOME/toolgate/keys`, else
    /// `~/.local/share/toolgate/keys`), made at first use on the host that first seals
    /// a secret. Workers on several hosts (or as several users) sharing one database
    /// must share the key: give every worker the same `TOOLGATE_SECRET_KEY`, or a
    /// `TOOLGATE_SECRET_KEY_FILE` naming a copy of one key file. Otherwise each makes
    /// its own key, and a worker cannot open the secrets another sealed: it fails with
    /// [`SecretError::WrongKey`], changing nothing.
    pub fn for_database(db: &Path) -> Keyring {
        let configured = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let source = match (configured(KEY_ENV), configured(KEY_FILE_ENV)) {
            (Some(key), _) => Source::Env(key),
            (None, Some(file)) => Source::File(PathBuf::from(file)),
            (None, None) => Source::File(key_file(db)),
        };
        Keyring {
            source,
            cipher: OnceLock::new(),
        }
    }

    /// The key in the file at `path` (created at first seal): a program (or a test)
    /// that chooses the key file itself.
    pub fn from_file(path: PathBuf) -> Keyring {
        Keyring {
            source: Source::File(path),
            cipher: OnceLock::new(),
        }
    }

    fn source_name(&self) -> String {
        match &self.source {
            Source::Env(_) => KEY_ENV.to_string(),
            Source::File(p) => p.display().to_string(),
        }
    }

    fn cipher(&self, create: bool) -> Result<&XChaCha20Poly1305, SecretError> {
        if let Some(c) = self.cipher.get() {
            return c.as_ref().map_err(Clone::clone);
        }
        let loaded = match &self.source {
            Source::Env(text) => decode_key(text).map(Some).map_err(|why| {
                SecretError::Key(format!(
                    "{KEY_ENV} is not a key: {why} (64 hex digits or 32 bytes in base64)"
                ))
            }),
            Source::File(path) => read_key_file(path, create),
        };
        let bytes = match loaded {
            Ok(Some(bytes)) => Ok(bytes),
            // No key file yet: not remembered, so that a later seal creates it.
            Ok(None) => {
                return Err(SecretError::Key(format!(
                    "the database holds sealed secrets but there is no key: {} does not exist (set {KEY_ENV}, or restore the key file)",
                    self.source_name()
                )));
            }
            Err(e) => Err(e),
        };
        let cipher = bytes.and_then(|b| {
            XChaCha20Poly1305::new_from_slice(&b)
                .map_err(|_| SecretError::Key("the key is not 32 bytes".into()))
        });
        self.cipher
            .get_or_init(|| cipher)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// `plain` sealed into a token.
    pub fn seal(&self, plain: &str) -> Result<String, SecretError> {
        let cipher = self.cipher(true)?;
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce)
            .map_err(|e| SecretError::Key(format!("no randomness for a nonce: {e}")))?;
        let sealed = cipher
            .encrypt(&XNonce::from(nonce), plain.as_bytes())
            .map_err(|_| SecretError::Key("encryption failed".into()))?;
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        Ok(format!("{TOKEN_START}{}{TOKEN_END}", B64.encode(bytes)))
    }

    /// A whole sealed token opened (a stored secret's value).
    pub fn open_token(&self, token: &str) -> Result<String, SecretError> {
        let body = token
            .strip_prefix(TOKEN_START)
            .and_then(|t| t.strip_suffix(TOKEN_END))
            .ok_or_else(|| SecretError::WrongKey {
                source_name: self.source_name(),
            })?;
        self.open(body)
    }

    /// The plain text of one token's body (what sits between the markers).
    pub(crate) fn open(&self, body: &str) -> Result<String, SecretError> {
        let cipher = self.cipher(false)?;
        let wrong = || SecretError::WrongKey {
            source_name: self.source_name(),
        };
        let bytes = B64.decode(body).map_err(|_| wrong())?;
        if bytes.len() < 24 {
            return Err(wrong());
        }
        let (nonce, sealed) = bytes.split_at(24);
        let nonce: [u8; 24] = nonce.try_into().map_err(|_| wrong())?;
        let plain = cipher
            .decrypt(&XNonce::from(nonce), sealed)
            .map_err(|_| wrong())?;
        String::from_utf8(plain).map_err(|_| wrong())
    }
}

fn decode_key(text: &str) -> Result<Vec<u8>, String> {
    let text = text.trim();
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return (0..32)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
            .collect();
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .or_else(|_| B64.decode(text))
        .map_err(|_| "neither hex nor base64".to_string())?;
    if bytes.len() != 32 {
        return Err(format!("{} bytes, not 32", bytes.len()));
    }
    Ok(bytes)
}

/// The key in `path`; created (0600) when `create` and it does not exist yet.
fn read_key_file(path: &Path, create: bool) -> Result<Option<Vec<u8>>, SecretError> {
    let fail = |what: String| SecretError::Key(format!("{}: {what}", path.display()));
    match std::fs::read_to_string(path) {
        Ok(text) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(path)
                    .map_err(|e| fail(e.to_string()))?
                    .permissions()
                    .mode();
                if mode & 0o077 != 0 {
                    return Err(fail(format!(
                        "the key file is readable by others (mode {:o}); run chmod 600 on it",
                        mode & 0o777
                    )));
                }
            }
            decode_key(&text)
                .map(Some)
                .map_err(|why| fail(format!("not a key: {why}")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).map_err(|e| fail(format!("no randomness: {e}")))?;
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                let mut folder = std::fs::DirBuilder::new();
                folder.recursive(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::DirBuilderExt;
                    folder.mode(0o700);
                }
                folder
                    .create(parent)
                    .map_err(|e| fail(format!("cannot create the key's folder: {e}")))?;
            }
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            use std::io::Write;
            match options.open(path) {
                Ok(mut f) => {
                    f.write_all(format!("{hex}\n").as_bytes())
                        .and_then(|()| f.sync_all())
                        .map_err(|e| fail(format!("cannot write the new key: {e}")))?;
                    tracing::info!(file = %path.display(), "created a key for secrets");
                    Ok(Some(key.to_vec()))
                }
                // Another process created it first: use that one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    read_key_file(path, false)
                }
                Err(e) => Err(fail(format!("cannot create the key file: {e}"))),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(fail(format!("cannot read the key file: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_postgres_databases_key_is_made_0600_in_a_new_folder_and_opens_what_it_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let url = Path::new("postgres://tg:pw@db.internal:5432/toolgate");
        let name = key_file(url).file_name().unwrap().to_owned();
        assert_eq!(name, "postgres-db.internal-5432-toolgate.key");
        let file = dir.path().join("keys").join(&name);
        let ring = Keyring {
            source: Source::File(file.clone()),
            cipher: OnceLock::new(),
        };
        let token = ring.seal("hunter2").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Another worker with the same key file opens it; one with its own key cannot.
        let same = Keyring {
            source: Source::File(file),
            cipher: OnceLock::new(),
        };
        assert_eq!(same.open_token(&token).unwrap(), "hunter2");
        let own = Keyring {
            source: Source::File(dir.path().join("other").join(&name)),
            cipher: OnceLock::new(),
        };
        own.seal("x").unwrap();
        let e = own.open_token(&token).unwrap_err();
        assert!(matches!(e, SecretError::WrongKey { .. }), "{e}");
    }

    #[test]
    fn a_sealed_value_opens_with_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let ring = Keyring {
            source: Source::File(dir.path().join("a.db.key")),
            cipher: OnceLock::new(),
        };
        let token = ring.seal("hunter2").unwrap();
        assert!(!token.contains("hunter2"));
        let body = &token[TOKEN_START.len()..token.len() - TOKEN_END.len()];
        assert_eq!(ring.open(body).unwrap(), "hunter2");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("a.db.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let other = Keyring {
            source: Source::Env("11".repeat(32)),
            cipher: OnceLock::new(),
        };
        assert!(matches!(
            other.open(body),
            Err(SecretError::WrongKey { .. })
        ));
        let missing = Keyring {
            source: Source::File(dir.path().join("b.db.key")),
            cipher: OnceLock::new(),
        };
        let e = missing.open(body).unwrap_err().to_string();
        assert!(e.contains("does not exist"), "{e}");
        let bad = Keyring {
            source: Source::Env("short".into()),
            cipher: OnceLock::new(),
        };
        assert!(bad.seal("x").unwrap_err().to_string().contains(KEY_ENV));
    }
}
