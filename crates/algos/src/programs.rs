//! The algorithms as edge programs ([`outcore_engine::EdgeProgram`]) — each
//! written once, run by every engine of the push model (streaming, jobs,
//! external, sort-reduce; the relaxation programs also on the vertex engine) —
//! and [`run_program`], which runs them and turns the result into an [`Output`].
//!
//! * [`Bfs`]: `depth << 32 | parent` lowered by `min` (a relaxation program), so
//!   the parent is the smallest-id in-neighbour one level up, on every engine,
//!   thread count and order; a vertex is activated only when its depth drops
//!   (CLIP ATC'17 §3.1, the SSSP example of §4.4 with unit weights);
//! * [`Sssp`]: `f32 distance bits << 32 | parent` lowered by `min` — for
//!   non-negative floats the bit patterns order like the values, so the fixed
//!   point is the least solution of `d(v) = min over (u, v) of fl(d(u) + w)`
//!   whatever the order (Bellman-Ford, CLIP §4.4 Algorithm 1); a negative or NaN
//!   weight on an edge the search meets stops the run with the edge named;
//! * [`WccLp`]: the smallest label among neighbours (label propagation, the
//!   baseline GridGraph and X-Stream run, CLIP §3.2); on a directed store labels
//!   also flow against the edges ([`EdgeProgram::both_directions`]), which the
//!   streaming, jobs and vertex engines do and the external engine refuses;
//! * [`PageRank`]: LDBC Graphalytics, `PR(v) = (1 - d) / n + d * (sum over (u, v)
//!   of PR(u) / outdeg(u) + D / n)` with `D` the rank of dangling vertices, spread
//!   uniformly; `PR_0 = 1 / n`; `f64`; synchronous. With several threads the
//!   additions happen in varying order, so results may differ between runs in
//!   the last bits (relative 1e-15);
//! * [`PageRankDelta`]: delta PageRank to a tolerance (CLIP §5.1.2): residuals
//!   above `tolerance / n` are pushed; the result is within `tolerance / (1 - d)`
//!   (L1) of the fixed point, and one more power iteration changes it by at most
//!   `d * tolerance` (what `--verify` checks);
//! * [`Spmv`]: `y = A^T x` with `x = 1`, weights as stored, repeated
//!   `--iterations` times.
//!
//! Bytes per destination in memory on the external engine (value + 20):
//! wcc-lp 24; bfs, sssp, pagerank, spmv 28; pagerank-delta 44. On the streaming
//! engine ([`outcore_engine::stream_bytes_per_vertex`]): wcc-lp 4, bfs and sssp
//! 8, spmv 16, pagerank 28, pagerank-delta 44 (its messages in an array of their
//! own: read from the 24-byte values at each edge, it ran 11% slower).

use crate::{Algo, AlgoError, Output, Params, Result, Run};
use outcore_engine::{relax_apply, Aggregates, EdgeProgram, EngineError, Globals, ProgramRunner};
use outcore_state::VertexArray;

pub use crate::scc::Scc;

mod run;
pub use run::*;

/// The `combine` of programs whose contributions are `f64` sums (bit patterns
/// in the `u64`).
#[inline(always)]
pub fn add_f64(a: u64, b: u64) -> u64 {
    (f64::from_bits(a) + f64::from_bits(b)).to_bits()
}

/// Breadth-first search.
pub struct Bfs {
    pub root: u32,
    pub cap: Option<u64>,
}

