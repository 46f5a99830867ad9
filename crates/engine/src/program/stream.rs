//! Edge programs on the streaming engine (CLIP ATC'17): one vertex array per
//! value, edges streamed block by block.
//!
//! * Relaxation programs (bfs, sssp, label propagation) keep one word per vertex
//!   and relax in place ([`super::relax`]); a target lowered in a loaded block's
//!   source interval re-enters the block (§3.1), so later levels run in the same
//!   pass. A [`EdgeProgram::both_directions`] program also relaxes each edge's
//!   source from its target, and streams every edge again after an iteration
//!   that changed a value (a label must reach sources that are not active).
//!   When the array is mapped, the iteration runs band by band
//!   ([`StreamEngine::exec_bands`], `BandCells`): a band's slice of targets is
//!   held in memory and written back once, in order, when the band ends.
//!   A one-direction program on an unweighted pass (bfs) runs flat
//!   ([`Flat`]: the contribution computed once a run); with the array in
//!   memory and two ring slots a thread, one-direction programs run in
//!   [`Mode::Columns`], a target lowered with a plain store
//!   ([`relax::lower_exclusive`]) — diagonal blocks still re-enter.
//! * Every other program is synchronous: the active sources' messages are
//!   computed before the pass into an array (`messages`, 8 bytes a vertex; or,
//!   for [`EdgeProgram::message_from_value`] programs, read from the value at
//!   each edge), the pass combines contributions into `sums` (8 bytes, atomic
//!   `combine`), then a
//!   vertex pass applies them, adds the aggregates in vertex order (compensated,
//!   chunk by chunk, so every thread count gives the same totals) and computes
//!   the next messages. No edge function activates, so no block is re-entered:
//!   each edge acts once per iteration. Out-degrees (4 bytes) are read when the
//!   program uses them ([`EdgeProgram::uses_degrees`]).

use super::pull::Step;
use super::relax::{self, Refused, Word};
use super::sync::{combine_atomic, combine_exclusive, vertex_pass};
use super::{word, Aggregates, EdgeProgram, Globals, ProgramRunner};
use crate::error::{EngineError, Result};
use crate::stream::{each_target, prefetch, Band, Ctx, Flat, Hints, Mode, StreamEngine};
use outcore_state::{AtomicBitmap, VertexArray};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

impl ProgramRunner for StreamEngine<'_> {
    fn run_program<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::Out>> {
        if prog.weighted() {
            self.with_weights(true);
        }
        if prog.relaxes() {
            match std::mem::size_of::<P::V>() {
                4 => relax_run::<P, u32>(self, prog),
                8 => relax_run::<P, u64>(self, prog),
                n => Err(EngineError::Invalid(format!(
                    "{}: a relaxation program's value is 4 or 8 bytes, not {n}",
                    prog.name()
                ))),
            }
        } else {
            sync_run(self, prog)
        }
    }
    fn iterations(&self) -> u64 {
        self.program_iterations
    }
    fn both_directions(&self) -> bool {
        true
    }
}

/// The bytes per vertex a program holds on the streaming engine: its value, and
/// for synchronous programs the messages, the sums and the out-degrees.
pub fn stream_bytes_per_vertex<P: EdgeProgram>(prog: &P) -> u64 {
    let v = std::mem::size_of::<P::V>() as u64;
    if prog.relaxes() {
        v
    } else {
        v + 8
            + if prog.message_from_value() { 0 } else { 8 }
            + if prog.uses_degrees() { 4 } else { 0 }
    }
}

/// The bytes per vertex of the arrays a program's edge pass touches at random
/// on the streaming engine, allocated before the others so that they take the
/// budget first (`sync_run`): the sums, the out-degrees before the values, and
/// the values when edges read their destination's. `None` for relaxation
/// programs, whose one array is written at random. When these fit the budget,
/// the arrays mapped beyond it are read and written in order once per
/// iteration, never at random.
pub fn stream_random_bytes_per_vertex<P: EdgeProgram>(prog: &P) -> Option<u64> {
    if prog.relaxes() {
        return None;
    }
    let v = std::mem::size_of::<P::V>() as u64;
    Some(8 + if prog.uses_degrees() { 4 } else { 0 } + if prog.reads_destination() { v } else { 0 })
}

/// A relaxation program's words as its edge functions reach them.
trait Cells<A>: Sync {
    fn cell(&self, v: u32) -> &A;
    fn prefetch(&self, v: u32);
}

