//! Runs the integration suite of `tests/python` (the CLI against scipy and
//! networkx on the real graphs) with pytest. The packages are installed on first
//! use into a virtual environment under `target/pyenv`, so `cargo test` is the
//! one command that runs every test on a fresh machine.

use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGES: &[&str] = &["numpy", "scipy", "networkx", "pytest"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ensure_env() -> PathBuf {
    let env = workspace().join("target/pyenv");
    let py = env.join("bin/python");
    let ready = env.join(".installed");
    if ready.exists() {
        return py;
    }
    let st = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&env)
        .status()
        .expect("python3 is needed for the integration suite");
    assert!(st.success(), "python3 -m venv {} failed", env.display());
    let st = Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(PACKAGES)
        .status()
        .expect("runs pip");
    assert!(st.success(), "pip install {PACKAGES:?} failed");
    std::fs::write(&ready, PACKAGES.join("\n")).unwrap();
    py
}

#[test]
fn python_integration_suite() {
    let py = ensure_env();
    let out = Command::new(&py)
        .args(["-m", "pytest", "-q", "-rs", "tests/python"])
        .current_dir(workspace())
        .env("OUTCORE_BIN", env!("CARGO_BIN_EXE_outcore"))
        .output()
        .expect("runs pytest");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(
        out.status.success(),
        "the Python integration suite failed:\n{text}"
    );
}
