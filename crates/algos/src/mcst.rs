//! Minimum cost spanning forest as an edge program (Chaos SOSP'15 Table 1's
//! MCST; Borůvka's algorithm in the form X-Stream and Chaos run it, with the
//! gather seeing the vertex it gathers into: [`EdgeProgram::reads_destination`]).
//!
//! Every vertex carries its component's label and a parent pointer into the
//! forest built so far (each component's edges form a tree rooted somewhere in
//! it; the result is that forest: a vertex's parent and the weight of the edge to
//! it). A round merges every component with the component its cheapest leaving
//! edge reaches, in phases (each a run of iterations; a phase ends when an
//! iteration changes nothing, and every vertex's `apply` sees that count in
//! [`Globals::prev`], so all switch together):
//!
//! 1. **candidates** (one iteration): every vertex sends its label; an edge from
//!    another component offers `(weight, that label)`; a vertex keeps the least;
//! 2. **weight**, 3. **target**, 4. **chooser**: three propagations of a minimum
//!    over the edges inside a component agree on the component's key — the least
//!    weight of a leaving edge, then the least label reached at that weight, then
//!    the least id of a vertex holding such an edge (the one vertex that adds it);
//! 5. **query** (one iteration): the chooser asks the target component for one
//!    endpoint of such an edge, and learns whether that component chose it back;
//! 6. **relabel**: the components that chose each other form pairs; the pair's
//!    smaller label is the root of its group (every other component's chosen edge
//!    leads towards it) and its label flows to the group over the edges inside
//!    components and the chosen edges (from target to chooser);
//! 7. **re-root**: every component that joins another re-roots its tree at its
//!    chooser (the parent pointers on the path from the chooser to the old root
//!    are reversed, one step per iteration) and hangs it on the chosen edge.
//!
//! Keys compare `(weight, label)`: the order (weight, smaller label, larger
//! label) of the pair of components is a total order, so the chosen edges form
//! no cycle but the pairs' mutual choices, of which one edge is kept (Borůvka's
//! tie rule). Weights are compared by their IEEE bits made monotone, so negative
//! weights are fine. Each round at least halves the components that have a
//! leaving edge; a component without one is a whole connected component and is
//! done. The weights of the forest's edges, as a multiset, are the same for every
//! minimum spanning forest, so every engine, thread count and partition count
//! gives a forest of the same weight (the forest itself may differ where weights
//! tie). Iterations per round grow with the components' diameters (and the
//! depth of their trees for the re-rooting), the known weakness of
//! label-propagation Borůvka on high-diameter graphs.

use outcore_engine::{Aggregates, EdgeProgram, Globals};

/// A vertex of the MCST program (all ids dense; `NONE` where unset).
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct MstVertex {
    pub id: u32,
    /// The component's label.
    pub comp: u32,
    /// The forest parent and the weight of the edge to it (f32 bits).
    pub parent: u32,
    pub pw: u32,
    /// This vertex's least leaving edge: monotone weight bits and the label
    /// it reaches.
    pub cand_w: u32,
    pub cand_d: u32,
    /// The component's key (weight, target label) and chooser.
    pub kw: u32,
    pub kd: u32,
    pub cho: u32,
    /// The chooser's endpoint in the target component (when it joins it).
    pub hook: u32,
    /// The group's new label.
    pub label: u32,
    /// The parent pointer a re-rooting token passes on next.
    pub tok_parent: u32,
    pub tok_pw: u32,
    pub flags: u32,
}

const NONE: u32 = u32::MAX;
/// Phases (the low bits of `flags`, the same on every vertex).
const CAND: u32 = 0;
const WEIGHT: u32 = 1;
const TARGET: u32 = 2;
const CHOOSER: u32 = 3;
const QUERY: u32 = 4;
const RELABEL: u32 = 5;
const REROOT: u32 = 6;
const PHASE: u32 = 0xff;
/// Sends in the next iteration.
const SENDS: u32 = 1 << 8;
/// Its component has no leaving edge: finished.
const DONE: u32 = 1 << 9;
/// Aggregates: vertices changed (and sending next), vertices not done.
const CHANGED: usize = 0;
const LEFT: usize = 1;