impl<A: Sync> Cells<A> for [A] {
    #[inline(always)]
    fn cell(&self, v: u32) -> &A {
        &self[v as usize]
    }
    #[inline(always)]
    fn prefetch(&self, v: u32) {
        prefetch(self, v)
    }
}

/// A mapped array run band by band ([`StreamEngine::exec_bands`]): the current
/// band's words in memory (`buf`, from the budget), every other vertex's in
/// the mapped array. A band is copied in when it starts and copied back and
/// written to the file (in order, `msync`) when it ends, so an iteration writes
/// each page of the array at most once, whatever the memory limit does to the
/// page cache; edges only ever write their target, which is in the band.
struct BandCells<'a, A> {
    mapped: &'a [A],
    buf: &'a [A],
    lo: AtomicU32,
    len: AtomicU32,
}

impl<A: Sync> Cells<A> for BandCells<'_, A> {
    #[inline(always)]
    fn cell(&self, v: u32) -> &A {
        let i = v.wrapping_sub(self.lo.load(Relaxed));
        if i < self.len.load(Relaxed) {
            &self.buf[i as usize]
        } else {
            &self.mapped[v as usize]
        }
    }
    #[inline(always)]
    fn prefetch(&self, v: u32) {
        let i = v.wrapping_sub(self.lo.load(Relaxed));
        if i < self.len.load(Relaxed) {
            prefetch(self.buf, i)
        } else {
            prefetch(self.mapped, v)
        }
    }
}

fn relax_run<P: EdgeProgram, W: Word>(
    e: &mut StreamEngine,
    prog: &P,
) -> Result<VertexArray<P::Out>> {
    let st = e.alloc::<W>(prog.name(), W::from_u64(0))?;
    {
        let a = st.atomic();
        let eng = &*e;
        eng.vmap(|v| {
            let (x, act) = relax::init_word(prog, v);
            W::store(&a[v as usize], x);
            if act {
                eng.activate(v);
            }
        });
    }
    let both = prog.both_directions();
    // Vertices whose value is final (`EdgeProgram::final_after`): their edges
    // are passed over without touching the value array, one bit a vertex taken
    // from the budget (not kept when it does not hold them).
    let fin = if prog.settles() && !both {
        let n = e.vertices() as usize;
        e.budget()
            .take(n.div_ceil(64) as u64 * 8)
            .then(|| AtomicBitmap::new(n))
    } else {
        None
    };
    // A mapped array is run band by band, the band's slice in memory
    // (`BandCells`). In storage order its pages were dirtied at random, evicted
    // and dirtied again: Kronecker 24 bfs at --memory 32M under a 64 MiB limit
    // wrote 21.8 GB for 128 MiB of state. Not for programs that also relax
    // sources (they write anywhere), nor when one column's slice does not fit
    // what the budget has left.
    let banded = if st.is_mapped() && !both {
        let (w, bytes) = e.band_columns(std::mem::size_of::<W>() as u64);
        e.budget().take(bytes).then_some((w, bytes))
    } else {
        None
    };
    let buf = banded.map(|(_, bytes)| {
        VertexArray::<W>::in_memory(
            (bytes / std::mem::size_of::<W>() as u64) as usize,
            W::from_u64(0),
        )
    });
    let cells = buf.as_ref().map(|buf| BandCells {
        mapped: st.atomic(),
        buf: buf.atomic(),
        lo: AtomicU32::new(0),
        len: AtomicU32::new(0),
    });
    // A band's words in at its start, back out and to the file at its end.
    let mut hook = |b: Band| -> Result<()> {
        let Some(c) = &cells else { return Ok(()) };
        match b {
            Band::Start(r) => {
                let n = r.len();
                for (x, y) in c.buf[..n]
                    .iter()
                    .zip(&c.mapped[r.start as usize..r.end as usize])
                {
                    W::store(x, W::load(y));
                }
                c.lo.store(r.start, Relaxed);
                c.len.store(n as u32, Relaxed);
            }
            Band::End(r) => {
                for (x, y) in c
                    .buf
                    .iter()
                    .zip(&c.mapped[r.start as usize..r.end as usize])
                {
                    W::store(y, W::load(x));
                }
                c.len.store(0, Relaxed);
                st.write_back_range(r.start as usize..r.end as usize)
                    .map_err(write_back_error)?;
            }
        }
        Ok(())
    };
    // Bottom-up and sparse iterations over the CSR lists (`super::pull`),
    // for arrays in memory: a mapped array is already run band by band.
    let mut pull = match st.is_mapped() {
        false => super::pull::InEdges::open(e, prog, fin.is_some())?,
        true => None,
    };
    let refused = Refused::default();
    // Passes over the grid from memory once it has been read (when the
    // budget has room; a mapped array leaves none).
    if banded.is_none() {
        e.hold_grid();
    }
    let mut done = 0u64;
    while prog.proceed(done, &[0.0; 4], e.active_count()) {
        let fin = fin.as_ref();
        let step = match &mut pull {
            Some(p) => p.choose::<P, W>(e, prog, st.atomic(), fin, done),
            None => Step::TopDown,
        };
        match &mut pull {
            Some(p) if step != Step::TopDown => {
                p.step::<P, W>(e, step, prog, st.atomic(), fin, done, &refused)?
            }
            _ => match (&cells, banded) {
                (Some(c), Some((w, _))) => {
                    relax_iteration::<P, W, _>(e, prog, c, w, fin, &refused, &mut hook)?
                }
                _ => relax_iteration::<P, W, _>(e, prog, st.atomic(), 0, fin, &refused, &mut hook)?,
            },
        }
        if let Some(f) = fin {
            // The vertices this iteration changed (the next one's sources)
            // whose values are now final.
            let (eng, a) = (&*e, st.atomic());
            eng.vmap_active(|v| {
                if prog.final_after(W::load(&a[v as usize]), done) {
                    f.set(v);
                }
            });
        }
        done += 1;
        refused.check(prog.name())?;
        if both && e.has_active() {
            e.activate_all();
        }
    }
    drop(buf);
    e.release_grid();
    if let Some(p) = pull {
        e.budget().give_back(p.held());
    }
    if let Some((_, bytes)) = banded {
        e.budget().give_back(bytes);
    }
    if let Some(f) = &fin {
        e.budget().give_back(f.bytes());
    }
    e.program_iterations = done;
    Ok(st.map_into(|x| {
        let mut val: P::V = bytemuck::Zeroable::zeroed();
        super::set_word(&mut val, word(x));
        prog.output(&val)
    }))
}

