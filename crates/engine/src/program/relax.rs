//! In-place relaxation (see [`super::EdgeProgram::relaxes`]), shared by the
//! engines that hold one array per program: the streaming, jobs and vertex
//! engines. A relaxation program's value is a `u32` or `u64` word; an edge's
//! contribution lowers its target at once with an atomic minimum (a plain load
//! first: most relaxations fail, and only an improving one pays for the locked
//! read-modify-write), and the target is activated when the program says the
//! drop matters ([`super::EdgeProgram::improves`]).

use super::{set_word, word, EdgeProgram};
use crate::error::{EngineError, Result};
use outcore_state::AtomicRepr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// A relaxation program's word: `u32` or `u64`, with its atomic twin.
pub(crate) trait Word: AtomicRepr + Copy {
    fn load(a: &Self::Atomic) -> u64;
    /// Lowers `a` to `x` when smaller; the value before.
    fn fetch_min(a: &Self::Atomic, x: u64) -> u64;
    fn from_u64(x: u64) -> Self;
    fn store(a: &Self::Atomic, x: u64);
}

impl Word for u32 {
    #[inline(always)]
    fn load(a: &AtomicU32) -> u64 {
        a.load(Relaxed) as u64
    }
    #[inline(always)]
    fn fetch_min(a: &AtomicU32, x: u64) -> u64 {
        a.fetch_min(x as u32, Relaxed) as u64
    }
    fn from_u64(x: u64) -> u32 {
        x as u32
    }
    fn store(a: &AtomicU32, x: u64) {
        a.store(x as u32, Relaxed)
    }
}

impl Word for u64 {
    #[inline(always)]
    fn load(a: &AtomicU64) -> u64 {
        a.load(Relaxed)
    }
    #[inline(always)]
    fn fetch_min(a: &AtomicU64, x: u64) -> u64 {
        a.fetch_min(x, Relaxed)
    }
    fn from_u64(x: u64) -> u64 {
        x
    }
    fn store(a: &AtomicU64, x: u64) {
        a.store(x, Relaxed)
    }
}

/// The message source `u` sends, read from the shared array.
#[inline(always)]
pub(crate) fn message<P: EdgeProgram, W: Word>(p: &P, a: &[W::Atomic], u: u32) -> u64 {
    message_of::<P, W>(p, &a[u as usize])
}

/// The message of a source whose word is `x`.
#[inline(always)]
pub(crate) fn message_of<P: EdgeProgram, W: Word>(p: &P, x: &W::Atomic) -> u64 {
    let mut val: P::V = bytemuck::Zeroable::zeroed();
    set_word(&mut val, W::load(x));
    p.message(&val, 0)
}

/// Edge `(u, v, w)` carrying `msg` lowers `v`; `activate(v)` when that matters.
/// False when the program refuses the edge.
#[inline(always)]
pub(crate) fn relax<P: EdgeProgram, W: Word>(
    p: &P,
    a: &[W::Atomic],
    msg: u64,
    u: u32,
    v: u32,
    w: f32,
    activate: impl FnOnce(u32),
) -> bool {
    relax_into::<P, W>(p, &a[v as usize], msg, u, v, w, activate)
}

/// [`relax`] of target `v` whose word is `x`.
#[inline(always)]
pub(crate) fn relax_into<P: EdgeProgram, W: Word>(
    p: &P,
    x: &W::Atomic,
    msg: u64,
    u: u32,
    v: u32,
    w: f32,
    activate: impl FnOnce(u32),
) -> bool {
    let Some(c) = p.edge(msg, u, w) else {
        return false;
    };
    lower::<P, W>(p, x, c, v, activate);
    true
}

/// Lowers target `v`, whose word is `x`, to the contribution `c`;
/// `activate(v)` when that matters.
#[inline(always)]
pub(crate) fn lower<P: EdgeProgram, W: Word>(
    p: &P,
    x: &W::Atomic,
    c: u64,
    v: u32,
    activate: impl FnOnce(u32),
) {
    if c < W::load(x) && p.improves(W::fetch_min(x, c), c) {
        activate(v);
    }
}

/// [`lower`] of a target no other thread writes meanwhile
/// ([`crate::Mode::Columns`]): a plain load and store (others may read it).
#[inline(always)]
pub(crate) fn lower_exclusive<P: EdgeProgram, W: Word>(
    p: &P,
    x: &W::Atomic,
    c: u64,
    v: u32,
    activate: impl FnOnce(u32),
) {
    let old = W::load(x);
    if c < old {
        lowered::<P, W>(p, x, old, c, v, activate);
    }
}

/// [`lower_exclusive`]'s store, out of the edge loop: most edges lower
/// nothing.
#[cold]
#[inline(never)]
fn lowered<P: EdgeProgram, W: Word>(
    p: &P,
    x: &W::Atomic,
    old: u64,
    c: u64,
    v: u32,
    activate: impl FnOnce(u32),
) {
    W::store(x, c);
    if p.improves(old, c) {
        activate(v);
    }
}

/// The words of a relaxation program's initial values, in dense order, and
/// whether each vertex starts active (`init` sees out-degree 0: relaxation
/// programs do not use it).
pub(crate) fn init_word<P: EdgeProgram>(p: &P, v: u32) -> (u64, bool) {
    let (x, act) = p.init(v, 0, &mut [0.0; 4]);
    (word(&x), act)
}

/// The first edge a program refused, kept for the error.
#[derive(Default)]
pub(crate) struct Refused {
    uv: AtomicU64,
    w: AtomicU32,
    any: std::sync::atomic::AtomicBool,
}

impl Refused {
    pub(crate) fn record(&self, u: u32, v: u32, w: f32) {
        if !self.any.swap(true, Relaxed) {
            self.uv.store(((u as u64) << 32) | v as u64, Relaxed);
            self.w.store(w.to_bits(), Relaxed);
        }
    }
    /// [`EngineError::BadEdge`] when an edge was refused.
    pub(crate) fn check(&self, program: &'static str) -> Result<()> {
        if !self.any.load(Relaxed) {
            return Ok(());
        }
        let uv = self.uv.load(Relaxed);
        Err(EngineError::BadEdge {
            program,
            u: (uv >> 32) as u32,
            v: uv as u32,
            w: f32::from_bits(self.w.load(Relaxed)),
        })
    }
}
