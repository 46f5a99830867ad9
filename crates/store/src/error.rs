//! Typed errors of the store: every message names the file (and line or record)
//! and says what is wrong.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Io(#[from] outcore_io::IoError),

    /// An input file that cannot be parsed; `location` is `FILE:LINE` or `FILE: record N`.
    #[error("{location}: {message}")]
    Input { location: String, message: String },

    /// A store file that is missing, truncated or fails its checksum.
    #[error("store file {}: {reason}", file.display())]
    Corrupt { file: PathBuf, reason: String },

    /// A directory that is not a store (no manifest).
    #[error("{}: not an outcore store ({reason})", dir.display())]
    NotAStore { dir: PathBuf, reason: String },

    /// The output already holds a store and `--force` was not given.
    #[error("{}: already holds an outcore store; pass --force to replace it", dir.display())]
    Exists { dir: PathBuf },

    /// A request the store cannot satisfy (bad option combination, limits).
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;

pub(crate) fn input_err(location: impl Into<String>, message: impl Into<String>) -> StoreError {
    StoreError::Input {
        location: location.into(),
        message: message.into(),
    }
}

pub(crate) fn corrupt(file: impl Into<PathBuf>, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        file: file.into(),
        reason: reason.into(),
    }
}
