//! Sparse matrix-vector product `y = A^T x` over the streamed edges (one pass,
//! every vertex active): `y(v) = sum over (u, v) of w(u, v) * x(u)` with `x = 1`,
//! weights as stored (1 when unweighted), `f64` sums — the weighted in-degree.
//! The streaming kernel of CLIP's edge-function model at its simplest; with
//! `--iterations K` it applies the product K times (`x` <- `y`).

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use outcore_state::atomic_add_f64;
use std::sync::atomic::Ordering::Relaxed;

pub fn run(e: &mut StreamEngine, p: &Params) -> Result<Run> {
    e.with_weights(true);
    let iters = p.iterations.unwrap_or(1);
    let mut x = e.alloc::<f64>("x", 1.0)?;
    let mut y = e.alloc::<f64>("y", 0.0)?;
    for _ in 0..iters {
        y.fill(0.0);
        let (xa, ya) = (x.atomic(), y.atomic());
        e.activate_all();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(ya, v),
            |_, u, v, w| {
                atomic_add_f64(
                    &ya[v as usize],
                    w as f64 * f64::from_bits(xa[u as usize].load(Relaxed)),
                );
            },
        )?;
        std::mem::swap(&mut x, &mut y);
    }
    let total: f64 = x.iter().sum();
    Ok(Run {
        output: Output::Values(x),
        iterations: iters,
        summary: format!("sum of y {total:.12e}"),
    })
}
