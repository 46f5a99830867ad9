//! # outcore-engine — the single-machine engines
//!
//! [`stream`] is the edge-streaming engine of CLIP (ATC'17): grid blocks stream
//! from disk through a loader thread into a bounded ring of buffers; every loaded
//! block is re-entered up to MRT times while it changes something (§3.1); edge
//! functions may read and write any vertex (§3.2) through vertex arrays held in
//! memory or mmap'd (§3.3); blocks whose sources are all inactive are never read
//! (§4.3). [`jobs`] is GraphCP's concurrent-jobs engine (FCS'24 §3): several BSP jobs
//! share each sub-block they load, loaded whole or selectively by an I/O cost model.
//! [`vertex`] is the vertex-centric semi-external engine of BAsC + Norder (ATC'19):
//! active vertices' edge lists read by page into an engine-managed page cache, beside
//! a static cache of pre-selected edge lists. [`external`] is V-Part's fully-external
//! engine (FAST'19 §4): vertex data larger than memory, one destination partition in
//! memory at a time; it runs [`program::EdgeProgram`]s.

pub mod error;
pub mod external;
pub mod jobs;
pub mod program;
pub mod sortreduce;
pub mod stream;
pub mod vertex;

pub use error::{EngineError, Result};
pub use external::{EdgeReads, ExternalConfig, ExternalEngine, ExternalStats};
pub use jobs::{
    Granularity, IoMode, Job, JobCtx, JobStats, JobsConfig, JobsEngine, JobsObserver, JobsStats,
    Task,
};
pub use program::{
    bottom_up_lists, program_job, relax_apply, stream_bytes_per_vertex,
    stream_random_bytes_per_vertex, Aggregates, CsrLists, DescribeRefusal, Dir, EdgeProgram,
    Globals, ProgramJob, ProgramRunner, Sums,
};
pub use sortreduce::{SortReduceConfig, SortReduceEngine, SortReduceStats};
pub use stream::{
    prefetch, prefetch_each, Band, BlockOrder, BottomUp, Ctx, Flat, Hint, Hints, Mode, Share,
    SortedEdges, StreamConfig, StreamEngine, StreamStats, AHEAD, SOURCE_AHEAD, STREAM_AHEAD,
};
pub use vertex::{Frontier, FrontierBuilder, VertexConfig, VertexEngine, VertexStats};

/// A rayon pool of `threads` threads (0: one per core) named `outcore-NAME-I`, and
/// its size.
pub(crate) fn thread_pool(threads: usize, name: &str) -> Result<(rayon::ThreadPool, usize)> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |x| x.get())
    } else {
        threads
    };
    let name = name.to_string();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("outcore-{name}-{i}"))
        .build()
        .map_err(|e| EngineError::Invalid(format!("cannot start {threads} threads: {e}")))?;
    Ok((pool, threads))
}

/// `count` values of `T` at payload byte `offset` of a layout file.
pub(crate) fn read_at<T: bytemuck::Pod>(
    lf: &outcore_store::format::LayoutFile,
    offset: u64,
    count: u64,
) -> Result<Vec<T>> {
    let mut v: Vec<T> = vec![T::zeroed(); count as usize];
    lf.read_payload(offset, bytemuck::cast_slice_mut(&mut v))?;
    Ok(v)
}
