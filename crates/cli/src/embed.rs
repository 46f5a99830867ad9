//! Running commands from another front end in the same process (the Python
//! package): failures as values with a kind, progress to poll, no drawing.
//!
//! A host calls [`crate::run_args`] with the argument list a shell user would
//! type, on a thread of its own, after [`set_embedded`]; meanwhile it may poll
//! [`progress`] to draw its own bar (the CLI's bars are then never drawn) and
//! stop the command with `outcore_io::cancel::request`. A failed command comes
//! back as a [`Failure`]: the message the binary would print, and a
//! [`FailureKind`] found from the typed errors in its chain, so the host can
//! raise the matching exception.

use indicatif::{ProgressBar, ProgressDrawTarget};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

static EMBEDDED: AtomicBool = AtomicBool::new(false);
static CURRENT: Mutex<Option<(String, ProgressBar)>> = Mutex::new(None);

/// From now on no progress bar is drawn; the newest one is kept for [`progress`].
pub fn set_embedded() {
    EMBEDDED.store(true, Ordering::SeqCst);
}

/// Called for every progress bar a command makes: hidden and kept when embedded.
pub(crate) fn track(bar: &ProgressBar, label: &str) {
    if EMBEDDED.load(Ordering::Relaxed) {
        bar.set_draw_target(ProgressDrawTarget::hidden());
        *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some((label.to_string(), bar.clone()));
    }
}

/// Where the running command's newest progress bar stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// What the bar counts: a phase (`parse`, `sort`, ...) or the algorithm.
    pub label: String,
    pub position: u64,
    /// 0 when the total is not known (a spinner).
    pub length: u64,
    pub message: String,
}

/// The newest bar's state, if a command made one and it is not finished.
pub fn progress() -> Option<Progress> {
    let g = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    let (label, bar) = g.as_ref()?;
    if bar.is_finished() {
        return None;
    }
    Some(Progress {
        label: label.clone(),
        position: bar.position(),
        length: bar.length().unwrap_or(0),
        message: bar.message(),
    })
}

/// Forgets the last command's bar (a host calls it before the next command).
pub fn reset_progress() {
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// An error this crate raises with its kind fixed: a budget refusal (the
/// message says what the command needs and what to give) or a damaged store
/// found by `info`.
#[derive(Debug)]
pub struct Tagged {
    pub kind: FailureKind,
    pub message: String,
}

impl std::fmt::Display for Tagged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Tagged {}

/// A refusal because `--memory` cannot hold what the command needs.
pub(crate) fn budget(message: String) -> anyhow::Error {
    Tagged {
        kind: FailureKind::Budget,
        message,
    }
    .into()
}

/// `outcore info` found files whose checksums fail; the message names them.
pub(crate) fn damaged(message: String) -> anyhow::Error {
    Tagged {
        kind: FailureKind::Damaged,
        message,
    }
    .into()
}

/// What kind of failure a command ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Bad arguments or bad input data (malformed lines, ids out of range,
    /// negative weights, an unknown option).
    Input,
    /// A store file is damaged, truncated or not an outcore file.
    Damaged,
    /// `--memory` is too small for the command.
    Budget,
    /// The operating system refused a read or write (full disk, permissions).
    Io,
    /// An independent check (`--verify`) failed.
    Verify,
    /// Stopped by `outcore_io::cancel::request`.
    Cancelled,
    /// Anything else.
    Other,
}

impl FailureKind {
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Input => "input",
            FailureKind::Damaged => "damaged",
            FailureKind::Budget => "budget",
            FailureKind::Io => "io",
            FailureKind::Verify => "verify",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Other => "other",
        }
    }
}

/// A command's failure: its message (as `outcore` prints it, after
/// "outcore: error: ") and its kind.
#[derive(Debug)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(e: &anyhow::Error, message: String) -> Failure {
        Failure {
            kind: classify(e),
            message,
        }
    }

    pub(crate) fn usage(e: clap::Error) -> Failure {
        // `--memory` below the floor every command needs is a budget refusal.
        let memory = e
            .get(clap::error::ContextKind::InvalidArg)
            .is_some_and(|a| a.to_string().starts_with("--memory"));
        Failure {
            kind: if memory {
                FailureKind::Budget
            } else {
                FailureKind::Input
            },
            message: usage_text(&e),
        }
    }
}

