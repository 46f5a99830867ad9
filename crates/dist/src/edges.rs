//! Whole passes over a distributed layout's edges from rank 0 — what `dist run
//! --verify` checks a result against, with the same independent checks
//! `outcore run --verify` makes on a store.
//!
//! Every rank starts its storage engine as for a run; rank 0 streams every
//! partition's edge chunks from all of them (each chunk exactly once per pass:
//! every pass is a phase number of its own, which resets the storage engines'
//! cursors, §6.3), CRC-checked as in a run; the other ranks wait at a barrier
//! until rank 0 is done. Rank 0 holds what the check holds (the result and the
//! check's arrays); the edges only stream through it.

use crate::checkpoint::Record;
use crate::compute::{Ctx, RankStats};
use crate::error::{DistError, Result};
use crate::layout::{damaged_runs, runs, RankManifest, Rng};
use crate::storage::{self, header, u32_at};
use crate::transport::{self, Transport};
use crate::TAG_REQ;
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::time::Duration;

/// Phase numbers of the passes: far above any run's (`2i`, `2i + 1`).
const FIRST_PASS_PHASE: u32 = 0x8000_0000;

/// Passes over the edges, on rank 0.
pub struct EdgePasses<'a> {
    ctx: RefCell<Ctx<'a>>,
    pass: Cell<u32>,
}

impl EdgePasses<'_> {
    pub fn vertices(&self) -> u64 {
        self.ctx.borrow().plan.vertices
    }

    /// Every edge once (weights 1 on an unweighted layout or when `weights` is
    /// false), partition by partition, chunks in the order they arrive.
    pub fn for_each_edge(&self, weights: bool, f: &mut dyn FnMut(u32, u32, f32)) -> Result<()> {
        let mut ctx = self.ctx.borrow_mut();
        let phase = FIRST_PASS_PHASE + self.pass.get();
        self.pass.set(self.pass.get() + 1);
        let plan = ctx.plan;
        let tb = plan.target_bytes();
        let weighted = plan.weighted && weights;
        let n = plan.vertices;
        for p in 0..plan.partitions {
            let (a, b) = plan.range(p);
            ctx.stream(storage::GET_EDGES, p, phase, &[], &mut |_, data| {
                for r in runs(data, tb) {
                    let (u, targets) = r.map_err(|e| damaged_runs(p, e))?;
                    for t in targets.chunks_exact(tb) {
                        let v = u32_at(t, 0);
                        if (u as u64) < a || u as u64 >= b || v as u64 >= n {
                            return Err(DistError::Layout(format!(
                                "an edge chunk of partition {p} (vertices {a}..{b}) holds edge ({u}, {v}) of a layout with {n} vertices: the layout is damaged"
                            )));
                        }
                        let w = if weighted {
                            f32::from_bits(u32_at(t, 1))
                        } else {
                            1.0
                        };
                        f(u, v, w);
                    }
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// Runs `f` on rank 0 with passes over the layout's edges (`None` on the
/// others) while every rank's storage engine serves them; every rank returns
/// when rank 0 is done. A rank that fails stops the others.
pub fn with_edge_passes<R>(
    t: &dyn Transport,
    dir: &Path,
    manifest: &RankManifest,
    f: impl FnOnce(Option<&EdgePasses>) -> R,
) -> Result<R> {
    let rank = t.rank();
    let plan = &manifest.plan;
    let run_dir = crate::layout::rank_dir(dir, rank).join("verify");
    let ckpt_dir = run_dir.join("checkpoint");
    let mut idle = Duration::ZERO;
    let io = outcore_io::IoStats::new();
    let st = storage::Storage::open_on_every_rank(
        t, dir, manifest, &run_dir, &ckpt_dir, 4, io, &mut idle,
    )?;
    let board = st.board.clone();
    let st = std::sync::Mutex::new(st);
    let ctx = Ctx {
        t,
        plan,
        rng: Rng::new(0x5eed ^ (rank as u64) << 40),
        window: crate::compute::default_window(t.size()),
        idle,
        unacked: 0,
        stats: RankStats::default(),
        fail_at: None,
        ckpt_dir,
        record: Record {
            layout_id: plan.layout_id,
            rank: rank as u32,
            key: String::new(),
            generations: Vec::new(),
        },
        board,
        steal: false,
        local: &st,
    };
    let result = std::thread::scope(|s| {
        let server = s.spawn(|| storage::Storage::serve(&st, t));
        let passes = EdgePasses {
            ctx: RefCell::new(ctx),
            pass: Cell::new(0),
        };
        let out = f((rank == 0).then_some(&passes));
        let mut ctx = passes.ctx.into_inner();
        let r = transport::barrier(t, &mut ctx.idle);
        let _ = t.send(rank, TAG_REQ, header(storage::STOP, 0, 0, 0));
        let served = server.join().expect("storage thread");
        r.and(served).map(|_| out)
    });
    let _ = std::fs::remove_dir_all(&run_dir);
    result
}
