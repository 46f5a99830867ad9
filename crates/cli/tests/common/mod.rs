//! Helpers shared by the CLI integration tests: run the built binary, read stderr.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `outcore` with `args`, capturing its output.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcore"))
        .args(args)
        .output()
        .expect("runs outcore")
}

/// A path as a `&str` argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The captured stderr as text.
pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