/// Clap's message without its "error: " prefix and "try '--help'" trailer
/// (help and version requests keep their whole text).
fn usage_text(e: &clap::Error) -> String {
    let text = e.render().to_string();
    if matches!(
        e.kind(),
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
    ) {
        return text.trim_end().to_string();
    }
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let text = text
        .split("\n\nFor more information")
        .next()
        .unwrap_or(text);
    text.trim_end().to_string()
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

fn store_kind(s: &outcore_store::StoreError) -> Option<FailureKind> {
    use outcore_store::StoreError;
    match s {
        StoreError::Corrupt { .. } => Some(FailureKind::Damaged),
        StoreError::Input { .. }
        | StoreError::Invalid(_)
        | StoreError::Exists { .. }
        | StoreError::NotAStore { .. } => Some(FailureKind::Input),
        StoreError::Io(_) => None,
    }
}

fn engine_kind(e: &outcore_engine::EngineError) -> Option<FailureKind> {
    use outcore_engine::EngineError;
    match e {
        EngineError::Budget(_) => Some(FailureKind::Budget),
        EngineError::Invalid(_) | EngineError::BadEdge { .. } => Some(FailureKind::Input),
        EngineError::Store(s) => store_kind(s),
        EngineError::Io(_) => None,
    }
}

fn algo_kind(e: &outcore_algos::AlgoError) -> Option<FailureKind> {
    use outcore_algos::AlgoError;
    match e {
        AlgoError::Verify(_) => Some(FailureKind::Verify),
        AlgoError::Invalid(_) => Some(FailureKind::Input),
        AlgoError::Store(s) => store_kind(s),
        AlgoError::Engine(e) => engine_kind(e),
        AlgoError::Io(_) => None,
    }
}

/// The kind of the first typed error in the chain that tells one. The library
/// errors wrap each other transparently (their `source` skips the wrapped
/// error), so each is matched through the variants it wraps.
pub fn classify(e: &anyhow::Error) -> FailureKind {
    if outcore_io::cancel::requested() {
        return FailureKind::Cancelled;
    }
    for c in e.chain() {
        if let Some(io) = c.downcast_ref::<outcore_io::IoError>() {
            if outcore_io::cancel::is_cancelled(&io.source) {
                return FailureKind::Cancelled;
            }
        }
        let kind = c
            .downcast_ref::<Tagged>()
            .map(|t| t.kind)
            .or_else(|| c.downcast_ref().and_then(store_kind))
            .or_else(|| c.downcast_ref().and_then(engine_kind))
            .or_else(|| c.downcast_ref().and_then(algo_kind));
        if let Some(k) = kind {
            return k;
        }
        if c.downcast_ref::<outcore_io::IoError>().is_some()
            || c.downcast_ref::<std::io::Error>().is_some()
        {
            return FailureKind::Io;
        }
    }
    // Commands' own refusals of their arguments (`bail!` in this crate) carry no
    // type: a message with no typed cause is about what the user asked for.
    if e.chain().count() == 1 {
        return FailureKind::Input;
    }
    FailureKind::Other
}

fn failure(e: anyhow::Error) -> Failure {
    Failure::new(&e, crate::error_text(&e))
}

/// `outcore info --json DIR` as a JSON string (checksums verified when
/// `verify`); a damaged store fails as `info` does.
pub fn info_json(dir: &std::path::Path, verify: bool) -> Result<String, Failure> {
    let run = || -> anyhow::Result<String> {
        let info = crate::read_info(dir, verify)?;
        crate::damaged(dir, &info)?;
        Ok(serde_json::to_string(&info)?)
    };
    run().map_err(failure)
}

/// The store's out- (`"out"`) or in-degrees (`"in"`), one per vertex in dense
/// order, checksum-verified.
pub fn degrees(dir: &std::path::Path, direction: &str) -> Result<Vec<u32>, Failure> {
    let run = || -> anyhow::Result<Vec<u32>> {
        if !matches!(direction, "out" | "in") {
            anyhow::bail!("direction must be \"out\" or \"in\", not {direction:?}");
        }
        let store = outcore_store::Store::open(dir)?;
        Ok(store.degrees(direction)?)
    };
    run().map_err(failure)
}

/// The user's id of every vertex, in dense order (what results are keyed by).
pub fn user_ids(dir: &std::path::Path) -> Result<Vec<u64>, Failure> {
    let run = || -> anyhow::Result<Vec<u64>> {
        let store = outcore_store::Store::open(dir)?;
        let ids = store.id_map()?;
        Ok((0..store.vertices() as u32)
            .map(|v| ids.to_user(v))
            .collect())
    };
    run().map_err(failure)
}
