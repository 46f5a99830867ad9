//! The distributed engine under `mpirun` with 1, 2 and 4 ranks on this machine:
//! `outcore dist ingest` then `outcore dist run` must write the same result file
//! as `outcore run` (integers byte for byte, floats within 1e-12 relative); a
//! rank stopped or SIGKILLed mid-run is resumed with `--resume`; and ranks on
//! separate test hosts (network namespaces with their own disks, launched by
//! OpenMPI through an rsh agent, over TCP) share no filesystem.
//!
//! OpenMPI is installed here when it is missing (Debian's packages, as root), and
//! the binary is built with `--features dist` (in the tests' profile `ci`) into
//! its own target directory `target/dist`, so `cargo test` is the one command
//! that runs these tests too.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// mpirun and the MPI headers, installed from Debian's packages when missing
/// (by one test at a time: concurrent apt-get runs fail on dpkg's lock).
fn ensure_mpi() {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if have("mpirun") && have("mpicc") {
        return;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    assert!(
        root && have("apt-get"),
        "the distributed engine's tests need OpenMPI: apt-get install -y openmpi-bin libopenmpi-dev libclang-dev (as root)"
    );
    let install = || {
        Command::new("apt-get")
            .args([
                "install",
                "-y",
                "-q",
                "openmpi-bin",
                "libopenmpi-dev",
                "libclang-dev",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    // A stale package index is refreshed once.
    let done = install()
        || Command::new("apt-get")
            .args(["update", "-q"])
            .status()
            .is_ok_and(|s| s.success())
            && install();
    assert!(
        done,
        "apt-get install openmpi-bin libopenmpi-dev libclang-dev failed"
    );
}

/// The `outcore` binary with the distributed engine.
fn dist_binary() -> PathBuf {
    ensure_mpi();
    let target = workspace().join("target/dist");
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--profile",
            "ci",
            "-p",
            "outcore-cli",
            "--features",
            "dist",
        ])
        .current_dir(workspace())
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("runs cargo");
    assert!(
        out.status.success(),
        "cargo build --features dist failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("ci/outcore")
}

fn mpirun(np: usize, bin: &Path, args: &[&str], dir: &Path) -> std::process::Output {
    Command::new("mpirun")
        .args(["--oversubscribe", "-np", &np.to_string()])
        .arg(bin)
        .args(args)
        .current_dir(dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("runs mpirun")
}

fn ok(o: std::process::Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{what} failed:\n{err}");
    err
}

fn values(path: &Path) -> Vec<(String, f64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut f = l.split_whitespace();
            let id = f.next().unwrap().to_string();
            let x = f.next().unwrap();
            (id, x.parse().unwrap_or(f64::NAN))
        })
        .collect()
}

fn close(a: &Path, b: &Path, what: &str) {
    let (x, y) = (values(a), values(b));
    assert_eq!(x.len(), y.len(), "{what}");
    for ((i, p), (j, q)) in x.iter().zip(&y) {
        assert_eq!(i, j, "{what}");
        let tol = 1e-12 * p.abs().max(q.abs()).max(1e-300);
        assert!((p - q).abs() <= tol, "{what}: vertex {i}: {p} vs {q}");
    }
}

/// Runs `outcore ARGS` in `dir`; its stderr.
fn outcore(bin: &Path, dir: &Path, args: &[&str]) -> String {
    let o = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    ok(o, &args.join(" "))
}

#[test]
fn one_two_and_four_ranks_agree_with_outcore_run() {
    let bin = dist_binary();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let run = |args: &[&str]| outcore(&bin, d, args);
    run(&[
        "generate",
        "kronecker",
        "--scale",
        "11",
        "--edge-factor",
        "8",
        "--weighted",
        "-o",
        "g.bin32w",
    ]);
    run(&["ingest", "g.bin32w", "-o", "s", "--vertices", "2048"]);
    run(&[
        "ingest",
        "g.bin32w",
        "-o",
        "u",
        "--vertices",
        "2048",
        "--undirected",
    ]);
    run(&[
        "ingest",
        "g.bin32w",
        "-o",
        "r",
        "--vertices",
        "2048",
        "--with-reverse",
    ]);
    let cases: &[(&str, &str, &[&str])] = &[
        ("bfs", "s", &["--root", "0", "--parents"]),
        ("sssp", "s", &["--root", "0", "--parents"]),
        ("pagerank", "s", &[]),
        ("spmv", "s", &[]),
        ("conductance", "s", &["--seed", "7"]),
        ("wcc-lp", "u", &[]),
        ("mis-gas", "u", &["--seed", "3"]),
        ("scc", "r", &[]),
        ("bp", "u", &["--coupling", "0.02"]),
        ("mcst", "u", &[]),
    ];
    for (algo, store, extra) in cases {
        let mut a = vec!["run", algo, store, "--out", "ref.txt"];
        a.extend_from_slice(extra);
        run(&a);
        std::fs::rename(d.join("ref.txt"), d.join(format!("ref-{algo}.txt"))).unwrap();
    }
    for np in [1usize, 2, 4] {
        for (name, extra) in [
            ("s", None),
            ("u", Some("--undirected")),
            ("r", Some("--with-reverse")),
        ] {
            let dir = format!("d{np}{name}");
            let mut a = vec![
                "dist",
                "ingest",
                "g.bin32w",
                "-o",
                &dir,
                "--vertices",
                "2048",
                "--chunk-size",
                "16K",
                "--memory",
                "64M",
            ];
            a.extend(extra);
            ok(mpirun(np, &bin, &a, d), &format!("dist ingest -np {np}"));
            for r in 0..np {
                assert!(d
                    .join(&dir)
                    .join(format!("rank-{r}/manifest.json"))
                    .exists());
            }
        }
        for (algo, store, extra) in cases {
            let dir = format!("d{np}{store}");
            let out = format!("{algo}-{np}.txt");
            let mut a = vec![
                "dist", "run", algo, &dir, "--out", &out, "--stats", "st.json", "--verify",
            ];
            a.extend_from_slice(extra);
            let err = ok(
                mpirun(np, &bin, &a, d),
                &format!("dist run {algo} -np {np}"),
            );
            assert!(
                err.contains(&format!("on the distributed engine ({np} ranks")),
                "{err}"
            );
            // Checked on rank 0 over passes of the edges every rank serves.
            assert!(err.contains("verify: "), "{algo} -np {np}: {err}");
            let want = d.join(format!("ref-{algo}.txt"));
            let got = d.join(&out);
            if matches!(*algo, "pagerank" | "spmv" | "bp") {
                close(&want, &got, &format!("{algo} -np {np}"));
            } else {
                assert_eq!(
                    std::fs::read(&want).unwrap(),
                    std::fs::read(&got).unwrap(),
                    "{algo} -np {np}"
                );
            }
            let st: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(d.join("st.json")).unwrap()).unwrap();
            assert_eq!(st["per_rank"].as_array().unwrap().len(), np);
            for r in st["per_rank"].as_array().unwrap() {
                for k in [
                    "stolen_chunks",
                    "bytes_sent",
                    "bytes_received",
                    "updates_combined",
                ] {
                    assert!(r[k].is_u64(), "{k} in {r}");
                }
                if np == 1 && *algo != "mcst" {
                    // One rank masters every partition, and their accumulators
                    // fit: no update is stored (mcst's updates are edges,
                    // evaluated in the gather against the destination's value).
                    assert_eq!(r["updates_sent"], 0, "{algo}: {r}");
                }
                assert!(r["idle_seconds"].is_f64(), "{r}");
            }
        }
    }
    // Results larger than MPI's eager limit (8 KiB chunks of f64) in more
    // chunks than a thread keeps in flight, while rank 0 still needs replies
    // from rank 1's storage engine: a deadlock when replies waited behind the
    // computation engine's sends.
    run(&["generate", "kronecker", "--scale", "14", "-o", "h.bin32"]);
    run(&["ingest", "h.bin32", "-o", "h", "--vertices", "16384"]);
    run(&[
        "run",
        "pagerank",
        "h",
        "--iterations",
        "2",
        "--out",
        "ref-h.txt",
    ]);
    ok(
        mpirun(
            2,
            &bin,
            &[
                "dist",
                "ingest",
                "h.bin32",
                "-o",
                "hd",
                "--vertices",
                "16384",
                "--partitions",
                "2",
                "--vertex-chunk",
                "1024",
            ],
            d,
        ),
        "dist ingest --vertex-chunk 1024",
    );
    ok(
        mpirun(
            2,
            &bin,
            &[
                "dist",
                "run",
                "pagerank",
                "hd",
                "--iterations",
                "2",
                "--out",
                "hd.txt",
            ],
            d,
        ),
        "dist run with 8 result chunks of 8 KiB per rank",
    );
    close(
        &d.join("ref-h.txt"),
        &d.join("hd.txt"),
        "pagerank, 8 KiB result chunks",
    );
    // A store made for 2 ranks refuses 4, on every rank, with a clear message.
    let o = mpirun(4, &bin, &["dist", "run", "bfs", "d2s", "--root", "0"], d);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was made for 2 ranks"), "{err}");
}

/// The pid of rank `rank`'s process of an mpirun working in `cwd`.
fn rank_pid(cwd: &Path, rank: usize) -> Option<u32> {
    let want = format!("OMPI_COMM_WORLD_RANK={rank}");
    let cwd = cwd.canonicalize().ok()?;
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let env = std::fs::read(e.path().join("environ")).ok()?;
        let here = std::fs::read_link(e.path().join("cwd")).ok()? == cwd;
        let exe = std::fs::read_link(e.path().join("exe")).ok()?;
        let ours = exe.file_name().is_some_and(|n| n == "outcore");
        (here && ours && env.split(|&b| b == 0).any(|v| v == want.as_bytes())).then_some(pid)
    })
}

