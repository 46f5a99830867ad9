//! The edge program: one algorithm, written once, for the engines that push
//! values from sources to destinations (DESIGN.md "Programming models"; the
//! push-style vertex-centric model V-Part assumes, FAST'19 §4; Ligra's
//! update/cond contract; Chaos's scatter/gather/apply).
//!
//! A program gives each vertex a value `V`. In an iteration every *active* source
//! `u` sends one message (`message`, a u64) along its out-edges; an edge turns it
//! into a contribution (`edge`, which may see `u` and the weight); contributions to
//! a destination are combined (`combine`, associative and commutative, with
//! `identity`); then `apply` folds the combined value into the destination's value
//! and says whether the destination is active in the next iteration. Programs
//! whose sources all send every iteration (PageRank) say so with `all_active`.
//!
//! *Relaxation* programs (bfs, sssp, label propagation: [`EdgeProgram::relaxes`])
//! keep one word per vertex (`u32` or `u64`) that is its own accumulator:
//! `combine` is `min` and `apply` lowers the value ([`relax_apply`]). Their fixed
//! point does not depend on when a contribution lands, so engines holding one
//! shared array (the streaming, jobs and vertex engines) may apply an edge's
//! contribution to its target at once, with an atomic minimum, and read values
//! newer than the previous iteration's (CLIP's re-entry, GraphCP's future
//! updates); engines that move messages between partitions (external,
//! sort-reduce) run them synchronously like any other program. Either way the
//! answer is the same.
//!
//! Global sums (PageRank's dangling mass) are [`Aggregates`]: `init` and `apply`
//! add to them, and the next iteration sees the previous one's totals in
//! [`Globals`]. Engines add them up in a fixed order (partition, then vertex), so
//! a run gives the same answer for every thread count.

mod jobs;
mod kept_out;
mod lists;
mod pull;
pub(crate) mod relax;
mod stream;
mod sync;
mod vertex;
mod whole_lists;

pub use jobs::{program_job, DescribeRefusal, ProgramJob};
pub use pull::bottom_up_lists;
pub use stream::{stream_bytes_per_vertex, stream_random_bytes_per_vertex};
pub use whole_lists::{CsrLists, Dir};

/// Four global sums, added by `init` and `apply`.
pub type Aggregates = [f64; 4];

/// Compensated (Neumaier) sums of aggregates, so their totals hardly depend on
/// the order vertices are visited in (partition order here, id order elsewhere).
#[derive(Debug, Default, Clone, Copy)]
pub struct Sums {
    sum: Aggregates,
    comp: Aggregates,
}

impl Sums {
    #[inline]
    fn add_one(&mut self, i: usize, x: f64) {
        let s = self.sum[i];
        let t = s + x;
        self.comp[i] += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        self.sum[i] = t;
    }
    #[inline]
    pub fn add(&mut self, a: &Aggregates) {
        for (i, &x) in a.iter().enumerate() {
            if x != 0.0 {
                self.add_one(i, x);
            }
        }
    }
    pub fn merge(&mut self, o: &Sums) {
        for i in 0..4 {
            self.add_one(i, o.sum[i]);
            self.add_one(i, o.comp[i]);
        }
    }
    pub fn total(&self) -> Aggregates {
        std::array::from_fn(|i| self.sum[i] + self.comp[i])
    }
}

/// What `apply` sees of the run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Globals {
    /// The iteration being applied (1 for the first).
    pub iteration: u64,
    /// The totals of the previous iteration's (or `init`'s) aggregates.
    pub prev: Aggregates,
}