impl EdgeProgram for Bfs {
    type V = u64;
    type Out = u64;
    #[inline]
    fn name(&self) -> &'static str {
        "bfs"
    }
    #[inline]
    fn uses_degrees(&self) -> bool {
        false
    }
    #[inline]
    fn narrow_messages(&self) -> bool {
        true
    }
    #[inline]
    fn epoch_messages(&self) -> bool {
        // Synchronously, the root is at depth 0 and a vertex first reached in
        // iteration e is at depth e (its candidates are at depth e - 1 + 1), so
        // a source activated in iteration e sends e.
        true
    }
    #[inline]
    fn idle_without_messages(&self) -> bool {
        true
    }
    fn sparse_start(&self) -> Option<Vec<u32>> {
        Some(vec![self.root])
    }
    #[inline]
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u64, bool) {
        if v == self.root {
            (v as u64, true)
        } else {
            (u64::MAX, false)
        }
    }
    #[inline]
    fn message(&self, val: &u64, _: u32) -> u64 {
        *val >> 32
    }
    #[inline]
    fn identity(&self) -> u64 {
        u64::MAX
    }
    #[inline]
    fn edge(&self, depth: u64, u: u32, _: f32) -> Option<u64> {
        Some(((depth + 1) << 32) | u as u64)
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    #[inline]
    fn relaxes(&self) -> bool {
        true
    }
    #[inline]
    fn settles(&self) -> bool {
        true
    }
    #[inline]
    fn final_after(&self, word: u64, iteration: u64) -> bool {
        // Sources applied after iteration i are at depth i + 1 or more, so their
        // candidates are at depth i + 2 or more: a depth of at most i + 1 (and
        // its smallest parent at that depth) can no longer change.
        word >> 32 <= iteration + 1
    }
    #[inline]
    fn pulls(&self) -> bool {
        // A capped search stops after `cap` iterations, whatever they did: a
        // bottom-up step (one level) and a top-down one (several, with
        // re-entry) reach different depths by then.
        self.cap.is_none()
    }
    #[inline]
    fn pulls_from(&self, word: u64, iteration: u64) -> bool {
        // Depths up to `iteration` are final; a vertex not final with an
        // in-neighbour at exactly that depth is at depth `iteration + 1`, its
        // parent the smallest such in-neighbour.
        word >> 32 == iteration
    }
    #[inline]
    fn frontier_message(&self, iteration: u64) -> Option<u64> {
        // `message` is the depth, which `pulls_from` fixes at `iteration`.
        Some(iteration)
    }
    #[inline]
    fn improves(&self, old: u64, new: u64) -> bool {
        // Activated only when the depth drops, not when only the parent does.
        new >> 32 < old >> 32
    }
    #[inline]
    fn apply(&self, _: &Globals, val: &mut u64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        relax_apply(self, val, acc)
    }
    #[inline]
    fn proceed(&self, done: u64, _: &Aggregates, active: u64) -> bool {
        active > 0 && self.cap.is_none_or(|k| done < k)
    }
    #[inline]
    fn output(&self, val: &u64) -> u64 {
        *val
    }
}

/// Single-source shortest paths (Bellman-Ford).
pub struct Sssp {
    pub root: u32,
    pub cap: Option<u64>,
}

impl EdgeProgram for Sssp {
    type V = u64;
    type Out = u64;
    #[inline]
    fn name(&self) -> &'static str {
        "sssp"
    }
    #[inline]
    fn uses_degrees(&self) -> bool {
        false
    }
    #[inline]
    fn narrow_messages(&self) -> bool {
        true
    }
    #[inline]
    fn idle_without_messages(&self) -> bool {
        true
    }
    #[inline]
    fn weighted(&self) -> bool {
        true
    }
    fn sparse_start(&self) -> Option<Vec<u32>> {
        Some(vec![self.root])
    }
    #[inline]
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u64, bool) {
        if v == self.root {
            (v as u64, true)
        } else {
            (u64::MAX, false)
        }
    }
    #[inline]
    fn message(&self, val: &u64, _: u32) -> u64 {
        *val >> 32
    }
    #[inline]
    fn identity(&self) -> u64 {
        u64::MAX
    }
    #[inline]
    fn edge(&self, dist: u64, u: u32, w: f32) -> Option<u64> {
        if w < 0.0 || w.is_nan() {
            return None;
        }
        let d = f32::from_bits(dist as u32) + w;
        Some(((d.to_bits() as u64) << 32) | u as u64)
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    #[inline]
    fn relaxes(&self) -> bool {
        true
    }
    #[inline]
    fn improves(&self, old: u64, new: u64) -> bool {
        // Activated only when the distance drops, not when only the parent does.
        new >> 32 < old >> 32
    }
    #[inline]
    fn apply(&self, _: &Globals, val: &mut u64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        relax_apply(self, val, acc)
    }
    #[inline]
    fn proceed(&self, done: u64, _: &Aggregates, active: u64) -> bool {
        active > 0 && self.cap.is_none_or(|k| done < k)
    }
    #[inline]
    fn output(&self, val: &u64) -> u64 {
        *val
    }
}

/// Connected components by label propagation: every vertex takes the smallest
/// label among its neighbours. On a directed store (`both_directions`) a label
/// also flows against the edge, from target to source.
pub struct WccLp {
    pub cap: Option<u64>,
    pub both_directions: bool,
}

