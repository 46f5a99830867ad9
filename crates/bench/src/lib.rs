//! # outcore-bench — the measurement harness
//!
//! Design (DESIGN.md "Measuring"; CLIP ATC'17 §5.1 for the method): every claim about
//! speed is reproducible with one command, `outcore bench SPEC`. A [`spec::Spec`]
//! names algorithms × stores × memory scenarios × engine configurations ×
//! repetitions; [`spec::Spec::plan`] validates all of it before anything runs;
//! [`runner`] builds missing stores from their recipes, then runs each planned run as
//! a child `outcore run` process in a fresh memory cgroup with a hard limit after
//! evicting the store from the page cache ([`cgroup`]), and appends one JSON line per
//! run; [`report`] renders Markdown tables (medians, min–max, ratios to a baseline
//! measured in the same bench) and [`plot`] SVG plots (time and bytes per algorithm,
//! time and iterations against MRT as in CLIP's Figure 5).
//!
//! Invariants: a planned run always yields a record (ok, oom-killed, timeout, failed
//! or killed) — nothing is silently dropped; timing, verification and analysis stay
//! apart (the child does the work, the harness only measures and reports).

pub mod cgroup;
pub mod plot;
pub mod report;
pub mod runner;
pub mod spec;

pub use cgroup::{detect, Limiter};
pub use runner::{BenchMeta, Event, RunRecord};
pub use spec::{Plan, Spec};

/// What can go wrong in a bench.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("bad bench spec: {0}")]
    Spec(String),
    #[error("cgroup: {0}")]
    Cgroup(String),
    #[error("cannot run: {0}")]
    Spawn(String),
    #[error("preparing stores: {0}")]
    Prepare(String),
    #[error("writing results: {0}")]
    Output(String),
    #[error(transparent)]
    Store(#[from] outcore_store::StoreError),
}
