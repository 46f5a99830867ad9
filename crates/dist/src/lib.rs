//! The scale-out engine (Chaos, SOSP'15): one graph spread over the disks of
//! many machines, processed from secondary storage by every machine at once.
//!
//! # Design (Chaos §3-§6)
//! - [`layout`]: streaming partitions are vertex ranges (the smallest multiple
//!   of the rank count whose vertex state fits a rank's memory); edges are cut
//!   into chunks placed on uniformly random ranks; vertex chunks are placed by
//!   hashing. Each rank has a directory of its own and reads no other's.
//! - [`ingest`]: rank 0 reads the input and sends the chunks out.
//! - [`storage`]: every rank runs a storage engine on a thread of its own, which
//!   serves any not-yet-consumed chunk of the partition asked for, each chunk
//!   exactly once per phase.
//! - [`compute`]: every rank runs a computation engine executing the
//!   [`EdgeProgram`]s the single-machine engines run, as scatter and
//!   gather-apply phases over the partitions it masters, with a window of
//!   outstanding requests to random storage engines (§6.5).
//! - [`transport`]: MPI (feature `mpi`, launched by `mpirun`), or threads in one
//!   process for tests of the protocol.
//!
//! - [`checkpoint`]: vertex values checkpointed at barriers with a two-phase
//!   protocol; `resume` continues from the last checkpoint every rank committed.
//!
//! - [`steal`]: an engine done with its own partitions helps other masters with
//!   theirs when the §5.4 rule says it pays (§5.3).
//!
//! - [`edges`]: whole passes over the layout's edges from rank 0, what `dist
//!   run --verify` checks a result against.
//!
//! Not built yet: ranks reading disjoint parts of the input (rank 0 reads it),
//! and the minimum cost spanning forest of Chaos's Table 1.

pub mod checkpoint;
pub mod compute;
pub mod config;
pub mod edges;
pub mod error;
pub mod ingest;
pub mod layout;
mod phase;
pub mod steal;
pub mod storage;
pub mod transport;

pub use compute::{DistConfig, RankStats};
pub use error::{DistError, Result};
pub use ingest::{DistIngestOptions, RankIngest};
pub use layout::{Plan, RankManifest};

use outcore_engine::program::{EdgeProgram, ProgramRunner};
use outcore_engine::EngineError;
use std::path::PathBuf;

/// Requests to storage engines.
pub const TAG_REQ: transport::Tag = 1;
/// Replies carrying chunks, to computation engines.
pub const TAG_RESP: transport::Tag = 2;
/// Acknowledgements of puts.
pub const TAG_ACK: transport::Tag = 3;
/// Collectives between computation engines.
pub const TAG_GATHER: transport::Tag = 4;
/// Result chunks, to rank 0.
pub const TAG_RESULT: transport::Tag = 5;
/// Chunks sent by the ingest.
pub const TAG_INGEST: transport::Tag = 6;
/// A rank failed: its message, to every other rank.
pub const TAG_ABORT: transport::Tag = 7;
/// A helper's gather accumulators, to the partition's master.
pub const TAG_MERGE: transport::Tag = 8;

/// Runs edge programs over a distributed layout on one rank; every rank runs
/// the same program at the same time.
pub struct DistRunner<'t> {
    pub transport: &'t dyn transport::Transport,
    pub dir: PathBuf,
    pub manifest: RankManifest,
    pub config: DistConfig,
    pub iterations: u64,
    pub stats: Option<RankStats>,
}

impl ProgramRunner for DistRunner<'_> {
    fn run_program<P: EdgeProgram>(
        &mut self,
        prog: &P,
    ) -> outcore_engine::Result<outcore_state::VertexArray<P::Out>> {
        if prog.both_directions() {
            return Err(EngineError::Invalid(format!(
                "{} on the distributed engine moves values along out-edges only; it needs a store holding both directions",
                prog.name()
            )));
        }
        let (out, it, stats) = compute::run(
            self.transport,
            &self.dir,
            &self.manifest,
            &self.config,
            prog,
        )
        .map_err(|e| match e {
            DistError::Engine(e) => e,
            DistError::Store(e) => EngineError::Store(e),
            DistError::Io(e) => EngineError::Io(e),
            e => EngineError::Invalid(e.to_string()),
        })?;
        self.iterations = it;
        self.stats = Some(stats);
        Ok(out)
    }
    fn iterations(&self) -> u64 {
        self.iterations
    }
}

/// The map between dense and user ids, from a rank's directory.
pub fn id_map(dir: &std::path::Path, m: &RankManifest) -> Result<outcore_store::IdMap> {
    let plan = &m.plan;
    if !plan.remapped {
        return Ok(outcore_store::IdMap::Offset {
            base: plan.id_base,
            n: plan.vertices,
        });
    }
    let path = layout::rank_dir(dir, m.rank as usize).join("idmap.bin");
    let bytes = std::fs::read(&path).map_err(|e| outcore_io::IoError::new(&path, "read", e))?;
    if bytes.len() as u64 != 8 * plan.vertices || crc32fast::hash(&bytes) != plan.idmap_crc {
        return Err(DistError::Layout(format!(
            "{}: damaged (its length or checksum does not match the manifest)",
            path.display()
        )));
    }
    let ids: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes);
    outcore_store::IdMap::from_user_ids(ids)
        .map_err(|why| DistError::Layout(format!("{}: {why}", path.display())))
}
