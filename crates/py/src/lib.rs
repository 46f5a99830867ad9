//! `outcore._native` — the Python package's native module (PyO3, abi3).
//!
//! Design: Python builds the argument list a shell user would type and this
//! module runs that very command in-process through `outcore_cli::run_args`,
//! so the package has no second implementation of any command, option or
//! message. A command runs on a thread of its own while the calling thread
//! waits with the GIL released, waking every 100 ms to
//! * check for signals: on Ctrl-C (KeyboardInterrupt) it asks the command to
//!   stop (`outcore_io::cancel::request`: its next read or write fails, its
//!   temporaries are removed, stores and results are written beside their
//!   targets and renamed only when whole), waits for it, and re-raises;
//! * report progress to an optional Python callback (the package's tqdm bar)
//!   from the command's newest progress bar (`outcore_cli::embed::progress`).
//!
//! A failed command raises [`CommandFailure`] with `(kind, message)`; the
//! Python layer turns it into its exception hierarchy. Invariant: one command at
//! a time per process (the cancellation flag is process-wide); a second call
//! from another Python thread waits for the first.

use outcore_cli::embed::{self, Failure, FailureKind};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

create_exception!(
    _native,
    CommandFailure,
    PyException,
    "A command failed: args are (kind, message), kind one of input, damaged, budget, io, verify, other."
);

/// Set while a command runs in this process.
static BUSY: AtomicBool = AtomicBool::new(false);

fn failure(f: Failure) -> PyErr {
    CommandFailure::new_err((f.kind.name(), f.message))
}

/// Waits (GIL released, signals checked) until no other command runs, then
/// marks one as running; the returned guard clears the mark.
fn acquire(py: Python<'_>) -> PyResult<Busy> {
    loop {
        if BUSY
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Ok(Busy);
        }
        py.detach(|| std::thread::sleep(Duration::from_millis(20)));
        py.check_signals()?;
    }
}

struct Busy;

impl Drop for Busy {
    fn drop(&mut self) {
        outcore_io::cancel::clear();
        BUSY.store(false, Ordering::SeqCst);
    }
}

/// Runs `outcore ARGS...` in this process (see the module's documentation).
/// `progress`, when given, is called as `progress(label, position, length,
/// message)` whenever the command's progress changes (length 0: unknown).
#[pyfunction]
#[pyo3(signature = (args, progress=None))]
fn run(py: Python<'_>, args: Vec<String>, progress: Option<Py<PyAny>>) -> PyResult<()> {
    let _busy = acquire(py)?;
    embed::set_embedded();
    embed::reset_progress();
    outcore_io::cancel::clear();
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name("outcore-command".into())
        .spawn(move || {
            let r = outcore_cli::run_args(args);
            let _ = tx.send(r);
        })
        .map_err(|e| CommandFailure::new_err(("other", format!("starting a thread: {e}"))))?;
    let mut pending: Option<PyErr> = None;
    let mut last: Option<embed::Progress> = None;
    let mut rx = Some(rx);
    let result = loop {
        // The receiver moves into the GIL-free closure and back (it is Send, not Sync).
        let (got, back) = py.detach(move || {
            let r = rx.take().expect("receiver");
            (r.recv_timeout(Duration::from_millis(100)), r)
        });
        rx = Some(back);
        match got {
            Ok(r) => break Some(r),
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if pending.is_some() {
            continue; // stopping: wait for the command to return
        }
        if let Err(e) = py.check_signals() {
            outcore_io::cancel::request();
            pending = Some(e);
            continue;
        }
        if let (Some(cb), Some(p)) = (&progress, embed::progress()) {
            if last.as_ref() != Some(&p) {
                let call = cb.call1(
                    py,
                    (p.label.clone(), p.position, p.length, p.message.clone()),
                );
                if let Err(e) = call {
                    outcore_io::cancel::request();
                    pending = Some(e);
                }
                last = Some(p);
            }
        }
    };
    let joined = py.detach(|| worker.join());
    if let Some(e) = pending {
        return Err(e);
    }
    match (result, joined) {
        (Some(Ok(())), _) => Ok(()),
        (Some(Err(f)), _) if f.kind == FailureKind::Cancelled => {
            Err(PyKeyboardInterrupt::new_err(f.message))
        }
        (Some(Err(f)), _) => Err(failure(f)),
        (None, Err(panic)) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown".into());
            Err(CommandFailure::new_err((
                "other",
                format!("internal error (please report it): {what}"),
            )))
        }
        (None, Ok(())) => Err(CommandFailure::new_err((
            "other",
            "the command ended without a result".to_string(),
        ))),
    }
}

/// `outcore info --json PATH` as a JSON string; `verify` streams every file to
/// check its checksum. A damaged store raises CommandFailure("damaged", ...).
#[pyfunction]
#[pyo3(signature = (path, verify=true))]
fn info_json(py: Python<'_>, path: PathBuf, verify: bool) -> PyResult<String> {
    let _busy = acquire(py)?;
    py.detach(|| embed::info_json(&path, verify))
        .map_err(failure)
}

/// Out- or in-degrees (`direction` "out" or "in") in dense vertex order, as
/// little-endian u32 bytes.
#[pyfunction]
fn degrees<'py>(
    py: Python<'py>,
    path: PathBuf,
    direction: String,
) -> PyResult<Bound<'py, PyBytes>> {
    let d = py
        .detach(|| embed::degrees(&path, &direction))
        .map_err(failure)?;
    let bytes: Vec<u8> = d.iter().flat_map(|x| x.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}

/// Every vertex's user id in dense order, as little-endian u64 bytes.
#[pyfunction]
fn user_ids<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyBytes>> {
    let ids = py.detach(|| embed::user_ids(&path)).map_err(failure)?;
    let bytes: Vec<u8> = ids.iter().flat_map(|x| x.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}

/// The version of the crates this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(info_json, m)?)?;
    m.add_function(wrap_pyfunction!(degrees, m)?)?;
    m.add_function(wrap_pyfunction!(user_ids, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add("CommandFailure", m.py().get_type::<CommandFailure>())?;
    Ok(())
}