impl EdgeProgram for WccLp {
    type V = u32;
    type Out = u32;
    #[inline]
    fn name(&self) -> &'static str {
        "wcc-lp"
    }
    #[inline]
    fn uses_degrees(&self) -> bool {
        false
    }
    #[inline]
    fn relaxes(&self) -> bool {
        true
    }
    #[inline]
    fn both_directions(&self) -> bool {
        self.both_directions
    }
    #[inline]
    fn narrow_messages(&self) -> bool {
        true
    }
    #[inline]
    fn idle_without_messages(&self) -> bool {
        true
    }
    #[inline]
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u32, bool) {
        (v, true)
    }
    #[inline]
    fn message(&self, val: &u32, _: u32) -> u64 {
        *val as u64
    }
    #[inline]
    fn identity(&self) -> u64 {
        u64::MAX
    }
    #[inline]
    fn edge(&self, label: u64, _: u32, _: f32) -> Option<u64> {
        Some(label)
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    #[inline]
    fn apply(&self, _: &Globals, val: &mut u32, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        relax_apply(self, val, acc)
    }
    #[inline]
    fn proceed(&self, done: u64, _: &Aggregates, active: u64) -> bool {
        active > 0 && self.cap.is_none_or(|k| done < k)
    }
    #[inline]
    fn output(&self, val: &u32) -> u32 {
        *val
    }
}

/// PageRank (LDBC Graphalytics). Aggregate 0: rank held by dangling vertices.
pub struct PageRank {
    pub n: u64,
    pub damping: f64,
    pub iterations: u64,
}

impl EdgeProgram for PageRank {
    type V = f64;
    type Out = f64;
    #[inline]
    fn name(&self) -> &'static str {
        "pagerank"
    }
    #[inline]
    fn all_active(&self) -> bool {
        true
    }
    #[inline]
    fn init(&self, _: u32, deg: u32, agg: &mut Aggregates) -> (f64, bool) {
        let x = 1.0 / self.n as f64;
        if deg == 0 {
            agg[0] += x;
        }
        (x, true)
    }
    #[inline]
    fn message(&self, val: &f64, deg: u32) -> u64 {
        if deg == 0 {
            0f64.to_bits()
        } else {
            (val / deg as f64).to_bits()
        }
    }
    #[inline]
    fn identity(&self) -> u64 {
        0f64.to_bits()
    }
    #[inline]
    fn edge(&self, msg: u64, _: u32, _: f32) -> Option<u64> {
        Some(msg)
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        add_f64(a, b)
    }
    #[inline]
    fn apply(&self, g: &Globals, val: &mut f64, acc: u64, deg: u32, agg: &mut Aggregates) -> bool {
        let n = self.n as f64;
        let d = self.damping;
        let base = (1.0 - d) / n + d * g.prev[0] / n;
        *val = base + d * f64::from_bits(acc);
        if deg == 0 {
            agg[0] += *val;
        }
        true
    }
    #[inline]
    fn proceed(&self, done: u64, _: &Aggregates, _: u64) -> bool {
        done < self.iterations
    }
    #[inline]
    fn output(&self, val: &f64) -> f64 {
        *val
    }
}

/// A vertex of delta PageRank: accumulated rank, pending residual, what it pushes.
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Delta {
    pub rank: f64,
    pub resid: f64,
    pub push: f64,
}

/// Delta PageRank to a tolerance. Aggregates: 0, residual pushed by dangling
/// vertices; 1, vertices that pushed.
pub struct PageRankDelta {
    pub n: u64,
    pub damping: f64,
    pub tolerance: f64,
    pub cap: Option<u64>,
}

impl PageRankDelta {
    /// The push step that opens an iteration (as `pagerank_delta`'s `vmap`).
    fn push(&self, x: &mut Delta, deg: u32, agg: &mut Aggregates) -> bool {
        let eps = self.tolerance / self.n as f64;
        if x.resid > eps {
            let r = x.resid;
            x.rank += r;
            x.resid = 0.0;
            x.push = if deg == 0 { r } else { r / deg as f64 };
            agg[1] += 1.0;
            if deg == 0 {
                agg[0] += x.push;
            }
            deg > 0
        } else {
            x.push = 0.0;
            false
        }
    }
}