/// A push-style edge program (see the module docs).
pub trait EdgeProgram: Sync {
    /// A vertex's value.
    type V: bytemuck::Pod + Send + Sync;
    /// What the result holds per vertex.
    type Out: bytemuck::Pod + Send + Sync;
    fn name(&self) -> &'static str;
    /// Whether edges carry their weights (1.0 otherwise).
    fn weighted(&self) -> bool {
        false
    }
    /// Every source sends every iteration.
    fn all_active(&self) -> bool {
        false
    }
    /// Messages fit 32 bits (`message` returns values below 2^32). Engines then
    /// keep a source's activity beside its message in one u64; otherwise a source
    /// of a program that is not `all_active` must send exactly when its message is
    /// nonzero (a source with out-edges is active iff `message != 0`).
    fn narrow_messages(&self) -> bool {
        false
    }
    /// A narrow program whose message is its source's activation epoch: run
    /// synchronously (one iteration's messages from the previous one's
    /// activations, as the external engine runs it), a source activated in
    /// iteration e (0: by `init`) sends message e (BFS: its depth). Engines
    /// that move messages may then move only which sources were activated
    /// (one bit a mirror, see the external engine) and give them e.
    fn epoch_messages(&self) -> bool {
        false
    }
    /// `apply` with `identity` (no message arrived) leaves the value and the
    /// activity alone and adds no aggregate, so a partition that received nothing
    /// can be passed over.
    fn idle_without_messages(&self) -> bool {
        false
    }
    /// Whether `init`, `message` or `apply` use the out-degree; when not, engines
    /// that would read the out-degrees only for them pass 0 instead.
    fn uses_degrees(&self) -> bool {
        true
    }
    /// `message` only reads a field of the value (or its bits): engines that
    /// hold every value in memory may call it at each edge instead of keeping
    /// an array of messages.
    fn message_from_value(&self) -> bool {
        false
    }
    /// Bytes per destination the engine holds besides `V`: the accumulator (8),
    /// two epochs (8) and the out-degree (4).
    fn bytes_per_vertex(&self) -> u64 {
        std::mem::size_of::<Self::V>() as u64 + 20
    }
    /// A relaxation program (see the module docs): `V` is `u32` or `u64`, `combine`
    /// is `min`, `apply` is [`relax_apply`] with [`EdgeProgram::improves`], and
    /// `message` does not use the out-degree. Engines may then relax in place.
    fn relaxes(&self) -> bool {
        false
    }
    /// For relaxation programs whose every edge is accepted: whether a value
    /// `word` held by a vertex at the end of iteration `iteration` (counted from
    /// 0) is final — no edge of a later iteration can lower it, whatever order
    /// edges are applied in (BFS: a depth of at most `iteration + 1`, since every
    /// source applied later is at least that deep). The streaming engine then
    /// passes over edges into such vertices without touching their values
    /// (a bitmap of one bit a vertex, [`EdgeProgram::settles`]).
    fn final_after(&self, _word: u64, _iteration: u64) -> bool {
        false
    }
    /// Whether [`EdgeProgram::final_after`] ever holds.
    fn settles(&self) -> bool {
        false
    }
    /// For settling relaxation programs on unweighted edges: whether a source
    /// holding `word` at the start of iteration `iteration` is on the frontier
    /// a bottom-up step pulls from (bfs: depth exactly `iteration`). Such a
    /// step relies on three facts the program promises: every vertex whose
    /// value is not final after `iteration - 1` iterations
    /// ([`EdgeProgram::final_after`]) and that has an in-neighbour on the
    /// frontier gets its final value from such an edge; frontier words are
    /// final; and among the frontier in-neighbours the smallest id gives the
    /// smallest candidate — so a vertex may stop at its first frontier
    /// in-neighbour in ascending order (Beamer et al., SC'12, direction-
    /// optimizing BFS).
    fn pulls_from(&self, _word: u64, _iteration: u64) -> bool {
        false
    }
    /// Whether [`EdgeProgram::pulls_from`] is meaningful for this program.
    fn pulls(&self) -> bool {
        false
    }
    /// The message every source on the frontier of iteration `iteration`
    /// ([`EdgeProgram::pulls_from`]) sends, when it depends on the iteration
    /// alone (bfs: the depth, `iteration`): a bottom-up step then never reads
    /// a frontier in-neighbour's word, a miss anywhere in the state for every
    /// vertex reached (Kronecker 22 in memory, the first bottom-up step's
    /// time went three quarters into that load). `None` (the default): the
    /// step reads it.
    fn frontier_message(&self, _iteration: u64) -> Option<u64> {
        None
    }
    /// For relaxation programs: whether lowering a value from `old` to `new`
    /// activates the vertex (bfs: only when its depth drops, not its parent).
    fn improves(&self, old: u64, new: u64) -> bool {
        new < old
    }
    /// Every edge also acts from its target to its source (label propagation on
    /// a directed store). Engines that see each stored edge once apply it both
    /// ways, and stream every edge again after an iteration that changed a value;
    /// engines that push along out-edges only refuse it (they need a store
    /// holding both directions instead).
    fn both_directions(&self) -> bool {
        false
    }
    /// The contribution of an edge depends on its destination's value too
    /// ([`EdgeProgram::edge_to`]; Chaos's and X-Stream's gather, which sees the
    /// vertex it gathers into). Engines evaluate such an edge where the
    /// destination's value is at hand — the streaming engine in its edge pass
    /// (the values of the previous iteration, which the pass does not change),
    /// the distributed engine in its gather (its updates then carry the
    /// source, the weight and the message) — and the others refuse the program.
    fn reads_destination(&self) -> bool {
        false
    }
    /// The contribution of edge `(u, v, w)` carrying `msg`, where `dst` is `v`'s
    /// value as of the previous iteration; only called when
    /// [`EdgeProgram::reads_destination`] says so.
    fn edge_to(&self, msg: u64, u: u32, w: f32, dst: &Self::V) -> Option<u64> {
        let _ = dst;
        self.edge(msg, u, w)
    }
    /// The vertices [`EdgeProgram::init`] activates, ascending, when `init`
    /// leaves every other vertex inactive and adds nothing to the aggregates
    /// (bfs, sssp: the root); `None` when that is not so or the program does
    /// not say. An engine may then compute only these vertices' initial
    /// values before the first iteration, and the others' when it first
    /// reads them (the external engine: no pass over every partition's ids).
    fn sparse_start(&self) -> Option<Vec<u32>> {
        None
    }
    /// The value of vertex `v` before the first iteration and whether it is active.
    fn init(&self, v: u32, out_degree: u32, agg: &mut Aggregates) -> (Self::V, bool);
    /// The message a source sends along its out-edges.
    fn message(&self, val: &Self::V, out_degree: u32) -> u64;
    /// The neutral element of `combine`.
    fn identity(&self) -> u64;
    /// The contribution of edge `(u, _, w)` carrying `msg`; `None` refuses the edge
    /// (a negative weight where the program cannot take one).
    fn edge(&self, msg: u64, u: u32, w: f32) -> Option<u64>;
    fn combine(&self, acc: u64, x: u64) -> u64;
    /// Folds the combined contributions `acc` (`identity` when none came) into
    /// `val`; returns whether the vertex is active in the next iteration.
    fn apply(
        &self,
        g: &Globals,
        val: &mut Self::V,
        acc: u64,
        out_degree: u32,
        agg: &mut Aggregates,
    ) -> bool;
    /// After `done` iterations, with these totals and active vertices: go on?
    fn proceed(&self, done: u64, agg: &Aggregates, active: u64) -> bool;
    fn output(&self, val: &Self::V) -> Self::Out;
}

