//! What a pass runs over a block's sources ([`Runs`]): a run function, called
//! once per active source's run of targets (any `Fn(&Ctx, u32, &[u32],
//! Option<&[f32]>)`, the loop every pass had), or [`Flat`], for edge work that
//! depends on the source alone.
//!
//! # Why a flat pass
//! Most runs of a Kronecker graph's 64 x 64 grid hold one to three edges, so a
//! loop per run (and the look-ahead loop beside it) ends at a data-dependent
//! count: about two mispredicted branches a run, which cost more than the
//! run's loads and stores (the same lesson as wcc's share loop,
//! `stream/shares.rs`). [`Flat`] instead writes each run's value into a window
//! of per-edge slots, eight slots at a time whatever the run's length (the next
//! run overwrites what lies past its own end; a run longer than eight
//! finishes in a loop, rare), then applies the window's edges in one loop
//! without a data-dependent branch: `apply(v, value)` for each target in
//! storage order, with the target [`STREAM_AHEAD`] edges on hinted.
//!
//! # Invariants
//! * Both kinds apply exactly the edges of the active sources (`filter`, and
//!   in an asynchronous pass the sources re-entered), in storage order within
//!   a share. [`Flat`] applies a window's edges after the window's runs were
//!   valued, so in an asynchronous pass a source re-entered (or lowered) by an
//!   edge still in the window is valued as before it: it is active, and
//!   sends its new value, in the next pass or iteration instead. A
//!   synchronous program's iteration does not depend on the kind; a
//!   relaxation program reaches the same fixpoint.
//! * A run whose [`Flat`] value is `None` (the program refused the edge) is
//!   not applied; its edges count as processed, as the run function's do.

use super::{Ctx, Hint, SOURCE_AHEAD, STREAM_AHEAD};
use outcore_state::AtomicBitmap;
use std::ops::Range;

/// One share of a block's runs as a pass sees it: sources `ks` of the
/// block's `srcs`/`offs`/`dsts` (weights `ws` where streamed), which of them
/// are active, and the look-ahead hint.
pub struct Pass<'a, H: Hint> {
    pub(crate) ctx: &'a Ctx<'a>,
    pub(crate) srcs: &'a [u32],
    pub(crate) offs: &'a [u32],
    pub(crate) dsts: &'a [u32],
    pub(crate) ws: Option<&'a [f32]>,
    pub(crate) filter: &'a AtomicBitmap,
    /// A re-entry pass: a source re-entered earlier in it is active too.
    pub(crate) asyn: bool,
    pub(crate) ahead: &'a H,
}

impl<H: Hint> Pass<'_, H> {
    #[inline(always)]
    fn active(&self, u: u32) -> bool {
        self.filter.get(u) || self.asyn && self.ctx.reenter.get(u)
    }
    /// Hints the source [`SOURCE_AHEAD`] runs after run `k`, where the share
    /// (ending at run `last`) has one and the hint does anything.
    #[inline(always)]
    fn source_ahead(&self, k: usize, last: usize) {
        if H::SOURCE && k + SOURCE_AHEAD < last {
            self.ahead.source(self.srcs[k + SOURCE_AHEAD]);
        }
    }
}

