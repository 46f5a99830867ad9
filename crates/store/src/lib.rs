//! # outcore-store — the on-disk graph
//!
//! A store is a directory: `manifest.json` plus layout files, each with the common
//! checksummed header of [`format`]. Layouts (DESIGN.md "Layouts"):
//! * `grid.index` + `grid.data`: P x P blocks by (source interval, destination
//!   interval), edges in a block sorted by source then destination, doubly
//!   compressed (distinct sources, offsets, destinations, weights) and bit-packed
//!   as local ids ([`codec`]) — GridGraph's
//!   2-level grid as described in CLIP (ATC'17 §4.1) with GraphCP's source-sorted
//!   sub-blocks and per-source index (FCS'24 §3.2);
//! * `csr.out.*` (and `csr.in.*`): page-aligned CSR for vertex-centric access;
//! * `degrees.out`, `degrees.in`, and `idmap` when ids were remapped.
//!
//! `docs/format.md` describes every byte. [`ingest`] builds stores out of core;
//! [`reader`] opens and reads them; [`info`] summarises and verifies them.

pub mod checked_map;
pub mod codec;
pub mod error;
pub mod format;
pub mod info;
pub mod ingest;
pub mod lists;
pub mod manifest;
mod memcsr;
pub mod order;
pub mod pagesums;
pub mod parse;
pub mod reader;
pub mod select;
pub mod sort;
pub mod vpart;
pub mod vpart_codec;
pub mod vpart_index;
pub mod vpart_layout;
pub mod vpart_sources;

pub use error::{Result, StoreError};
pub use ingest::{ingest, IngestObserver, IngestOptions, IngestReport};
pub use manifest::Manifest;
pub use parse::Format;
pub use reader::{Block, BlockEntry, CsrReader, GridReader, IdMap, Mapped, RawBlock, Store};

/// Waits for a scoped thread (the builders' I/O overlaps) and passes its panic on.
pub(crate) fn join_scoped<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Test inputs: one step of Knuth's MMIX linear congruential generator on `x`,
/// returning the new state.
#[cfg(test)]
pub(crate) fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *x
}