/// A rank stopped at a chosen moment (it aborts, as a killed process stops) and
/// a rank killed with SIGKILL at a random moment: mpirun stops the others (no
/// hang), and `--resume` gives the same answer as an uninterrupted `outcore run`.
#[test]
fn a_killed_rank_resumes_under_mpirun() {
    let bin = dist_binary();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let run = |args: &[&str]| outcore(&bin, d, args);
    run(&[
        "generate",
        "kronecker",
        "--scale",
        "11",
        "--edge-factor",
        "8",
        "-o",
        "g.bin32",
    ]);
    run(&["ingest", "g.bin32", "-o", "s", "--vertices", "2048"]);
    ok(
        mpirun(
            2,
            &bin,
            &[
                "dist",
                "ingest",
                "g.bin32",
                "-o",
                "k",
                "--vertices",
                "2048",
                "--chunk-size",
                "8K",
                "--memory",
                "64M",
                "--partitions",
                "4",
            ],
            d,
        ),
        "dist ingest",
    );
    run(&[
        "run",
        "pagerank",
        "s",
        "--iterations",
        "12",
        "--out",
        "ref12.txt",
    ]);
    let pr = |iters: &str, every: &str, resume: bool, fail: Option<&str>| {
        let mut c = Command::new("mpirun");
        c.args(["--oversubscribe", "-np", "2"]);
        if let Some(f) = fail {
            // Only the chosen rank stops; `-x` passes the variable to every rank.
            c.env("OUTCORE_DIST_FAIL", f)
                .args(["-x", "OUTCORE_DIST_FAIL"]);
        }
        c.arg(&bin)
            .args([
                "dist",
                "run",
                "pagerank",
                "k",
                "--iterations",
                iters,
                "--checkpoint-every",
                every,
                "--out",
                "pr.txt",
            ])
            .current_dir(d)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if resume {
            c.arg("--resume");
        }
        c
    };
    // Rank 1 stops inside the gather of iteration 5 (phase 11): the checkpoint of
    // iteration 4 is the last one.
    let o = pr("12", "2", false, Some("1:11")).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("rank 1: stopping at Phase(11)"), "{err}");
    let o = pr("12", "2", true, None).output().unwrap();
    let err = ok(o, "dist run --resume");
    assert!(err.contains("(resumed after iteration 4)"), "{err}");
    close(&d.join("ref12.txt"), &d.join("pr.txt"), "pagerank resumed");
    assert!(!d.join("k/rank-0/checkpoint").exists());

    // Rank 1 killed with SIGKILL at a random moment after the first checkpoint.
    run(&[
        "run",
        "pagerank",
        "s",
        "--iterations",
        "300",
        "--out",
        "ref300.txt",
    ]);
    let mut child = pr("300", "1", false, None).spawn().unwrap();
    let ckpt = d.join("k/rank-1/checkpoint/checkpoint.json");
    let start = std::time::Instant::now();
    while !ckpt.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its first checkpoint"
        );
        assert!(start.elapsed().as_secs() < 120, "no checkpoint in 120 s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(37));
    let pid = rank_pid(d, 1).expect("rank 1 is running");
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    // The other rank stops too: mpirun ends, with an error, well before the run
    // would have.
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed().as_secs() > 60 {
            let _ = child.kill();
            panic!("mpirun still running 60 s after rank 1 was killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!status.success());
    let o = pr("300", "1", true, None).output().unwrap();
    let err = ok(o, "dist run --resume after SIGKILL");
    assert!(err.contains("(resumed after iteration "), "{err}");
    close(
        &d.join("ref300.txt"),
        &d.join("pr.txt"),
        "pagerank after SIGKILL",
    );
}

/// The rsh agent OpenMPI launches its daemons with: `agent HOST COMMAND...` runs
/// COMMAND in host HOST's network namespace, with a hostname of its own and a
/// mount namespace in which `T/mnt` is its own disk `T/disks/HOST` and every
/// other disk is hidden.
const AGENT: &str = r#"#!/bin/sh
host=$1; shift
T=$(dirname "$(realpath "$0")")
exec ip netns exec "$(cat "$T/prefix")$host" unshare --mount --uts --propagation private sh -c '
  hostname "$1"; T=$2; shift 2
  mount --bind "$T/disks/$(hostname)" "$T/mnt" && mount -t tmpfs none "$T/disks" && exec sh -c "$*"' sh "$host" "$T" "$@"
"#;

/// Test hosts on this machine: network namespaces on a bridge, each with its
/// own address; removed on drop.
struct Hosts {
    prefix: String,
    bridge: String,
    names: Vec<String>,
}

fn ip(args: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("ip {args}")])
        .status()
        .is_ok_and(|s| s.success())
}