/// `w`'s bits, made monotone: `a < b` as floats iff `ord(a) < ord(b)`.
pub fn ord(w: f32) -> u32 {
    let b = w.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// The inverse of [`ord`].
pub fn unord(o: u32) -> f32 {
    f32::from_bits(if o & 0x8000_0000 != 0 {
        o & 0x7fff_ffff
    } else {
        !o
    })
}

/// Minimum cost spanning forest by Borůvka's rounds.
pub struct Mcst {
    pub cap: Option<u64>,
}

fn phase(v: &MstVertex) -> u32 {
    v.flags & PHASE
}

/// A message: a 32-bit tag + 1 (never 0, so a sender's message is nonzero)
/// above a 32-bit payload.
fn msg(tag: u32, payload: u32) -> u64 {
    ((tag as u64 + 1) << 32) | payload as u64
}

impl Mcst {
    /// Sets phase `ph` and whether the vertex sends; counts it.
    fn set(val: &mut MstVertex, ph: u32, sends: bool, agg: &mut Aggregates) -> bool {
        val.flags = (val.flags & DONE) | ph | if sends { SENDS } else { 0 };
        if sends {
            agg[CHANGED] += 1.0;
        }
        if val.flags & DONE == 0 {
            agg[LEFT] += 1.0;
        }
        sends
    }

    /// The first iteration of the phase after `val`'s (the previous one changed
    /// nothing, so no message arrived).
    fn switch(val: &mut MstVertex, agg: &mut Aggregates) -> bool {
        match phase(val) {
            WEIGHT => {
                if val.kw == NONE {
                    // No edge leaves the component: it is finished.
                    val.flags |= DONE;
                    return Self::set(val, TARGET, false, agg);
                }
                val.kd = if val.cand_w == val.kw {
                    val.cand_d
                } else {
                    NONE
                };
                Self::set(val, TARGET, val.kd != NONE, agg)
            }
            TARGET => {
                val.cho = if val.cand_w == val.kw && val.cand_d == val.kd {
                    val.id
                } else {
                    NONE
                };
                Self::set(val, CHOOSER, val.cho != NONE, agg)
            }
            CHOOSER => Self::set(val, QUERY, true, agg),
            RELABEL => {
                // The group's label, and the chooser of a joining component
                // hangs its tree on the chosen edge (re-rooting it first).
                if val.label != NONE {
                    val.comp = val.label;
                }
                let mut sends = false;
                if val.hook != NONE {
                    val.tok_parent = val.parent;
                    val.tok_pw = val.pw;
                    val.parent = val.hook;
                    val.pw = unord(val.kw).to_bits();
                    sends = val.tok_parent != NONE;
                }
                Self::set(val, REROOT, sends, agg)
            }
            // REROOT (a round ends), and CAND / QUERY (one iteration each, which
            // always sends while any vertex is left): a new round.
            _ => {
                val.cand_w = NONE;
                val.cand_d = NONE;
                val.kw = NONE;
                val.kd = NONE;
                val.cho = NONE;
                val.hook = NONE;
                val.label = NONE;
                val.tok_parent = NONE;
                Self::set(val, CAND, true, agg)
            }
        }
    }
}

impl EdgeProgram for Mcst {
    type V = MstVertex;
    type Out = u64;
    #[inline]
    fn name(&self) -> &'static str {
        "mcst"
    }
    #[inline]
    fn weighted(&self) -> bool {
        true
    }
    #[inline]
    fn uses_degrees(&self) -> bool {
        false
    }
    #[inline]
    fn reads_destination(&self) -> bool {
        true
    }
    #[inline]
    fn init(&self, v: u32, _: u32, agg: &mut Aggregates) -> (MstVertex, bool) {
        let mut x = MstVertex {
            id: v,
            comp: v,
            parent: NONE,
            pw: 0,
            flags: REROOT,
            ..Default::default()
        };
        let sends = Self::switch(&mut x, agg);
        (x, sends)
    }
    #[inline]
    fn message(&self, val: &MstVertex, _: u32) -> u64 {
        if val.flags & SENDS == 0 {
            return 0;
        }
        match phase(val) {
            CAND => msg(val.comp, 0),
            WEIGHT => msg(val.comp, val.kw),
            TARGET | QUERY => msg(val.comp, val.kd),
            CHOOSER => msg(val.comp, val.cho),
            RELABEL => msg(val.comp, val.label),
            _ => msg(val.tok_parent, val.tok_pw),
        }
    }
    #[inline]
    fn identity(&self) -> u64 {
        u64::MAX
    }
    #[inline]
    fn edge(&self, _: u64, _: u32, _: f32) -> Option<u64> {
        // Every engine that runs this program calls `edge_to`.
        Some(u64::MAX)
    }
    #[inline]
    fn edge_to(&self, m: u64, u: u32, w: f32, dst: &MstVertex) -> Option<u64> {
        let tag = ((m >> 32) - 1) as u32;
        let lo = m as u32;
        if dst.flags & DONE != 0 {
            return Some(u64::MAX);
        }
        let inside = tag == dst.comp;
        Some(match phase(dst) {
            CAND if !inside => ((ord(w) as u64) << 32) | tag as u64,
            WEIGHT | TARGET | CHOOSER if inside => lo as u64,
            RELABEL if inside || u == dst.hook => lo as u64,
            QUERY if dst.cho == dst.id && tag == dst.kd && ord(w) == dst.kw => {
                // One endpoint in the target component, and whether that
                // component chose this one back.
                (((lo == dst.comp) as u64) << 32) | u as u64
            }
            REROOT if tag == dst.id => ((lo as u64) << 32) | u as u64,
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
        val: &mut MstVertex,
        acc: u64,
        _: u32,
        agg: &mut Aggregates,
    ) -> bool {
        if val.flags & DONE != 0 {
            return Self::set(val, phase(val), false, agg);
        }
        if g.prev[CHANGED] == 0.0 {
            return Self::switch(val, agg);
        }
        let ph = phase(val);
        let lo = acc as u32;
        match ph {
            CAND => {
                if acc != u64::MAX {
                    val.cand_w = (acc >> 32) as u32;
                    val.cand_d = lo;
                }
                val.kw = val.cand_w;
                Self::set(val, WEIGHT, val.kw != NONE, agg)
            }
            WEIGHT if acc < val.kw as u64 => {
                val.kw = lo;
                Self::set(val, ph, true, agg)
            }
            TARGET if acc < val.kd as u64 => {
                val.kd = lo;
                Self::set(val, ph, true, agg)
            }
            CHOOSER if acc < val.cho as u64 => {
                val.cho = lo;
                Self::set(val, ph, true, agg)
            }
            QUERY => {
                let mut seed = false;
                if val.cho == val.id {
                    debug_assert!(acc != u64::MAX, "a chooser's target answers");
                    let mutual = (acc >> 32) & 1 == 1;
                    if acc == u64::MAX || (mutual && val.comp < val.kd) {
                        // The smaller of a pair that chose each other: the root
                        // of its group.
                        val.label = val.comp;
                        seed = true;
                    } else {
                        val.hook = lo;
                    }
                }
                Self::set(val, RELABEL, seed, agg)
            }
            RELABEL if acc < val.label as u64 => {
                val.label = lo;
                Self::set(val, ph, true, agg)
            }
            REROOT if acc != u64::MAX => {
                val.tok_parent = val.parent;
                val.tok_pw = val.pw;
                val.parent = lo;
                val.pw = (acc >> 32) as u32;
                Self::set(val, ph, val.tok_parent != NONE, agg)
            }
            _ => Self::set(val, ph, false, agg),
        }
    }
    #[inline]
    fn proceed(&self, done: u64, agg: &Aggregates, _: u64) -> bool {
        agg[LEFT] > 0.0 && self.cap.is_none_or(|k| done < k)
    }
    /// `weight bits << 32 | parent`; `u64::MAX` for a tree's root.
    #[inline]
    fn output(&self, val: &MstVertex) -> u64 {
        if val.parent == NONE {
            u64::MAX
        } else {
            ((val.pw as u64) << 32) | val.parent as u64
        }
    }
}

/// Unpacks a forest entry into (parent, weight of the edge to it).
pub fn forest_entry(x: u64) -> Option<(u32, f32)> {
    (x != u64::MAX).then(|| (x as u32, f32::from_bits((x >> 32) as u32)))
}

/// The weights of the forest's edges, in ascending order.
pub fn sorted_forest_weights(f: &[u64]) -> Vec<f32> {
    let mut w: Vec<f32> = f
        .iter()
        .filter_map(|&x| forest_entry(x))
        .map(|e| e.1)
        .collect();
    w.sort_unstable_by(f32::total_cmp);
    w
}

/// The forest's weight: its edges' weights added in ascending order (so the
/// same multiset of weights always gives the same sum), and its edge count.
pub fn forest_weight(f: &[u64]) -> (f64, u64) {
    let w = sorted_forest_weights(f);
    (w.iter().map(|&x| x as f64).sum(), w.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ord_is_monotone_and_inverts() {
        let xs = [
            f32::NEG_INFINITY,
            -3.5,
            -1e-30,
            -0.0,
            0.0,
            1e-30,
            1.0,
            2.5,
            f32::MAX,
            f32::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(ord(w[0]) < ord(w[1]), "{} {}", w[0], w[1]);
        }
        for &x in &xs {
            assert_eq!(unord(ord(x)).to_bits(), x.to_bits());
        }
    }
}