/// The edge work of a pass over a block's sources; see the module docs.
pub trait Runs: Sync {
    /// Applies the runs `ks` of `p`'s share; returns (edges applied, sources
    /// skipped as inactive).
    #[doc(hidden)]
    fn runs<H: Hint>(&self, p: &Pass<'_, H>, ks: Range<usize>) -> (u64, u64);
}

impl<F: Fn(&Ctx, u32, &[u32], Option<&[f32]>) + Sync> Runs for F {
    #[inline(always)]
    fn runs<H: Hint>(&self, p: &Pass<'_, H>, ks: Range<usize>) -> (u64, u64) {
        let (srcs, offs, dsts) = (p.srcs, p.offs, p.dsts);
        let (mut edges, mut skipped) = (0u64, 0u64);
        // The targets this share ends with, for the look-ahead hint.
        let end = offs[ks.end] as usize;
        let last = ks.end;
        for k in ks {
            p.source_ahead(k, last);
            let u = srcs[k];
            if !p.active(u) {
                skipped += 1;
                continue;
            }
            let (a, z) = (offs[k] as usize, offs[k + 1] as usize);
            // Hint the targets STREAM_AHEAD edges beyond this run's:
            // consecutive runs tile the share, so each target is hinted once,
            // STREAM_AHEAD edges before it is applied.
            for &v in &dsts[(a + STREAM_AHEAD).min(end)..(z + STREAM_AHEAD).min(end)] {
                p.ahead.target(v);
            }
            self(p.ctx, u, &dsts[a..z], p.ws.map(|w| &w[a..z]));
            edges += (z - a) as u64;
        }
        (edges, skipped)
    }
}

/// Edge work that depends on the source alone (an unweighted edge program
/// that does not read its target): `value(u, targets)` once per active
/// source's run (`None`: the run is refused and not applied), then
/// `apply(ctx, v, value)` for each of its targets, through the flat window of
/// the module docs. Weights, where the engine streams them, are not read.
pub struct Flat<V, A> {
    pub value: V,
    pub apply: A,
}

/// Edge slots in a [`Flat`] window (on the stack: 16 KiB of values).
const WINDOW: usize = 2048;

impl<V, A> Runs for Flat<V, A>
where
    V: Fn(u32, &[u32]) -> Option<u64> + Sync,
    A: Fn(&Ctx, u32, u64) + Sync,
{
    #[inline(always)]
    fn runs<H: Hint>(&self, p: &Pass<'_, H>, ks: Range<usize>) -> (u64, u64) {
        let (srcs, offs, dsts) = (p.srcs, p.offs, p.dsts);
        if ks.is_empty() {
            return (0, 0);
        }
        let (mut edges, mut skipped) = (0u64, 0u64);
        let end = offs[ks.end] as usize;
        let last = ks.end;
        // slot[i - base] holds the value of edge i, for edges base.. of the
        // runs filled so far.
        let mut slot = [0u64; WINDOW + 8];
        let mut base = offs[ks.start] as usize;
        // Applies edges from..to (base <= from <= to <= base + WINDOW).
        let apply = |slot: &[u64], base: usize, from: usize, to: usize| {
            let ahead = (to + STREAM_AHEAD).min(end).max(from + STREAM_AHEAD);
            let hinted = ahead - STREAM_AHEAD;
            for i in from..hinted {
                p.ahead.target(dsts[i + STREAM_AHEAD]);
                (self.apply)(p.ctx, dsts[i], slot[i - base]);
            }
            for i in hinted..to {
                (self.apply)(p.ctx, dsts[i], slot[i - base]);
            }
        };
        for k in ks {
            p.source_ahead(k, last);
            let u = srcs[k];
            let (mut a, z) = (offs[k] as usize, offs[k + 1] as usize);
            let value = if p.active(u) {
                edges += (z - a) as u64;
                (self.value)(u, &dsts[a..z])
            } else {
                skipped += 1;
                None
            };
            let Some(x) = value else {
                // Not applied: the window's edges so far are, and it starts
                // again after this run.
                apply(&slot, base, base, a);
                base = z;
                continue;
            };
            while z - base > WINDOW {
                slot[a - base..WINDOW].fill(x);
                apply(&slot, base, base, base + WINDOW);
                base += WINDOW;
                a = base;
            }
            let at = a - base;
            // Eight slots whatever the length: the next run overwrites the
            // ones past this run's end.
            slot[at..at + 8].fill(x);
            if z - a > 8 {
                slot[at + 8..z - base].fill(x);
            }
        }
        apply(&slot, base, base, end);
        (edges, skipped)
    }
}