/// `apply` of a relaxation program: lowers `val` to `acc` when smaller and says
/// whether that activates it ([`EdgeProgram::improves`]).
pub fn relax_apply<P: EdgeProgram + ?Sized>(p: &P, val: &mut P::V, acc: u64) -> bool {
    let old = word(val);
    if acc < old {
        set_word(val, acc);
        p.improves(old, acc)
    } else {
        false
    }
}

/// A relaxation program's value as a `u64` (`V` is `u32` or `u64`).
#[inline(always)]
pub fn word<V: bytemuck::Pod>(v: &V) -> u64 {
    match std::mem::size_of::<V>() {
        4 => *bytemuck::from_bytes::<u32>(bytemuck::bytes_of(v)) as u64,
        8 => *bytemuck::from_bytes::<u64>(bytemuck::bytes_of(v)),
        n => panic!("a relaxation program's value is a u32 or u64, not {n} bytes"),
    }
}

/// Stores `x` into a relaxation program's value (truncated to a `u32` value).
#[inline(always)]
pub fn set_word<V: bytemuck::Pod>(v: &mut V, x: u64) {
    match std::mem::size_of::<V>() {
        4 => *bytemuck::from_bytes_mut::<u32>(bytemuck::bytes_of_mut(v)) = x as u32,
        8 => *bytemuck::from_bytes_mut::<u64>(bytemuck::bytes_of_mut(v)) = x,
        n => panic!("a relaxation program's value is a u32 or u64, not {n} bytes"),
    }
}

/// Refuses a [`EdgeProgram::both_directions`] program on an engine that pushes
/// along out-edges only.
pub(crate) fn one_way<P: EdgeProgram>(p: &P, engine: &str) -> crate::Result<()> {
    if p.both_directions() {
        return Err(crate::EngineError::Invalid(format!(
            "{} on the {engine} engine moves values along out-edges only; it needs a store holding both directions",
            p.name()
        )));
    }
    Ok(())
}

/// Refuses a [`EdgeProgram::reads_destination`] program on an engine that
/// combines contributions before they meet their destination's value.
pub fn needs_destination<P: EdgeProgram>(p: &P, engine: &str) -> crate::Result<()> {
    if p.reads_destination() {
        return Err(crate::EngineError::Invalid(format!(
            "{} evaluates each edge against its destination's value, which the {engine} engine does not hold where it combines updates; use --engine stream (or the distributed engine)",
            p.name()
        )));
    }
    Ok(())
}

/// An engine that runs edge programs (the external and the sort-reduce engines).
pub trait ProgramRunner {
    /// Runs `prog` to the end; the result per vertex in dense id order.
    fn run_program<P: EdgeProgram>(
        &mut self,
        prog: &P,
    ) -> crate::Result<outcore_state::VertexArray<P::Out>>;
    /// Iterations of the last run.
    fn iterations(&self) -> u64;
    /// Whether the engine runs [`EdgeProgram::both_directions`] programs.
    fn both_directions(&self) -> bool {
        false
    }
}
