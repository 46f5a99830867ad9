//! Relaxation programs on the vertex-centric engine (BAsC + Norder ATC'19 §5):
//! values in memory, one engine iteration per round, only the active vertices'
//! edge lists read, by page.
//!
//! Each round walks the active vertices' out-edges (and, for a
//! [`EdgeProgram::both_directions`] program, their in-edges, which the store must
//! hold) and relaxes every target in place (one thread: the engine calls back
//! in page order). A vertex whose value dropped (as the program's `improves`
//! says) is active in the next round. The fixed point is the one every engine
//! reaches, so parents are the smallest id among the tied ones here too, in
//! whatever order the pages arrive. Synchronous programs (PageRank) need every
//! edge every iteration, which this engine is not for; they are refused.

use super::{set_word, word, EdgeProgram, ProgramRunner};
use crate::error::{EngineError, Result};
use crate::vertex::{Frontier, FrontierBuilder, VertexEngine, IN, OUT};
use outcore_state::VertexArray;

impl ProgramRunner for VertexEngine {
    fn run_program<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::Out>> {
        Ok(self.relax(prog)?.map_into(|x| prog.output(x)))
    }
    fn iterations(&self) -> u64 {
        self.program_iterations
    }
    fn both_directions(&self) -> bool {
        self.has_in_edges()
    }
}

impl VertexEngine {
    /// Runs relaxation program `prog` to its end; its values per vertex.
    pub fn relax<P: EdgeProgram>(&mut self, prog: &P) -> Result<VertexArray<P::V>> {
        if !prog.relaxes() {
            return Err(EngineError::Invalid(format!(
                "{} does not run on the vertex engine (it runs bfs, sssp and wcc, which relax values in place)",
                prog.name()
            )));
        }
        let both = prog.both_directions();
        if both && !self.has_in_edges() {
            return Err(EngineError::Invalid(format!(
                "{} on a directed store needs its in-edges on the vertex engine (VertexConfig::in_edges)",
                prog.name()
            )));
        }
        let n = self.vertices();
        let mut vals: Vec<P::V> = Vec::with_capacity(n);
        let mut first = Vec::new();
        for v in 0..n as u32 {
            let (x, act) = prog.init(v, 0, &mut [0.0; 4]);
            vals.push(x);
            if act {
                first.push(v);
            }
        }
        let mut frontier = Frontier::from_list(first);
        let mut done = 0u64;
        while prog.proceed(done, &[0.0; 4], frontier.len() as u64) {
            let mut next = FrontierBuilder::new(n);
            let mut refused = None;
            let mut push = |u: u32, ts: &[u32], ws: Option<&[f32]>| {
                let m = prog.message(&vals[u as usize], 0);
                for (i, &v) in ts.iter().enumerate() {
                    let w = ws.map_or(1.0, |w| w[i]);
                    let Some(c) = prog.edge(m, u, w) else {
                        // Out-edges: (u, v); in-edges walked from u: (v, u).
                        refused.get_or_insert((u, v, w));
                        continue;
                    };
                    let old = word(&vals[v as usize]);
                    if c < old {
                        set_word(&mut vals[v as usize], c);
                        if prog.improves(old, c) {
                            next.insert(v);
                        }
                    }
                }
            };
            self.iterate(OUT, &frontier, &mut push)?;
            if both {
                self.iterate(IN, &frontier, &mut push)?;
            }
            done += 1;
            if let Some((u, v, w)) = refused {
                return Err(EngineError::BadEdge {
                    program: prog.name(),
                    u,
                    v,
                    w,
                });
            }
            frontier = next.finish();
        }
        self.program_iterations = done;
        Ok(VertexArray::from_vec(vals))
    }
}