/// One iteration of a relaxation program over `cells`, in bands of `band`
/// columns (0: the configured order) with `hook` at their ends.
fn relax_iteration<P: EdgeProgram, W: Word, C: Cells<W::Atomic> + ?Sized>(
    e: &mut StreamEngine,
    prog: &P,
    cells: &C,
    band: u32,
    fin: Option<&AtomicBitmap>,
    refused: &Refused,
    hook: impl FnMut(Band) -> Result<()>,
) -> Result<()> {
    let both = prog.both_directions();
    let settled = |v: u32| fin.is_some_and(|f| f.get(v));
    let hint = |v| {
        if !settled(v) {
            cells.prefetch(v)
        }
    };
    if !both && !e.weights_streamed() {
        // One direction, unweighted: a run's contribution depends on its
        // source alone, so the runs are flat (stream/runs.rs). The window
        // defers a run's edges past the next runs' messages: a source that an
        // earlier edge of the window lowers (and re-enters) sends its old
        // message, or waits for the next pass, as if lowered after its run.
        let value = |u: u32, vs: &[u32]| {
            let m = relax::message_of::<P, W>(prog, cells.cell(u));
            let c = prog.edge(m, u, 1.0);
            if c.is_none() {
                refused.record(u, vs[0], 1.0);
            }
            c
        };
        // Whole blocks per thread where that keeps the threads busy: a
        // column's words and activity bits stay in one core's cache, and a
        // target is lowered with a plain store (Mode::Columns).
        if band == 0 && e.columns_pay() {
            let apply = |ctx: &Ctx, v: u32, c: u64| {
                if !settled(v) {
                    relax::lower_exclusive::<P, W>(prog, cells.cell(v), c, v, |x| ctx.activate(x));
                }
            };
            // Targets hinted settled or not: few are during a grid pass, and
            // the check in the hint cost more than the prefetches it saved.
            let hints = Hints(|v| cells.prefetch(v), |u| cells.prefetch(u));
            e.exec_flat(Mode::Columns, hints, Flat { value, apply })?;
            return Ok(());
        }
        let apply = |ctx: &Ctx, v: u32, c: u64| {
            if !settled(v) {
                relax::lower::<P, W>(prog, cells.cell(v), c, v, |x| ctx.activate(x));
            }
        };
        let hints = Hints(hint, |u| cells.prefetch(u));
        e.exec_flat_bands(Mode::Multi, band, hints, Flat { value, apply }, hook)?;
        return Ok(());
    }
    if !both && band == 0 && e.columns_pay() {
        // One direction, weighted (sssp): a run at a time, its message read
        // once, whole blocks per thread as above.
        let run = |ctx: &Ctx, u: u32, vs: &[u32], ws: Option<&[f32]>| {
            let m = relax::message_of::<P, W>(prog, cells.cell(u));
            each_target(vs, ws, |v, w| {
                if settled(v) {
                    return;
                }
                match prog.edge(m, u, w) {
                    Some(c) => relax::lower_exclusive::<P, W>(prog, cells.cell(v), c, v, |x| {
                        ctx.activate(x)
                    }),
                    None => refused.record(u, v, w),
                }
            });
        };
        let hints = Hints(|v| cells.prefetch(v), |u| cells.prefetch(u));
        e.exec_runs(Mode::Columns, hints, run)?;
        return Ok(());
    }
    e.exec_bands(
        Mode::Multi,
        band,
        hint,
        |ctx, u, vs, ws| {
            let one = |v: u32, w: f32, m: Option<u64>| {
                if settled(v) {
                    return;
                }
                let m = m.unwrap_or_else(|| relax::message_of::<P, W>(prog, cells.cell(u)));
                if !relax::relax_into::<P, W>(prog, cells.cell(v), m, u, v, w, |x| ctx.activate(x))
                {
                    refused.record(u, v, w);
                    return;
                }
                if both {
                    let m = relax::message_of::<P, W>(prog, cells.cell(v));
                    relax::relax_into::<P, W>(prog, cells.cell(u), m, v, u, w, |x| ctx.activate(x));
                }
            };
            // One direction: u's message is read once a run. Its own edges
            // cannot lower u (an edge back to u adds to u's value); another
            // thread may lower it meanwhile, and then activates it, so its
            // edges are relaxed again from the lower value, as when that
            // happens after its run. Both directions: the run's own edges
            // lower u, so the message is read an edge at a time.
            let m = (!both).then(|| relax::message_of::<P, W>(prog, cells.cell(u)));
            each_target(vs, ws, |v, w| one(v, w, m));
        },
        hook,
    )?;
    Ok(())
}

