//! The external engine's memory plan (what `--memory` pays for, module docs of
//! [`super`]) and its per-request I/O cost model.

use outcore_io::DeviceProfile;
use outcore_store::vpart::skip_table_bytes;

/// Unchanged mirror entries rewritten rather than starting a new write: a
/// quarter of a mirror buffer's entries, between 512 and 8192 (64 KiB). A write
/// that starts or ends inside a page the page cache no longer holds makes the
/// kernel read that page first (one random read, ~70 us on the SSD measured, the
/// time of ~128 KiB read sequentially), so rewriting a gap of up to 64 KiB is
/// cheaper than splitting the write there. Measured on Kronecker 24 bfs (1/4
/// budget): with 512 the mirror updates kept the partition loop waiting 3.6 s
/// of a 19 s run, with 8192 0.8 s of 16 s.
pub(super) fn mirror_gap(buf_bytes: u64) -> usize {
    (buf_bytes / 32).clamp(512, 8192) as usize
}
/// Memory per source-table entry of a chunk: its record as read (at most
/// [`outcore_store::vpart::MAX_SOURCE_BYTES`]) and decoded (8), its mirror
/// entry (8), and at most one active-source and one window-part entry (24 each).
pub(super) const CHUNK_ENTRY_BYTES: u64 = outcore_store::vpart::MAX_SOURCE_BYTES + 64;

/// The least chunk memory of one window in flight: a chunk of one block of
/// source entries and 1024 edges.
pub fn min_slot(edge_bytes: u64) -> u64 {
    MBLOCK * CHUNK_ENTRY_BYTES + 1024 * edge_bytes
}
/// Source-table entries per block: the unit of skipping (chunks are whole
/// blocks), the layout's block of compact source entries.
pub(super) const MBLOCK: u64 = outcore_store::vpart::SOURCE_BLOCK;
/// Entries of a narrow program's mirror list read at a time (8 bytes each).
pub(super) const LIST_PIECE: u64 = MBLOCK;
/// Destinations whose mirror masks are read at a time: the skip tables' least
/// unit, so a unit is whole chunks.
pub(super) const MASK_CHUNK: u64 = outcore_store::vpart::SKIP_UNIT_MIN;

/// Fixed allowance for the process (code, stacks, small tables).
pub const FIXED_BYTES: u64 = 8 << 20;
/// Mirror-update buffer per partition (its pending run, unchanged entries
/// between written ones included, and a narrow run's zeros before its first
/// entry and after its last: see `mirror.rs`): a sixteenth of the budget
/// shared by the partitions, in whole pages, between 4 and 256 KiB.
pub fn mirror_buffer(memory: u64, partitions: u32) -> u64 {
    (memory / 16 / partitions.max(1) as u64).clamp(4 << 10, 256 << 10) / 4096 * 4096
}

/// The memory a layout needs under a budget.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Plan {
    pub mirror_buffer: u64,
    pub dest_memory: u64,
    pub chunk_memory: u64,
    pub chunk_entries: u64,
    pub window_edges: u64,
    /// Threads applying windows of edges in the edge pass (`edges.rs`): the
    /// run's threads, fewer when the chunk memory does not hold a window for
    /// each and one for the reader.
    pub appliers: u64,
    /// Windows alive at a time in the edge pass: one per applier and the one
    /// being read.
    pub in_flight: u64,
}

/// Bytes per destination of two mirror jobs (this partition's and the
/// previous one's, in flight): a message each (4 bytes for a program with
/// [`crate::program::EdgeProgram::narrow_messages`], 8 otherwise) and a bit.
fn mirror_job_bytes(narrow: bool) -> u64 {
    2 * 4 * super::mirror::job_words(narrow) as u64 + 1
}

/// Plans memory for `layout` under `memory` with `bytes_per_vertex` per
/// destination, for a program whose messages are `narrow` or not.
pub fn plan(
    record: &outcore_store::vpart::VpartRecord,
    memory: u64,
    bytes_per_vertex: u64,
    narrow: bool,
    edge_bytes: u64,
    threads: usize,
) -> std::result::Result<Plan, String> {
    let k = record.partitions as u64;
    let mirror_buf = mirror_buffer(memory, record.partitions);
    // Per partition: its mirror buffer, which never grows; a piece of a mirror
    // list being read (counted for every program, so that a budget a wide
    // program fits, a narrow one fits too).
    let fixed = FIXED_BYTES
        + k * mirror_buf
        + MASK_CHUNK * outcore_store::vpart::mask_bytes(record.partitions) as u64
        + skip_table_bytes(k)
        + LIST_PIECE * 8;
    // Per destination: the program's bytes, one more accumulator per extra
    // thread, and two mirror jobs.
    let per_dest = bytes_per_vertex + 8 * (threads.max(1) as u64 - 1) + mirror_job_bytes(narrow);
    let dest = record.max_dests() * per_dest;
    // Two windows in flight, each with a chunk of at least one block.
    let slot_min = min_slot(edge_bytes);
    let min_chunk = 2 * slot_min;
    let left = memory.saturating_sub(fixed + dest);
    if left < min_chunk {
        return Err(format!(
            "the largest of {k} partitions holds {} destinations ({} at {per_dest} bytes each); with {} fixed and {} of chunk buffers that needs {}, more than --memory {}",
            record.max_dests(),
            outcore_io::format_bytes(dest),
            outcore_io::format_bytes(fixed),
            outcore_io::format_bytes(min_chunk),
            outcore_io::format_bytes(fixed + dest + min_chunk),
            outcore_io::format_bytes(memory)
        ));
    }
    let chunk = left.min(64 << 20);
    let appliers = (threads.max(1) as u64)
        .min((chunk / slot_min).saturating_sub(1))
        .max(1);
    let in_flight = appliers + 1;
    // Each window in flight: half its share for the chunk of source entries
    // (whole blocks, at least one), the rest for edges (at least 1024).
    let slot = chunk / in_flight;
    let chunk_entries = (slot / 2 / CHUNK_ENTRY_BYTES / MBLOCK).max(1) * MBLOCK;
    Ok(Plan {
        mirror_buffer: mirror_buf,
        dest_memory: dest,
        chunk_memory: chunk,
        chunk_entries,
        window_edges: ((slot - chunk_entries * CHUNK_ENTRY_BYTES) / edge_bytes).max(1024),
        appliers,
        in_flight,
    })
}

/// The smallest `--memory` under which [`plan`] accepts `record`.
pub fn min_memory(
    record: &outcore_store::vpart::VpartRecord,
    bytes_per_vertex: u64,
    narrow: bool,
    edge_bytes: u64,
    threads: usize,
) -> u64 {
    let (mut lo, mut hi) = (1u64, 1u64 << 44);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if plan(record, mid, bytes_per_vertex, narrow, edge_bytes, threads).is_ok() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Per-request cost model: (latency seconds, bytes per second).
pub(super) fn device_costs() -> (f64, f64) {
    match DeviceProfile::find() {
        Ok(Some(p)) => {
            let seq = p.seq_read_bw().max(1.0);
            let lat = p
                .random_read_bw_at(4096, 1)
                .map(|r| (4096.0 / r.max(1.0) - 4096.0 / seq).max(1e-6))
                .unwrap_or(1e-4);
            (lat, seq)
        }
        _ => (1e-4, 500e6),
    }
}
