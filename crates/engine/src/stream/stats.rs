//! What a streaming engine's run did ([`StreamStats`]): exact counts of
//! blocks, passes, edges and bytes, and the time split between waiting for
//! I/O and computing; threads' figures merged into the engine's.

/// What a run did; exact counts plus time split between waiting for I/O and
/// computing.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct StreamStats {
    pub iterations: u64,
    pub blocks_read: u64,
    /// Of `blocks_read`, those taken from the grid held in memory
    /// ([`StreamEngine::hold_grid`](crate::StreamEngine::hold_grid)) rather than read.
    pub blocks_held: u64,
    /// Non-empty blocks not read because their source interval was inactive.
    pub blocks_skipped: u64,
    /// Processing passes over loaded blocks (>= blocks_read).
    pub passes: u64,
    /// `passes_per_block[k]`: blocks processed `k + 1` times when loaded.
    pub passes_per_block: Vec<u64>,
    pub edges_processed: u64,
    /// Sources whose runs were skipped inside loaded blocks (edge skipping).
    pub sources_skipped: u64,
    /// Passes over a derived sorted layout (`exec_sorted`).
    pub sorted_passes: u64,
    pub bytes_read: u64,
    pub read_requests: u64,
    pub bytes_written: u64,
    pub write_requests: u64,
    /// Compute thread waiting for the loader.
    pub io_wait_seconds: f64,
    /// Compute thread applying edge functions.
    pub compute_seconds: f64,
    /// Reader threads inside reads, summed over the readers (two requests may be
    /// in flight at once).
    pub read_seconds: f64,
    pub sort_seconds: f64,
    pub ring_slots: usize,
    pub ring_slot_bytes: u64,
    /// Vertex arrays mapped from the work directory rather than held in memory.
    pub mapped_arrays: usize,
    /// Target intervals per band when a relaxation program's mapped array was
    /// run band by band ([`StreamEngine::exec_bands`](crate::StreamEngine::exec_bands); 0: not banded), and the
    /// bands processed.
    pub band_columns: u32,
    pub bands: u64,
    /// Iterations run from the CSR lists instead of the grid: bottom-up over
    /// the in-edges (each vertex not final stops at its first frontier
    /// in-neighbour), or sparse top-down over the active vertices' out-edges;
    /// the edges they examined and the seconds they took (reads included).
    pub bottom_up_iterations: u64,
    pub sparse_iterations: u64,
    pub csr_edges: u64,
    pub csr_seconds: f64,
    /// Of `csr_edges`, those sparse steps took from out-lists a dense sparse
    /// step kept in memory (`program/kept_out.rs`) instead of reading them.
    pub csr_kept_edges: u64,
}

impl StreamStats {
    /// Adds `l`'s counts and seconds to these.
    pub(super) fn merge_from(&mut self, l: &StreamStats) {
        let s = self;
        s.blocks_read += l.blocks_read;
        s.blocks_held += l.blocks_held;
        s.passes += l.passes;
        if s.passes_per_block.len() < l.passes_per_block.len() {
            s.passes_per_block.resize(l.passes_per_block.len(), 0);
        }
        for (a, b) in s.passes_per_block.iter_mut().zip(&l.passes_per_block) {
            *a += b;
        }
        s.edges_processed += l.edges_processed;
        s.sources_skipped += l.sources_skipped;
        s.io_wait_seconds += l.io_wait_seconds;
        s.compute_seconds += l.compute_seconds;
        s.read_seconds += l.read_seconds;
        s.bands += l.bands;
    }
}
