//! Errors of the scale-out engine: store, I/O and engine failures pass through
//! with their file names; protocol failures say which rank and what.

#[derive(Debug, thiserror::Error)]
pub enum DistError {
    #[error(transparent)]
    Store(#[from] outcore_store::StoreError),
    #[error(transparent)]
    Io(#[from] outcore_io::IoError),
    #[error(transparent)]
    Engine(#[from] outcore_engine::EngineError),
    /// A rank directory that is missing, damaged or from another layout.
    #[error("{0}")]
    Layout(String),
    /// A request that cannot be done (bad options, a budget too small).
    #[error("{0}")]
    Invalid(String),
    /// Another rank failed; its message.
    #[error("rank {rank}: {message}")]
    Remote { rank: usize, message: String },
    /// Another rank failed and stopped the run.
    #[error("rank {rank} failed: {message}")]
    Stopped { rank: usize, message: String },
    /// Messages between ranks that do not fit the protocol.
    #[error("{0}")]
    Protocol(String),
    #[error("cancelled")]
    Cancelled,
}

pub type Result<T> = std::result::Result<T, DistError>;