impl Hosts {
    /// `n` hosts named h0.. on subnet 10.77.S.0/24; `None` when this machine
    /// does not let us make network namespaces.
    fn new(n: usize) -> Option<Hosts> {
        let id = std::process::id() % 10000;
        let prefix = format!("oc{id}");
        let hosts = Hosts {
            bridge: format!("{prefix}br"),
            names: (0..n).map(|i| format!("h{i}")).collect(),
            prefix,
        };
        let s = 1 + id % 250;
        if !ip(&format!(
            "link add {b} type bridge && ip link set {b} up && ip addr add 10.77.{s}.1/24 dev {b}",
            b = hosts.bridge
        )) {
            return None;
        }
        for (i, h) in hosts.names.iter().enumerate() {
            let (ns, a, b) = (
                format!("{}{h}", hosts.prefix),
                format!("{}{h}a", hosts.prefix),
                format!("{}{h}b", hosts.prefix),
            );
            if !ip(&format!(
                "netns add {ns} && ip link add {a} type veth peer name {b} && ip link set {b} netns {ns} \
                 && ip link set {a} master {br} up && ip netns exec {ns} ip addr add 10.77.{s}.{addr}/24 dev {b} \
                 && ip netns exec {ns} ip link set {b} up && ip netns exec {ns} ip link set lo up",
                br = hosts.bridge,
                addr = i + 2
            )) {
                return None;
            }
        }
        Some(hosts)
    }

