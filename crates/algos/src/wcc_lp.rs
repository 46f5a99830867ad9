//! Weakly connected components by label propagation — the baseline GridGraph and
//! X-Stream run (CLIP ATC'17 §3.2): every vertex takes the smallest label among its
//! neighbours, one hop per iteration (faster with re-entry, §3.1).
//!
//! On a store holding both directions (`--undirected`) only vertices whose label
//! dropped are active. On a directed store a label must also flow against the
//! edge, from target to source, so every edge is streamed each iteration until
//! no label changes.

use crate::{Output, Params, Result, Run};
use outcore_engine::{prefetch, Mode, StreamEngine};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

pub fn run(e: &mut StreamEngine, p: &Params) -> Result<Run> {
    let label = e.alloc::<u32>("label", 0)?;
    {
        let a = label.atomic();
        e.vmap(|v| a[v as usize].store(v, Relaxed));
    }
    let directed = e.store().manifest().directed;
    e.activate_all();
    let mut it = 0;
    loop {
        if crate::cap_reached(p, it) {
            break;
        }
        let changed = AtomicBool::new(false);
        let a = label.atomic();
        e.exec_ahead(
            Mode::Multi,
            |v| prefetch(a, v),
            |ctx, u, v, _| {
                let lu = a[u as usize].load(Relaxed);
                let lv = a[v as usize].load(Relaxed);
                if lu < lv {
                    if a[v as usize].fetch_min(lu, Relaxed) > lu {
                        ctx.activate(v);
                        changed.store(true, Relaxed);
                    }
                } else if lv < lu && directed && a[u as usize].fetch_min(lv, Relaxed) > lv {
                    ctx.activate(u);
                    changed.store(true, Relaxed);
                }
            },
        )?;
        it += 1;
        if !changed.load(Relaxed) {
            break;
        }
        if directed {
            e.activate_all();
        }
    }
    let components = label
        .iter()
        .enumerate()
        .filter(|(v, &l)| *v as u32 == l)
        .count();
    Ok(Run {
        output: Output::Labels(label),
        iterations: it,
        summary: format!("{components} components"),
    })
}
