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
    /// The budget cannot hold what the run needs (the caller may repartition).
    #[error("{0}")]
    Budget(String),
    /// An edge the program refuses (dense ids; the caller names them in the
    /// user's ids).
    #[error("{program} cannot take edge ({u}, {v}) with weight {w}")]
    BadEdge {
        program: &'static str,
        u: u32,
        v: u32,
        w: f32,
    },
}

pub type Result<T> = std::result::Result<T, EngineError>;
