//! Strongly connected components as an edge program (Chaos SOSP'15 Table 1's
//! SCC; the colouring algorithm X-Stream and Chaos run, after Orzan's thesis and
//! Slota et al.'s "multistep" colouring step).
//!
//! Rounds of two phases over the vertices not yet assigned to a component:
//! * **forward colouring** — every unassigned vertex starts with its own id as
//!   its colour and the smallest colour flows along the edges (min label
//!   propagation restricted to the unassigned vertices) until nothing changes:
//!   `colour(v)` is then the smallest id among the unassigned vertices that
//!   reach `v`;
//! * **backward marking** — every vertex whose colour is its own id is a root;
//!   the roots, and every vertex of the same colour that reaches an assigned
//!   vertex of that colour along an edge, join the root's component (a backward
//!   search restricted to one colour). `SCC(c) = {v : colour(v) = c, v reaches c}`.
//!
//! Each component's label is its smallest id (the root), the same on every
//! engine, thread count and partition count.
//!
//! Following edges backwards in a push model needs the reverse edges: the
//! program runs on a store ingested with `--with-reverse`, which holds each edge
//! `(u, v, w)` and its reverse `(v, u)` with the weight's sign bit set, so `edge`
//! tells a forward edge (colours travel) from a reverse one (marks travel).
//!
//! A phase ends when an iteration changes no vertex; every vertex's `apply` sees
//! the count in [`Globals::prev`] and all of them switch phase together in the
//! next iteration (which sends nothing). Backward marks use `combine = min` over
//! `u32::MAX - colour`: every assigned out-neighbour `x` of an unassigned `w` has
//! `colour(x) <= colour(w)` (w's colour reaches x), so the largest mark that
//! arrives equals `colour(w)` exactly when some neighbour of w's colour was
//! marked.
//!
//! Rounds: one per "generation" of roots — few on graphs with a giant component
//! and many small ones, but up to the length of a chain of components in the
//! worst case (a path whose ids increase along it), the known weakness of
//! colouring; X-Stream and Chaos share it.

use outcore_engine::{Aggregates, EdgeProgram, Globals};

/// A vertex of the SCC program: its id, its colour (its component once
/// assigned) and flags.
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct SccVertex {
    pub id: u32,
    pub colour: u32,
    pub flags: u32,
}

/// Assigned to a component (`colour` is its label).
const DONE: u32 = 1;
/// The phase under way is backward marking (the same on every vertex).
const BACKWARD: u32 = 2;
/// Sends in the next iteration.
const SENDS: u32 = 4;
/// Message tag of a backward mark.
const MARK: u64 = 1 << 40;
/// Aggregates: vertices changed (and sending next), vertices unassigned.
const CHANGED: usize = 0;
const LEFT: usize = 1;

/// Strongly connected components by forward colouring and backward marking.
pub struct Scc {
    pub cap: Option<u64>,
}

impl Scc {
    fn set(val: &mut SccVertex, colour: u32, flags: u32, agg: &mut Aggregates) -> bool {
        *val = SccVertex {
            id: val.id,
            colour,
            flags,
        };
        if flags & SENDS != 0 {
            agg[CHANGED] += 1.0;
        }
        if flags & DONE == 0 {
            agg[LEFT] += 1.0;
        }
        flags & SENDS != 0
    }
}

impl EdgeProgram for Scc {
    type V = SccVertex;
    type Out = u32;
    #[inline]
    fn name(&self) -> &'static str {
        "scc"
    }
    /// The weight's sign tells a reverse edge; the weight itself is not used.
    #[inline]
    fn weighted(&self) -> bool {
        true
    }
    #[inline]
    fn uses_degrees(&self) -> bool {
        false
    }
    #[inline]
    fn bytes_per_vertex(&self) -> u64 {
        12 + 20
    }
    #[inline]
    fn init(&self, v: u32, _: u32, agg: &mut Aggregates) -> (SccVertex, bool) {
        let mut x = SccVertex {
            id: v,
            ..Default::default()
        };
        let sends = Self::set(&mut x, v, SENDS, agg);
        (x, sends)
    }
    /// Forward: colour + 1; backward: `MARK | colour + 1`; 0 when silent.
    #[inline]
    fn message(&self, val: &SccVertex, _: u32) -> u64 {
        if val.flags & SENDS == 0 {
            0
        } else if val.flags & BACKWARD != 0 {
            MARK | (val.colour as u64 + 1)
        } else {
            val.colour as u64 + 1
        }
    }
    #[inline]
    fn identity(&self) -> u64 {
        u64::MAX
    }
    /// Colours travel along forward edges, marks along reverse ones.
    #[inline]
    fn edge(&self, msg: u64, _: u32, w: f32) -> Option<u64> {
        let colour = (msg & 0xffff_ffff) - 1;
        let reverse = w.is_sign_negative();
        Some(match (msg & MARK != 0, reverse) {
            (false, false) => colour,
            (true, true) => u32::MAX as u64 - colour,
            _ => u64::MAX,
        })
    }
    #[inline]
    fn combine(&self, a: u64, b: u64) -> u64 {
        a.min(b)
    }
    #[inline]
    fn apply(
        &self,
        g: &Globals,
        val: &mut SccVertex,
        acc: u64,
        _: u32,
        agg: &mut Aggregates,
    ) -> bool {
        let (colour, flags) = (val.colour, val.flags);
        let done = flags & DONE;
        if g.prev[CHANGED] == 0.0 {
            // The phase under way changed nothing: every vertex switches.
            let backward = (flags & BACKWARD) ^ BACKWARD;
            if done != 0 {
                return Self::set(val, colour, done | backward, agg);
            }
            return if backward != 0 {
                // Roots mark themselves.
                let root = colour == val.id;
                let f = if root { DONE | SENDS } else { 0 };
                Self::set(val, colour, backward | f, agg)
            } else {
                // A new round: the unassigned start over from their own ids.
                Self::set(val, val.id, SENDS, agg)
            };
        }
        let phase = flags & BACKWARD;
        if done != 0 {
            return Self::set(val, colour, done | phase, agg);
        }
        if phase == 0 && acc < colour as u64 {
            Self::set(val, acc as u32, SENDS, agg)
        } else if phase != 0 && acc != u64::MAX && u32::MAX as u64 - acc == colour as u64 {
            Self::set(val, colour, DONE | BACKWARD | SENDS, agg)
        } else {
            Self::set(val, colour, phase, agg)
        }
    }
    #[inline]
    fn proceed(&self, done: u64, agg: &Aggregates, _: u64) -> bool {
        (agg[CHANGED] > 0.0 || agg[LEFT] > 0.0) && self.cap.is_none_or(|k| done < k)
    }
    #[inline]
    fn output(&self, val: &SccVertex) -> u32 {
        val.colour
    }
}