impl EdgeProgram for PageRankDelta {
    type V = Delta;
    type Out = f64;
    #[inline]
    fn name(&self) -> &'static str {
        "pagerank-delta"
    }
    #[inline]
    fn init(&self, _: u32, deg: u32, agg: &mut Aggregates) -> (Delta, bool) {
        let mut x = Delta {
            rank: 0.0,
            resid: (1.0 - self.damping) / self.n as f64,
            push: 0.0,
        };
        if self.cap == Some(0) {
            return (x, false);
        }
        let act = self.push(&mut x, deg, agg);
        (x, act)
    }
    #[inline]
    fn message(&self, val: &Delta, _: u32) -> u64 {
        val.push.to_bits()
    }
    #[inline]
    fn identity(&self) -> u64 {
        0f64.to_bits()
    }
    #[inline]
    fn edge(&self, msg: u64, _: u32, _: f32) -> Option<u64> {
        Some((self.damping * f64::from_bits(msg)).to_bits())
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        add_f64(a, b)
    }
    #[inline]
    fn apply(&self, g: &Globals, x: &mut Delta, acc: u64, deg: u32, agg: &mut Aggregates) -> bool {
        x.resid += f64::from_bits(acc);
        if g.prev[0] > 0.0 {
            x.resid += self.damping * g.prev[0] / self.n as f64;
        }
        if self.cap.is_some_and(|k| g.iteration >= k) {
            x.push = 0.0;
            return false;
        }
        self.push(x, deg, agg)
    }
    #[inline]
    fn proceed(&self, done: u64, agg: &Aggregates, _: u64) -> bool {
        agg[1] > 0.0 && self.cap.is_none_or(|k| done < k)
    }
    #[inline]
    fn output(&self, x: &Delta) -> f64 {
        x.rank + x.resid
    }
}

/// `y = A^T x`, `x = 1`, `iterations` times.
pub struct Spmv {
    pub iterations: u64,
}

impl EdgeProgram for Spmv {
    type V = f64;
    type Out = f64;
    #[inline]
    fn name(&self) -> &'static str {
        "spmv"
    }
    #[inline]
    fn uses_degrees(&self) -> bool {
        false
    }
    #[inline]
    fn message_from_value(&self) -> bool {
        true
    }
    #[inline]
    fn weighted(&self) -> bool {
        true
    }
    #[inline]
    fn all_active(&self) -> bool {
        true
    }
    #[inline]
    fn init(&self, _: u32, _: u32, _: &mut Aggregates) -> (f64, bool) {
        (1.0, true)
    }
    #[inline]
    fn message(&self, val: &f64, _: u32) -> u64 {
        val.to_bits()
    }
    #[inline]
    fn identity(&self) -> u64 {
        0f64.to_bits()
    }
    #[inline]
    fn edge(&self, msg: u64, _: u32, w: f32) -> Option<u64> {
        Some((w as f64 * f64::from_bits(msg)).to_bits())
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        add_f64(a, b)
    }
    #[inline]
    fn apply(&self, _: &Globals, val: &mut f64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        *val = f64::from_bits(acc);
        true
    }
    #[inline]
    fn proceed(&self, done: u64, _: &Aggregates, _: u64) -> bool {
        done < self.iterations
    }
    #[inline]
    fn output(&self, val: &f64) -> f64 {
        *val
    }
}

const MIS_KEY: u64 = (1 << 61) - 1;
const MIS_SENDS: u64 = 1 << 61;
const MIS_IN: u64 = 1;
const MIS_OUT: u64 = 2;

/// Vertex `v`'s key in round `r`: 29 random bits above its id, so keys are
/// distinct and ties impossible.
fn mis_key(v: u32, r: u64, seed: u64) -> u64 {
    ((crate::mix64(seed ^ (r << 32) ^ v as u64) >> 35) << 32) | v as u64
}

/// A maximal independent set by Luby's rounds as an edge program (Chaos
/// Table 1's MIS in GAS form), on an undirected store. Odd iterations select:
/// every undecided vertex sends its key for the round; one whose key is below
/// every undecided neighbour's joins the set. Even iterations remove: the new
/// members tell their neighbours, which leave; the undecided left draw the next
/// round's key. The value packs the state (bits 62-63: undecided, in, out),
/// whether the vertex sends next (bit 61: a wide message is nonzero exactly
/// then) and the key. A self-loop neither blocks nor removes its vertex. Every
/// engine gives the same set for a seed (keys depend on the vertex, round and
/// seed only).
pub struct MisGas {
    pub seed: u64,
    pub cap: Option<u64>,
}