fn sync_run<P: EdgeProgram>(e: &mut StreamEngine, prog: &P) -> Result<VertexArray<P::Out>> {
    // The accumulators are the one array the edge pass writes, at random: they
    // take the budget first. Arrays mapped beyond it are then written only by
    // the vertex pass, in order, and written back right after it, so an
    // iteration writes each of them once, sequentially (without this, pages
    // dirtied at random were evicted and dirtied again: 6.5x the state written
    // per iteration on Kronecker 22 at --memory 64M).
    let mut sums = e.alloc::<u64>("sums", 0)?;
    let deg = if prog.uses_degrees() {
        let mut d = e.alloc::<u32>("out-degree", 0)?;
        e.store().degrees_into("out", &mut d)?;
        Some(d)
    } else {
        None
    };
    let mut vals = e.alloc::<P::V>(prog.name(), bytemuck::Zeroable::zeroed())?;
    let msgs = if prog.message_from_value() {
        None
    } else {
        Some(e.alloc::<u64>("messages", 0)?)
    };
    let refused = Refused::default();
    let d = |u: u32| deg.as_ref().map_or(0, |d| d[u as usize]);

    // Whole blocks per thread, targets updated without atomics, where that
    // keeps the threads busy; each block split among them otherwise.
    let columns = e.columns_pay();
    let mode = if columns { Mode::Columns } else { Mode::Multi };
    let (prev, mut active) = pass(e, prog, &mut vals, &mut sums, &msgs, &deg, None);
    write_back(&vals, &sums, &msgs)?;
    // Passes over the grid from memory once it has been read, when the
    // budget has room (`stream/held.rs`).
    e.hold_grid();
    let mut g = Globals { iteration: 0, prev };
    let mut done = 0u64;
    while prog.proceed(done, &g.prev, active) {
        g.iteration = done + 1;
        {
            let s = sums.atomic();
            let dsts = &vals;
            let edge = |u: u32, v: u32, w: f32, m: u64| {
                let c = if prog.reads_destination() {
                    prog.edge_to(m, u, w, &dsts[v as usize])
                } else {
                    prog.edge(m, u, w)
                };
                match c {
                    // Mode::Columns: a block's targets are this thread's alone.
                    Some(c) if columns => combine_exclusive(prog, &s[v as usize], c),
                    Some(c) => combine_atomic(prog, &s[v as usize], c),
                    None => refused.record(u, v, w),
                }
            };
            // On an unweighted pass, where every edge of a run carries the
            // same contribution (unless the program reads the destination),
            // the runs are flat (stream/runs.rs): the contribution computed
            // once a run, then applied edge by edge without a branch per run.
            let flat = !e.weights_streamed() && !prog.reads_destination();
            let value = |u: u32, vs: &[u32], m: u64| {
                let c = prog.edge(m, u, 1.0);
                if c.is_none() {
                    refused.record(u, vs[0], 1.0);
                }
                c
            };
            // Mode::Columns: a block's targets are this thread's alone.
            let exclusive = |_: &Ctx, v: u32, c: u64| combine_exclusive(prog, &s[v as usize], c);
            let atomic = |_: &Ctx, v: u32, c: u64| combine_atomic(prog, &s[v as usize], c);
            // Otherwise one run of a source's edges: its message read once.
            let run = |u: u32, vs: &[u32], ws: Option<&[f32]>, m: u64| {
                each_target(vs, ws, |v, w| edge(u, v, w, m))
            };
            // The source's message: kept in its own array, or made from its
            // value (a loop-invariant branch, taken the same way every run).
            let m = msgs.as_ref().map(|m| m.atomic());
            let vals = dsts;
            let msg = |u: u32| match m {
                Some(m) => m[u as usize].load(Relaxed),
                None => prog.message(&vals[u as usize], d(u)),
            };
            let source = |u: u32| match m {
                Some(m) => prefetch(m, u),
                None => prefetch(vals, u),
            };
            let hints = Hints(|v| prefetch(s, v), source);
            let value = |u, vs: &[u32]| value(u, vs, msg(u));
            match (flat, columns) {
                (true, true) => e.exec_flat(
                    mode,
                    hints,
                    Flat {
                        value,
                        apply: exclusive,
                    },
                )?,
                (true, false) => e.exec_flat(
                    mode,
                    hints,
                    Flat {
                        value,
                        apply: atomic,
                    },
                )?,
                _ => e.exec_runs(mode, hints, |_, u, vs, ws| run(u, vs, ws, msg(u)))?,
            };
        }
        refused.check(prog.name())?;
        done += 1;
        (g.prev, active) = pass(e, prog, &mut vals, &mut sums, &msgs, &deg, Some(&g));
        write_back(&vals, &sums, &msgs)?;
    }
    e.program_iterations = done;
    e.release_grid();
    drop((msgs, sums, deg));
    Ok(vals.map_into(|x| prog.output(x)))
}