    fn subnet(&self) -> String {
        let id: u32 = self.prefix[2..].parse().unwrap();
        format!("10.77.{}.0/24", 1 + id % 250)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for h in &self.names {
            ip(&format!("link del {}{h}a 2>/dev/null", self.prefix));
            ip(&format!("netns del {}{h} 2>/dev/null", self.prefix));
        }
        ip(&format!("link del {} 2>/dev/null", self.bridge));
    }
}

/// Ranks on separate test hosts (network namespaces joined by a bridge, each
/// seeing only its own disk), OpenMPI launching into them through an rsh agent
/// and talking TCP: dist ingest writes rank K's directory on host K's disk
/// only, dist run gives `outcore run`'s answer, and a rank stopped mid-run is
/// resumed from the checkpoints on each host's own disk. Nothing may assume a
/// shared filesystem or one host.
#[test]
fn ranks_on_separate_hosts_share_no_filesystem() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root || !have("ip") || !have("unshare") {
        eprintln!("SKIPPED: test hosts need root, ip (iproute2) and unshare (util-linux)");
        return;
    }
    let bin = dist_binary();
    let Some(hosts) = Hosts::new(2) else {
        eprintln!("SKIPPED: this machine does not allow network namespaces, bridges or veth pairs");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().canonicalize().unwrap();
    for h in &hosts.names {
        std::fs::create_dir_all(t.join("disks").join(h)).unwrap();
    }
    std::fs::create_dir_all(t.join("mnt")).unwrap();
    std::fs::create_dir_all(t.join("ref")).unwrap();
    std::fs::write(t.join("prefix"), &hosts.prefix).unwrap();
    let agent = t.join("agent");
    std::fs::write(&agent, AGENT).unwrap();
    std::process::Command::new("chmod")
        .args(["+x"])
        .arg(&agent)
        .status()
        .unwrap();
    std::fs::write(
        t.join("hostfile"),
        hosts
            .names
            .iter()
            .map(|h| format!("{h} slots=1\n"))
            .collect::<String>(),
    )
    .unwrap();
    let run = |args: &[&str]| outcore(&bin, &t.join("ref"), args);
    // The input lives on host 0's disk only; the references are made here.
    let input = t.join("disks/h0/g.bin32w");
    run(&[
        "generate",
        "kronecker",
        "--scale",
        "11",
        "--edge-factor",
        "8",
        "--weighted",
        "-o",
        input.to_str().unwrap(),
    ]);
    run(&[
        "ingest",
        input.to_str().unwrap(),
        "-o",
        "s",
        "--vertices",
        "2048",
    ]);
    run(&["run", "sssp", "s", "--root", "0", "--out", "sssp.txt"]);
    run(&[
        "run",
        "pagerank",
        "s",
        "--iterations",
        "10",
        "--out",
        "pr.txt",
    ]);
    let subnet = hosts.subnet();
    let mnt = t.join("mnt");
    let m = |p: &str| mnt.join(p).to_str().unwrap().to_string();
    let mpirun_hosts = |args: &[String], fail: Option<&str>| {
        let mut c = Command::new("mpirun");
        c.args(["-np", "2", "--hostfile"])
            .arg(t.join("hostfile"))
            .args(["--mca", "plm_rsh_agent"])
            .arg(&agent)
            .args(["--mca", "oob_tcp_if_include", &subnet])
            .args(["--mca", "btl_tcp_if_include", &subnet])
            .args(["--mca", "btl", "self,tcp"])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        if let Some(f) = fail {
            c.env("OUTCORE_DIST_FAIL", f)
                .args(["-x", "OUTCORE_DIST_FAIL"]);
        }
        c.arg(&bin).args(args).current_dir(&t);
        let mut child = c
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A hang fails the test instead of blocking it.
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed().as_secs() > 180 {
                let _ = child.kill();
                panic!("mpirun {args:?} across hosts ran past 180 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let o = mpirun_hosts(
        &s(&[
            "dist",
            "ingest",
            &m("g.bin32w"),
            "-o",
            &m("store"),
            "--vertices",
            "2048",
            "--chunk-size",
            "16K",
            "--partitions",
            "4",
        ]),
        None,
    );
    ok(o, "dist ingest across hosts");
    // Each host's disk holds its own rank's directory and no other.
    for (k, h) in hosts.names.iter().enumerate() {
        let names: Vec<String> = std::fs::read_dir(t.join("disks").join(h).join("store"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![format!("rank-{k}")], "host {h}");
    }
    assert!(
        !t.join("mnt/store").exists(),
        "nothing was written outside the hosts' disks"
    );
    let o = mpirun_hosts(
        &s(&[
            "dist",
            "run",
            "sssp",
            &m("store"),
            "--root",
            "0",
            "--out",
            &m("sssp.txt"),
        ]),
        None,
    );
    ok(o, "dist run sssp across hosts");
    assert_eq!(
        std::fs::read(t.join("ref/sssp.txt")).unwrap(),
        std::fs::read(t.join("disks/h0/sssp.txt")).unwrap(),
        "sssp across hosts"
    );
    // Rank 1 (on host 1) stops in the gather of iteration 5; every host resumes
    // from the checkpoint of iteration 4 on its own disk.
    let pr = |resume: bool| {
        let mut a = s(&[
            "dist",
            "run",
            "pagerank",
            &m("store"),
            "--iterations",
            "10",
            "--checkpoint-every",
            "2",
            "--out",
            &m("pr.txt"),
        ]);
        if resume {
            a.push("--resume".into());
        }
        a
    };
    let o = mpirun_hosts(&pr(false), Some("1:11"));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("rank 1: stopping at Phase(11)"), "{err}");
    for (k, h) in hosts.names.iter().enumerate() {
        let rec = t
            .join("disks")
            .join(h)
            .join(format!("store/rank-{k}/checkpoint/checkpoint.json"));
        assert!(rec.exists(), "no checkpoint on host {h}");
    }
    let o = mpirun_hosts(&pr(true), None);
    let err = ok(o, "dist run --resume across hosts");
    assert!(err.contains("(resumed after iteration 4)"), "{err}");
    close(
        &t.join("ref/pr.txt"),
        &t.join("disks/h0/pr.txt"),
        "pagerank resumed across hosts",
    );
    drop(hosts);
}