impl MisGas {
    fn set(val: &mut u64, state: u64, sends: bool, key: u64) -> bool {
        *val = (state << 62) | if sends { MIS_SENDS } else { 0 } | key;
        sends
    }
}

impl EdgeProgram for MisGas {
    type V = u64;
    type Out = u32;
    #[inline]
    fn name(&self) -> &'static str {
        "mis-gas"
    }
    #[inline]
    fn uses_degrees(&self) -> bool {
        false
    }
    #[inline]
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u64, bool) {
        (MIS_SENDS | mis_key(v, 1, self.seed), true)
    }
    /// Members send 1 (remove), undecided vertices their key + 2 (select);
    /// a vertex that does not send has message 0.
    #[inline]
    fn message(&self, val: &u64, _: u32) -> u64 {
        if val & MIS_SENDS == 0 {
            0
        } else if val >> 62 == MIS_IN {
            1
        } else {
            (val & MIS_KEY) + 2
        }
    }
    #[inline]
    fn identity(&self) -> u64 {
        u64::MAX
    }
    #[inline]
    fn edge(&self, msg: u64, _: u32, _: f32) -> Option<u64> {
        Some(msg)
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    #[inline]
    fn apply(&self, g: &Globals, val: &mut u64, acc: u64, _: u32, _: &mut Aggregates) -> bool {
        let (state, key) = (*val >> 62, *val & MIS_KEY);
        if state != 0 {
            return Self::set(val, state, false, key);
        }
        if g.iteration % 2 == 1 {
            // Select: no undecided neighbour has a smaller key (its own key
            // comes back only along a self-loop).
            let joins = acc >= key + 2;
            Self::set(val, if joins { MIS_IN } else { 0 }, joins, key)
        } else if acc == 1 {
            Self::set(val, MIS_OUT, false, key)
        } else {
            let v = (key & 0xffff_ffff) as u32;
            Self::set(val, 0, true, mis_key(v, g.iteration / 2 + 1, self.seed))
        }
    }
    #[inline]
    fn proceed(&self, done: u64, _: &Aggregates, active: u64) -> bool {
        active > 0 && self.cap.is_none_or(|k| done < k)
    }
    #[inline]
    fn output(&self, val: &u64) -> u32 {
        (val >> 62 == MIS_IN) as u32
    }
}

/// The side of vertex `v` in conductance's seeded random vertex set `S`
/// (1: in `S`).
pub fn conductance_side(v: u32, seed: u64) -> u32 {
    (crate::mix64(v as u64 ^ seed.rotate_left(29)) & 1) as u32
}

/// The conductance of a seeded random vertex set `S` (Chaos Table 1):
/// `cut(S, V \ S) / min(vol(S), vol(V \ S))`, the cut counting every edge
/// between the sides (either direction, each edge once, parallel edges each)
/// and a volume the sum of its vertices' out-degrees. One pass: each edge tells
/// its target its source's side; a vertex counts its in-edges from the other
/// side. The value packs the side (bit 63), the out-degree (bits 32-62) and
/// that count (bits 0-31); [`conductance_result`] adds them up.
pub struct Conductance {
    pub seed: u64,
}

const LOW: u64 = 0xffff_ffff;

impl EdgeProgram for Conductance {
    type V = u64;
    type Out = u64;
    #[inline]
    fn name(&self) -> &'static str {
        "conductance"
    }
    #[inline]
    fn all_active(&self) -> bool {
        true
    }
    #[inline]
    fn init(&self, v: u32, _: u32, _: &mut Aggregates) -> (u64, bool) {
        ((conductance_side(v, self.seed) as u64) << 63, true)
    }
    #[inline]
    fn message(&self, val: &u64, _: u32) -> u64 {
        val >> 63
    }
    #[inline]
    fn identity(&self) -> u64 {
        0
    }
    /// Counts in-edges from `S` in the high half, from the rest in the low half.
    #[inline]
    fn edge(&self, msg: u64, _: u32, _: f32) -> Option<u64> {
        Some(if msg == 1 { 1 << 32 } else { 1 })
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.wrapping_add(b)
    }
    #[inline]
    fn apply(&self, _: &Globals, val: &mut u64, acc: u64, d: u32, _: &mut Aggregates) -> bool {
        let side = *val >> 63;
        let other = if side == 1 { acc & LOW } else { acc >> 32 };
        *val = (side << 63) | ((d as u64 & 0x7fff_ffff) << 32) | (other & LOW);
        true
    }
    #[inline]
    fn proceed(&self, done: u64, _: &Aggregates, _: u64) -> bool {
        done < 1
    }
    #[inline]
    fn output(&self, val: &u64) -> u64 {
        *val
    }
}

