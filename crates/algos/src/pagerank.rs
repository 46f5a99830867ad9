//! PageRank for a fixed number of iterations, as LDBC Graphalytics defines it:
//! `PR(v) = (1 - d) / n + d * (sum over (u, v) of PR(u) / outdeg(u) + D / n)`,
//! where `D` is the rank held by dangling vertices (no out-edges), spread
//! uniformly; `PR_0 = 1 / n`; `f64` throughout. Each iteration is one full
//! streaming pass (every vertex active); the sums are atomic adds. With several
//! threads the additions happen in varying order, so results may differ between
//! runs in the last bits (relative 1e-15); with `--threads 1` they are exact
//! repeats.

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use outcore_state::atomic_add_f64;
use std::sync::atomic::Ordering::Relaxed;

/// Out-degrees from the store, as a vertex array within the budget.
pub(crate) fn out_degrees(e: &StreamEngine) -> Result<outcore_state::VertexArray<u32>> {
    let mut a = e.alloc::<u32>("out-degree", 0)?;
    e.store().degrees_into("out", &mut a)?;
    Ok(a)
}

/// The sum of `x` over dangling vertices (out-degree 0), in id order and
/// compensated (Neumaier), so it is the same on every run and within an ulp or
/// so of the exact sum whatever order another engine adds the same terms in
/// (a plain sum over 10^5 dangling vertices drifts by ~1e-12 relative).
pub(crate) fn dangling_sum(x: &[f64], deg: &[u32]) -> f64 {
    crate::compensated_sum(x.iter().zip(deg).filter(|(_, &k)| k == 0).map(|(x, _)| *x))
}

pub fn run(e: &mut StreamEngine, p: &Params) -> Result<Run> {
    let n = e.vertices() as f64;
    let iters = p.iterations.unwrap_or(10);
    let d = p.damping;
    let deg = out_degrees(e)?;
    let rank = e.alloc::<f64>("rank", 1.0 / n)?;
    let contrib = e.alloc::<f64>("contrib", 0.0)?;
    let sum = e.alloc::<f64>("sum", 0.0)?;
    for _ in 0..iters {
        let (r, c, s) = (rank.atomic(), contrib.atomic(), sum.atomic());
        let dangling = dangling_sum(&rank, &deg);
        let degs = &deg;
        e.vmap(|v| {
            let x = f64::from_bits(r[v as usize].load(Relaxed));
            let k = degs[v as usize];
            let share = if k == 0 { 0.0 } else { x / k as f64 };
            c[v as usize].store(share.to_bits(), Relaxed);
            s[v as usize].store(0f64.to_bits(), Relaxed);
        });
        e.activate_all();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(s, v),
            |_, u, v, _| {
                atomic_add_f64(&s[v as usize], f64::from_bits(c[u as usize].load(Relaxed)));
            },
        )?;
        let base = (1.0 - d) / n + d * dangling / n;
        e.vmap(|v| {
            let x = base + d * f64::from_bits(s[v as usize].load(Relaxed));
            r[v as usize].store(x.to_bits(), Relaxed);
        });
    }
    let total: f64 = rank.iter().sum();
    Ok(Run {
        output: Output::Values(rank),
        iterations: iters,
        summary: format!("{iters} iterations, total rank {total:.12}"),
    })
}
