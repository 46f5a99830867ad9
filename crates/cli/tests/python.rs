//! Runs the integration suite of `tests/python` with pytest: the CLI against
//! scipy and networkx on the real graphs (test_reference.py), and the Python
//! package (test_package.py), which is built and installed here exactly as the
//! README tells users to (`pip install .`, maturin, into its own target
//! directory `target/pywheel`, so it never waits for this cargo's lock). The
//! packages are installed on first use into a virtual environment under
//! `target/pyenv`, so `cargo test` is the one command that runs every test on a
//! fresh machine.

use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGES: &[&str] = &[
    "numpy", "scipy", "networkx", "pytest", "pandas", "tqdm", "maturin",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ensure_env() -> PathBuf {
    let env = workspace().join("target/pyenv");
    let py = env.join("bin/python");
    let ready = env.join(".installed");
    if std::fs::read_to_string(&ready).is_ok_and(|s| s == PACKAGES.join("\n")) {
        return py;
    }
    if !py.exists() {
        let st = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&env)
            .status()
            .expect("python3 is needed for the integration suite");
        assert!(st.success(), "python3 -m venv {} failed", env.display());
    }
    let st = pip_install(&py).args(PACKAGES).status().expect("runs pip");
    assert!(st.success(), "pip install {PACKAGES:?} failed");
    std::fs::write(&ready, PACKAGES.join("\n")).unwrap();
    py
}

/// `python -m pip install --quiet` with the environment's python.
fn pip_install(py: &Path) -> Command {
    let mut c = Command::new(py);
    c.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]);
    c
}

/// `pip install .` from the checkout (the README's command), with the
/// virtual environment's maturin; cargo rebuilds only what changed.
fn install_package(py: &Path) {
    let bin = py.parent().expect("venv bin").to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin];
    paths.extend(std::env::split_paths(&path));
    let out = pip_install(py)
        .args([
            "--no-build-isolation",
            "--no-deps",
            "--force-reinstall",
            ".",
        ])
        .current_dir(workspace())
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env("CARGO_TARGET_DIR", workspace().join("target/pywheel"))
        // The tests' profile (no whole-program LTO): the same code, built in
        // half the time of a release wheel.
        .env("MATURIN_PEP517_ARGS", "--profile ci")
        .output()
        .expect("runs pip");
    assert!(
        out.status.success(),
        "pip install . (the Python package) failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_integration_suite() {
    let py = ensure_env();
    install_package(&py);
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
