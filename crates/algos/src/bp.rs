//! Belief propagation as an edge program (Chaos SOSP'15 Table 1's BP), in the
//! linearized form of Gatterbauer et al., "Linearized and Single-Pass Belief
//! Propagation" (VLDB 2015), for two classes and homophily.
//!
//! Loopy sum-product BP keeps a message per edge and direction, and divides a
//! vertex's belief by the message its neighbour sent it before answering (X-Stream
//! and Chaos carry that state in the edge stream). Our engines keep state per
//! vertex only; LinBP is BP's linearization around uniform beliefs that needs
//! nothing else: with beliefs and priors centred on 1/2 (`x_v = b_v(1) - 1/2`,
//! `e_v` likewise) and the coupling matrix `[[1/2 + h, 1/2 - h], [1/2 - h,
//! 1/2 + h]]`, one update is
//!
//! `x_v <- e_v + 2h * (sum over edges (u, v) of x_u) - 4h^2 * d_v * x_v`
//!
//! where the last term is the echo cancellation (what dividing by the returning
//! message does in BP) and `d_v` is `v`'s degree (stored out-edges; on an
//! undirected store every neighbour, a parallel edge as often as stored).
//! Synchronous (Jacobi) from `x = e`. It converges when the spectral radius of
//! `2h A - 4h^2 D` is below 1 — by Gershgorin whenever `2h (1 + 2h) d_max < 1`;
//! the run stops when the last iteration changed the beliefs by at most
//! `--tolerance` (L1) or after `--iterations` (default 100), and its summary says
//! which, with the last change.
//!
//! Priors: a seeded tenth of the vertices are labelled, half of them towards
//! class 1 (`e = +0.1`) and half away (`e = -0.1`); the rest have `e = 0`
//! ([`bp_prior`]). The result per vertex is the belief in class 1, `1/2 + x_v`.
//! BP is defined on undirected graphs: the program runs on a store holding both
//! directions. Additions happen in varying order on several threads, so results
//! may differ between runs and engines in the last bits (relative 1e-12).

use outcore_engine::{Aggregates, EdgeProgram, Globals};

/// The prior of vertex `v` under `seed`, centred on 1/2 (`b_v(1) - 1/2`).
pub fn bp_prior(v: u32, seed: u64) -> f64 {
    let r = crate::mix64(v as u64 ^ seed.rotate_left(41) ^ 0x5bd1_e995);
    if !r.is_multiple_of(10) {
        0.0
    } else if (r >> 32) & 1 == 1 {
        0.1
    } else {
        -0.1
    }
}

/// Default iterations when `--iterations` is not given.
pub const BP_ITERATIONS: u64 = 100;

/// Linearized belief propagation (see the module docs). Aggregate 0: the L1
/// change of the beliefs in the iteration.
pub struct Bp {
    pub coupling: f64,
    pub seed: u64,
    pub tolerance: f64,
    pub iterations: u64,
}

impl EdgeProgram for Bp {
    /// `[x_v, e_v]`: the centred belief and prior.
    type V = [f64; 2];
    type Out = f64;
    #[inline]
    fn name(&self) -> &'static str {
        "bp"
    }
    #[inline]
    fn all_active(&self) -> bool {
        true
    }
    #[inline]
    fn init(&self, v: u32, _: u32, agg: &mut Aggregates) -> ([f64; 2], bool) {
        let e = bp_prior(v, self.seed);
        agg[0] += e.abs();
        ([e, e], true)
    }
    #[inline]
    fn message(&self, val: &[f64; 2], _: u32) -> u64 {
        (2.0 * self.coupling * val[0]).to_bits()
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
        crate::programs::add_f64(a, b)
    }
    #[inline]
    fn apply(
        &self,
        _: &Globals,
        val: &mut [f64; 2],
        acc: u64,
        d: u32,
        agg: &mut Aggregates,
    ) -> bool {
        let h = self.coupling;
        let [x, e] = *val;
        let next = e + f64::from_bits(acc) - 4.0 * h * h * d as f64 * x;
        agg[0] += (next - x).abs();
        val[0] = next;
        true
    }
    #[inline]
    fn proceed(&self, done: u64, agg: &Aggregates, _: u64) -> bool {
        done == 0 || (done < self.iterations && agg[0] > self.tolerance)
    }
    #[inline]
    fn output(&self, val: &[f64; 2]) -> f64 {
        0.5 + val[0]
    }
}