/// Writes the mapped arrays a vertex pass wrote back to their files now, in
/// order (nothing for arrays in memory).
fn write_back<V: bytemuck::Pod + Send + Sync>(
    vals: &VertexArray<V>,
    sums: &VertexArray<u64>,
    msgs: &Option<VertexArray<u64>>,
) -> Result<()> {
    vals.write_back()
        .and_then(|_| sums.write_back())
        .and_then(|_| msgs.as_ref().map_or(Ok(()), |m| m.write_back()))
        .map_err(write_back_error)
}

fn write_back_error(e: std::io::Error) -> EngineError {
    EngineError::Invalid(format!("writing mapped vertex state back: {e}"))
}

/// [`vertex_pass`] in the engine's pool, activating on the engine.
fn pass<P: EdgeProgram>(
    e: &StreamEngine,
    prog: &P,
    vals: &mut [P::V],
    sums: &mut [u64],
    msgs: &Option<VertexArray<u64>>,
    deg: &Option<VertexArray<u32>>,
    g: Option<&Globals>,
) -> (Aggregates, u64) {
    let (msgs, deg) = (msgs.as_ref().map(|m| m.atomic()), deg.as_deref());
    let r = e
        .pool()
        .install(|| vertex_pass(prog, vals, sums, msgs, deg, g, |v| e.activate(v)));
    if prog.all_active() {
        e.activate_all();
    }
    r
}
