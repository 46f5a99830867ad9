//! The store manifest (`manifest.json`): what the graph is and which files hold it.
//!
//! Invariant: the manifest is written last, to `manifest.json.tmp`, fsynced and
//! renamed, and the directory fsynced; a store without a manifest does not open.

use crate::error::{corrupt, Result, StoreError};
use crate::format::FileRecord;
use outcore_io::IoError;
use std::path::Path;

pub const MANIFEST: &str = "manifest.json";
pub const STORE_FORMAT: &str = "outcore-store";

/// How the graph was ingested (recorded for provenance and shown by `info`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IngestRecord {
    pub inputs: Vec<String>,
    pub undirected: bool,
    pub dedup: bool,
    pub drop_self_loops: bool,
    pub remap: bool,
    pub memory_budget: u64,
    pub input_edges: u64,
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub vertices: u64,
    pub edges: u64,
    /// False when the store holds both directions of every edge (`--undirected`).
    pub directed: bool,
    pub weighted: bool,
    pub self_loops: u64,
    /// Added to a dense id to get the user's id when `remapped` is false (1 for
    /// 1-based inputs such as DIMACS and Matrix Market).
    pub id_base: u64,
    /// True when `idmap` maps dense ids to the user's (arbitrary u64) ids.
    pub remapped: bool,
    pub partitions: u32,
    /// Vertices per grid interval; interval `i` is `[i*interval, min((i+1)*interval, n))`.
    pub interval: u64,
    pub in_edges: bool,
    pub ingest: IngestRecord,
    pub files: Vec<FileRecord>,
    /// Set when the store was relabelled (`outcore reorder`, `ingest --order`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderRecord>,
    /// Static-cache selections saved by `outcore select-cache` (one per policy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selections: Vec<SelectionRecord>,
    /// The V-Part layout saved by `outcore partition` (or a first external run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpart: Option<crate::vpart::VpartRecord>,
}

/// How a store's vertices were relabelled.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OrderRecord {
    /// `norder`, `degree` or `random`.
    pub order: String,
    /// The store it was made from (provenance only).
    pub source: String,
    pub seed: u64,
    /// Seconds to compute the permutation (the rewrite not included).
    pub seconds: f64,
}

/// A saved static-cache selection (file `basc.<policy>`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SelectionRecord {
    pub policy: String,
    pub file: String,
    /// The static-cache size it was computed for, in bytes.
    pub budget: u64,
    /// GVS iterations (1 for the other policies).
    pub k: u32,
    /// The page size GVS assumed.
    pub page_size: u64,
    pub seed: u64,
    pub vertices: u64,
    pub edges: u64,
    pub seconds: f64,
    /// The selection's edge lists packed in one file (`basc.<policy>.lists`), so a
    /// run whose static cache holds them all loads them in one sequential read.
    /// Absent in stores saved before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lists: Option<String>,
}

impl Manifest {
    pub fn file(&self, name: &str) -> Option<&FileRecord> {
        self.files.iter().find(|f| f.name == name)
    }

    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST);
        if !dir.is_dir() {
            return Err(StoreError::NotAStore {
                dir: dir.into(),
                reason: "no such directory".into(),
            });
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotAStore {
                    dir: dir.into(),
                    reason: "no manifest.json; an interrupted ingest leaves none".into(),
                })
            }
            Err(e) => return Err(IoError::new(&path, "read", e).into()),
        };
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| corrupt(&path, format!("cannot be parsed: {e}")))?;
        if m.format != STORE_FORMAT {
            return Err(corrupt(
                &path,
                format!("format is {:?}, expected {STORE_FORMAT:?}", m.format),
            ));
        }
        if m.version != crate::format::FORMAT_VERSION {
            return Err(corrupt(
                &path,
                format!(
                    "store version {}, this outcore reads version {}",
                    m.version,
                    crate::format::FORMAT_VERSION
                ),
            ));
        }
        Ok(m)
    }

    /// Writes the manifest atomically: temporary name, fsync, rename, fsync the directory.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let tmp = dir.join(format!("{MANIFEST}.tmp"));
        let text = serde_json::to_string_pretty(self).expect("manifest serializes");
        let mut out = outcore_io::OutFile::create(&tmp, outcore_io::IoStats::global())?;
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
        out.finish()?;
        std::fs::rename(&tmp, dir.join(MANIFEST)).map_err(|e| IoError::new(&tmp, "rename", e))?;
        outcore_io::sync_dir(dir)?;
        Ok(())
    }
}
