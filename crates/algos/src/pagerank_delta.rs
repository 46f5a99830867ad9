//! Delta PageRank to a tolerance (the asynchronous PageRank of CLIP ATC'17 §5.1.2,
//! after Zhang et al.'s delta-based accumulative iteration).
//!
//! Every vertex holds an accumulated rank `p` and a pending residual `r`
//! (initially `p = 0`, `r = (1 - d) / n`). An iteration pushes every residual
//! above `tolerance / n`: `p += r`, and `d * r / outdeg` goes to each out-neighbour's
//! residual along the streamed edges; residual pushed by dangling vertices is
//! spread uniformly (`d * r / n` to every vertex), as in the LDBC definition. Only
//! pushing vertices are active, so blocks whose sources have settled are not read.
//! It stops when no residual exceeds `tolerance / n`, i.e. the pending mass is at
//! most `tolerance`; the result is `p + r`, within `tolerance / (1 - d)` (L1) of
//! the PageRank fixed point, and one more power iteration changes it by at most
//! `d * tolerance` (what `--verify` checks).
//!
//! Re-entry does not apply here: a source's residual must go to all its
//! out-edges exactly once, and a grid row spreads them over P blocks, so pushing
//! again from one re-entered block would send mass down only some edges. MRT is
//! accepted and has no effect on this algorithm.

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use outcore_state::atomic_add_f64;
use std::sync::atomic::Ordering::Relaxed;

pub fn run(e: &mut StreamEngine, p: &Params) -> Result<Run> {
    let n = e.vertices() as f64;
    let d = p.damping;
    let eps = p.tolerance / n;
    let deg = crate::pagerank::out_degrees(e)?;
    let rank = e.alloc::<f64>("rank", 0.0)?;
    let resid = e.alloc::<f64>("residual", (1.0 - d) / n)?;
    let push = e.alloc::<f64>("push", 0.0)?;
    let mut it = 0u64;
    loop {
        if crate::cap_reached(p, it) {
            break;
        }
        let (pr, r, ps) = (rank.atomic(), resid.atomic(), push.atomic());
        let degs = &deg;
        let eng = &*e;
        eng.vmap(|v| {
            let x = f64::from_bits(r[v as usize].load(Relaxed));
            if x > eps {
                let k = degs[v as usize];
                pr[v as usize].store(
                    (f64::from_bits(pr[v as usize].load(Relaxed)) + x).to_bits(),
                    Relaxed,
                );
                r[v as usize].store(0f64.to_bits(), Relaxed);
                ps[v as usize].store(if k == 0 { x } else { x / k as f64 }.to_bits(), Relaxed);
                if k > 0 {
                    eng.activate(v);
                }
            } else {
                ps[v as usize].store(0f64.to_bits(), Relaxed);
            }
        });
        let pushed = push.iter().any(|&x| x > 0.0);
        if !pushed {
            break;
        }
        let dangling = crate::pagerank::dangling_sum(&push, &deg);
        let (r, ps) = (resid.atomic(), push.atomic());
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(r, v),
            |_, u, v, _| {
                atomic_add_f64(
                    &r[v as usize],
                    d * f64::from_bits(ps[u as usize].load(Relaxed)),
                );
            },
        )?;
        if dangling > 0.0 {
            let add = d * dangling / n;
            e.vmap(|v| atomic_add_f64(&r[v as usize], add));
        }
        it += 1;
    }
    let mut out = rank;
    for (x, y) in out.iter_mut().zip(resid.iter()) {
        *x += y;
    }
    let pending: f64 = resid.iter().sum();
    Ok(Run {
        output: Output::Values(out),
        iterations: it,
        summary: format!("{it} iterations, pending residual {pending:.3e}"),
    })
}
