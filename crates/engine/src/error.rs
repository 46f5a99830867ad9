//! Engine errors: store and I/O failures pass through with their file names;
//! invalid requests say what was asked and why it cannot be done.

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] outcore_store::StoreError),
    #[error(transparent)]
    Io(#[from] outcore_io::IoError),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, EngineError>;
