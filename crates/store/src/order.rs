//! Vertex orders (ATC'19 §4.2) and relabelled stores.
//!
//! An order is a permutation `new_of_old`: dense id `v` of the source store becomes
//! `new_of_old[v]`. [`Order::Norder`] (Neighborhood Ordering): vertices by
//! descending in-degree (ties by id); from each one not yet numbered, a
//! breadth-first search along out-edges bounded at depth 2 numbers every
//! unnumbered vertex it reaches, in the order reached. [`Order::Degree`]:
//! descending in-degree. [`Order::Random`]: a seeded shuffle.
//!
//! [`reorder`] writes a new store whose vertex `new_of_old[v]` is the source's `v`:
//! the edges are streamed from the source's CSR through the ingest pipeline, and
//! the new `idmap` names every vertex by its user id, so results are still reported
//! in the user's ids. The permutation is computed with the out-CSR memory-mapped.

use crate::error::{Result, StoreError};
use crate::ingest::{IngestObserver, IngestOptions, IngestReport, Relabel};
use crate::manifest::OrderRecord;
use crate::reader::Store;
use std::path::Path;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Norder,
    Degree,
    Random,
}

impl Order {
    pub const ALL: [Order; 3] = [Order::Norder, Order::Degree, Order::Random];
    pub fn name(self) -> &'static str {
        match self {
            Order::Norder => "norder",
            Order::Degree => "degree",
            Order::Random => "random",
        }
    }
}

impl std::str::FromStr for Order {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Order, String> {
        Order::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| format!("unknown order {s:?} (norder, degree or random)"))
    }
}

/// The permutation `new_of_old` of `order` for `store`.
pub fn permutation(store: &Store, order: Order, seed: u64) -> Result<Vec<u32>> {
    let n = store.vertices() as usize;
    let mut old_by_new: Vec<u32> = (0..n as u32).collect();
    match order {
        Order::Random => {
            let mut s = seed ^ 0x2545_F491_4F6C_DD1D;
            for i in (1..n).rev() {
                let z = crate::select::splitmix(&mut s);
                old_by_new.swap(i, (z % (i as u64 + 1)) as usize);
            }
        }
        Order::Degree => {
            let din = store.degrees("in")?;
            old_by_new.sort_by_key(|&v| (std::cmp::Reverse(din[v as usize]), v));
        }
        Order::Norder => {
            let din = store.degrees("in")?;
            let mut seeds = old_by_new.clone();
            seeds.sort_by_key(|&v| (std::cmp::Reverse(din[v as usize]), v));
            let (offsets, lf) = crate::select::mapped_out_csr(store)?;
            let targets: &[u32] = bytemuck::cast_slice(crate::select::mapped_payload(&lf)?);
            let mut done = vec![false; n];
            old_by_new.clear();
            let mut level: Vec<u32> = Vec::new();
            for s in seeds {
                if done[s as usize] {
                    continue;
                }
                done[s as usize] = true;
                old_by_new.push(s);
                let mut start = old_by_new.len() - 1;
                for _depth in 0..2 {
                    let end = old_by_new.len();
                    level.clear();
                    level.extend_from_slice(&old_by_new[start..end]);
                    for &u in &level {
                        let list = &targets
                            [offsets[u as usize] as usize..offsets[u as usize + 1] as usize];
                        for &v in list {
                            if !done[v as usize] {
                                done[v as usize] = true;
                                old_by_new.push(v);
                            }
                        }
                    }
                    start = end;
                }
            }
        }
    }
    let mut new_of_old = vec![0u32; n];
    for (new, &old) in old_by_new.iter().enumerate() {
        new_of_old[old as usize] = new as u32;
    }
    Ok(new_of_old)
}

/// Writes `out`, a copy of `src` relabelled by `order`; returns the ingest report
/// and the seconds spent computing the permutation.
pub fn reorder(
    src: &Store,
    out: &Path,
    order: Order,
    seed: u64,
    opts: &IngestOptions,
    obs: &dyn IngestObserver,
) -> Result<(IngestReport, f64)> {
    if out == src.dir() {
        return Err(StoreError::Invalid(
            "the reordered store must go to a new directory (-o), not over its source".into(),
        ));
    }
    let t = Instant::now();
    let perm = permutation(src, order, seed)?;
    let secs = t.elapsed().as_secs_f64();
    let rel = Relabel {
        store: src,
        new_of_old: &perm,
        record: OrderRecord {
            order: order.name().into(),
            source: src.dir().display().to_string(),
            seed,
            seconds: secs,
        },
    };
    let report = crate::ingest::ingest_relabelled(&rel, out, opts, obs)?;
    Ok((report, secs))
}
