//! The store manifest (`manifest.json`): what the graph is and which files hold it.
//!
//! Invariant: the manifest is written last, to `manifest.json.tmp`, fsynced and
//! renamed, and the directory fsynced; a store without a manifest does not open.
//!
//! The manifest carries its own checksum (store version 3): the first member,
//! `"checksum": "XXXXXXXX"`, is the CRC-32 (hex) of the file's exact text with that
//! value emptied (`"checksum": ""`). A manifest edited by hand or damaged (an
//! `"edges"` changed, a flag flipped) is refused by name, so a store cannot claim
//! what its files do not hold. Stores of an older version (2: no checksum; 3: no
//! page-group checksums of the CSR) are refused with a request to ingest again.

use crate::error::{corrupt, Result, StoreError};
use crate::format::FileRecord;
use outcore_io::IoError;
use std::path::Path;

pub const MANIFEST: &str = "manifest.json";
pub const STORE_FORMAT: &str = "outcore-store";
/// The manifest's version (`version`): 3 since the manifest carries a checksum,
/// 4 since the CSR files have page-group checksums (`csr.*.sums`, [`crate::pagesums`]).
/// Binary files keep their own header version ([`crate::format::FORMAT_VERSION`]).
pub const STORE_VERSION: u32 = 4;
const CHECKSUM_KEY: &str = "\"checksum\": \"";

/// The CRC-32 of a manifest text whose checksum value is empty.
fn text_crc(text: &str) -> u32 {
    crc32fast::hash(text.as_bytes())
}

/// Splits a manifest text into (the checksum it states, the text with it emptied).
fn stated_checksum(text: &str) -> Option<(String, String)> {
    let at = text.find(CHECKSUM_KEY)? + CHECKSUM_KEY.len();
    let len = text[at..].find('"')?;
    let value = text[at..at + len].to_string();
    Some((value, format!("{}{}", &text[..at], &text[at + len..])))
}

/// The manifest text with its checksum filled in (the text has `"checksum": ""`).
fn seal(text_without: &str) -> String {
    let crc = format!("{:08x}", text_crc(text_without));
    text_without.replacen(
        &format!("{CHECKSUM_KEY}\""),
        &format!("{CHECKSUM_KEY}{crc}\""),
        1,
    )
}

/// Recomputes the checksum of `DIR/manifest.json` after a deliberate edit. For
/// tests that craft a damaged file and a manifest that agrees with it.
#[doc(hidden)]
pub fn reseal_for_tests(dir: &Path) {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).expect("manifest readable");
    let (_, without) = stated_checksum(&text).expect("manifest has a checksum");
    std::fs::write(&path, seal(&without)).expect("manifest writable");
}

/// How the graph was ingested (recorded for provenance and shown by `info`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IngestRecord {
    pub inputs: Vec<String>,
    pub undirected: bool,
    #[serde(default)]
    pub with_reverse: bool,
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
    /// The store holds each edge and its reverse, the reverse with the weight's
    /// sign bit set (`--with-reverse`; `directed` is then false).
    #[serde(default)]
    pub reverse_marked: bool,
    pub weighted: bool,
    pub self_loops: u64,
    /// Stored edges repeating a (source, target) pair already stored: a pair
    /// stored k times counts k - 1 (0 after `--dedup`).
    #[serde(default)]
    pub parallel_edges: u64,
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
        if m.version != STORE_VERSION {
            let why = if m.version < STORE_VERSION {
                "; ingest the graph again to make a current store"
            } else {
                "; it was written by a newer outcore"
            };
            return Err(corrupt(
                &path,
                format!(
                    "store version {}, this outcore reads version {STORE_VERSION}{why}",
                    m.version,
                ),
            ));
        }
        match stated_checksum(&text) {
            None => return Err(corrupt(&path, "has no checksum".to_string())),
            Some((stated, without)) => {
                let actual = format!("{:08x}", text_crc(&without));
                if stated != actual {
                    return Err(corrupt(
                        &path,
                        format!(
                            "checksum {stated} does not match its contents ({actual}): the manifest was edited or damaged, and the store cannot be trusted; ingest it again"
                        ),
                    ));
                }
            }
        }
        if let Some(v) = m
            .vpart
            .as_ref()
            .filter(|v| !(1..=32).contains(&v.target_bits))
        {
            return Err(corrupt(
                &path,
                format!(
                    "vpart target_bits is {}, not 1..32: run `outcore partition` again",
                    v.target_bits
                ),
            ));
        }
        Ok(m)
    }

    /// Writes the manifest atomically: temporary name, fsync, rename, fsync the directory.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let tmp = dir.join(format!("{MANIFEST}.tmp"));
        let body = serde_json::to_string_pretty(self).expect("manifest serializes");
        let body = body.strip_prefix('{').expect("an object");
        let text = seal(&format!("{{\n  {CHECKSUM_KEY}\",{body}\n"));
        let mut out = outcore_io::OutFile::create(&tmp, outcore_io::IoStats::global())?;
        out.write_all(text.as_bytes())?;
        out.finish()?;
        std::fs::rename(&tmp, dir.join(MANIFEST)).map_err(|e| IoError::new(&tmp, "rename", e))?;
        outcore_io::sync_dir(dir)?;
        Ok(())
    }
}
