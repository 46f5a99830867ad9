//! Progress bars on stderr (hidden when stderr is not a terminal) and memory facts.

use indicatif::{ProgressBar, ProgressStyle};
use outcore_store::IngestObserver;
use std::sync::Mutex;
use std::time::Instant;

pub fn counter(label: &str, total: u64, unit: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label:>9} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} {{per_sec}} ETA {{eta}}"
        ))
        .unwrap()
        .progress_chars("=> "),
    );
    crate::embed::track(&bar, label);
    bar
}

fn bytes_bar(label: &str, total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label:>9} [{{bar:30}}] {{bytes}}/{{total_bytes}} {{binary_bytes_per_sec}} {{msg}} ETA {{eta}}"
        ))
        .unwrap()
        .progress_chars("=> "),
    );
    crate::embed::track(&bar, label);
    bar
}

/// One bar per ingest phase: parse (input bytes and edges), then sort/grid (edges).
pub struct IngestBars {
    bar: Mutex<Option<(String, ProgressBar)>>,
    phases: Mutex<Vec<(String, Instant)>>,
}

impl IngestBars {
    pub fn new() -> IngestBars {
        IngestBars {
            bar: Mutex::new(None),
            phases: Mutex::new(Vec::new()),
        }
    }
    /// Ends the bars; returns "phase 1.23s, ..." for the summary line.
    pub fn finish(&self) -> String {
        if let Some((_, b)) = self.bar.lock().unwrap().take() {
            b.finish_and_clear();
        }
        let p = self.phases.lock().unwrap();
        let end = Instant::now();
        p.iter()
            .enumerate()
            .map(|(k, (name, t))| {
                let next = p.get(k + 1).map_or(end, |x| x.1);
                format!("{name} {:.2}s", (next - *t).as_secs_f64())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl IngestObserver for IngestBars {
    fn phase(&self, name: &str, total: u64) {
        let mut g = self.bar.lock().unwrap();
        if let Some((_, b)) = g.take() {
            b.finish_and_clear();
        }
        self.phases
            .lock()
            .unwrap()
            .push((name.to_string(), Instant::now()));
        let b = if name == "parse" {
            bytes_bar(name, total)
        } else {
            counter(name, total, "edges")
        };
        *g = Some((name.to_string(), b));
    }
    fn advance(&self, done: u64, edges: u64) {
        if let Some((name, b)) = &*self.bar.lock().unwrap() {
            b.set_position(done);
            if name == "parse" {
                b.set_message(format!("{edges} edges"));
            }
        }
    }
}

/// Peak resident memory of this process (VmHWM), in bytes.
pub fn peak_memory() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