/// Conductance's membership flags (1: in `S`) and its summary line (every
/// engine's).
pub fn conductance_result(st: VertexArray<u64>) -> (Output, String) {
    let (mut cut, mut vol) = (0u64, [0u64; 2]);
    for &x in st.iter() {
        cut += x & LOW;
        vol[(x >> 63) as usize] += (x >> 32) & 0x7fff_ffff;
    }
    let line = conductance_line(cut, vol[1], vol[0]);
    (Output::Flags(st.map_into(|&x| (x >> 63) as u32)), line)
}

/// The summary line of a conductance: the value, the cut and both volumes.
pub fn conductance_line(cut: u64, vol_s: u64, vol_rest: u64) -> String {
    let min = vol_s.min(vol_rest);
    if min == 0 {
        format!("conductance undefined (cut {cut} edges, volumes {vol_s} / {vol_rest}: a side without out-edges)")
    } else {
        format!(
            "conductance {:.12} (cut {cut} edges, volumes {vol_s} / {vol_rest})",
            cut as f64 / min as f64
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what the external engine's planners assume of each program.
    #[derive(Default)]
    struct Probe {
        seen: Option<(u64, bool)>,
    }

    impl ProgramRunner for Probe {
        fn run_program<P: EdgeProgram>(
            &mut self,
            prog: &P,
        ) -> outcore_engine::Result<outcore_state::VertexArray<P::Out>> {
            self.seen = Some((prog.bytes_per_vertex(), prog.narrow_messages()));
            Err(outcore_engine::EngineError::Budget("probed".into()))
        }
        fn iterations(&self) -> u64 {
            0
        }
        fn both_directions(&self) -> bool {
            true
        }
    }

    /// What `sparse_start` promises of `init`, checked on vertices `0..n`.
    fn check_sparse_start<P: EdgeProgram>(prog: &P, n: u32) -> usize {
        let start = prog.sparse_start().expect("a sparse start");
        assert!(start.windows(2).all(|w| w[0] < w[1]), "ascending");
        for v in 0..n {
            for d in [0, 1, 7] {
                let mut agg: Aggregates = [0.0; 4];
                let (_, act) = prog.init(v, d, &mut agg);
                assert_eq!(act, start.contains(&v), "{}: vertex {v}", prog.name());
                if !act {
                    assert_eq!(
                        agg,
                        [0.0; 4],
                        "{}: vertex {v} adds to the aggregates",
                        prog.name()
                    );
                }
            }
        }
        start.len()
    }

    #[test]
    fn sparse_starts_are_what_init_activates() {
        assert_eq!(check_sparse_start(&Bfs { root: 5, cap: None }, 64), 1);
        assert_eq!(
            check_sparse_start(
                &Sssp {
                    root: 0,
                    cap: Some(3)
                },
                64
            ),
            1
        );
        assert!(WccLp {
            cap: None,
            both_directions: false
        }
        .sparse_start()
        .is_none());
    }

    #[test]
    fn external_planning_tables_match_the_programs() {
        let dir = std::path::Path::new("probe");
        for algo in Algo::ALL.into_iter().filter(|&a| external_supported(a)) {
            let facts = GraphFacts {
                vertices: 16,
                directed: false,
                reverse_marked: algo == Algo::Scc,
                dir,
                ids: &|| Err(outcore_store::StoreError::Invalid("no ids".into())),
            };
            let mut probe = Probe::default();
            assert!(run_program_on(&mut probe, &facts, algo, &Params::default()).is_err());
            let (bpv, narrow) = probe
                .seen
                .unwrap_or_else(|| panic!("{} ran no program", algo.name()));
            assert!(
                bpv <= external_bytes_per_vertex(algo),
                "{}: {bpv} bytes a vertex, planned {}",
                algo.name(),
                external_bytes_per_vertex(algo)
            );
            assert_eq!(narrow, external_narrow(algo), "{}", algo.name());
        }
    }
}
