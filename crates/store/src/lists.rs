//! Whole out-edge lists of chosen vertices, read from the out-CSR in page-sized
//! requests: the concurrent-jobs engine's third way of loading an iteration (after
//! whole sub-blocks and the active sources' runs in each sub-block, GraphCP FCS'24
//! §3.3.2).
//!
//! A grid row spreads a vertex's d out-edges over up to P sub-blocks, so reading one
//! source selectively from the grid costs up to P small requests of at least a page
//! each; in the CSR its edges are one contiguous run of `4·d` bytes of
//! `csr.out.targets` (and as many of `csr.out.weights`). When only a few thousand
//! sources are active, reading their lists is hundreds of times fewer bytes than the
//! grid.
//!
//! The offsets come from the out-degrees the caller holds (their prefix sums are
//! the CSR's offsets, docs/format.md): only every [`SAMPLE`]-th offset is kept, so
//! the reader adds 8 bytes per 64 vertices. [`ListReader::plan`] groups the lists of
//! ascending vertices into requests: a list that starts in the page after the
//! previous list's last page (or in that page) joins its group, so a request never
//! reads a whole page nobody asked for; groups stop growing at [`GROUP_EDGES`]
//! edges. Invariants: a group's lists are whole and in vertex order; every target
//! read is checked against the vertex count.

use crate::error::corrupt;
use crate::format::{FileKind, LayoutFile, HEADER_LEN};
use crate::reader::{Block, Store};
use crate::Result;
use outcore_io::{AlignedBuf, ALIGN};

/// Every `SAMPLE`-th CSR offset is kept in memory.
pub const SAMPLE: usize = 64;

/// A group's edges stop growing past this many (256 KiB of targets): requests
/// large enough to stream, small enough that the read buffers of many requests in
/// flight stay a few MiB.
pub const GROUP_EDGES: u64 = 1 << 16;

/// One request: the lists of `vertices[first..last]`, edges `a..b` of the CSR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListGroup {
    pub first: usize,
    pub last: usize,
    pub a: u64,
    pub b: u64,
}

impl ListGroup {
    /// Pages of one CSR payload file this group's request reads.
    pub fn pages(&self) -> u64 {
        last_page(self.b) - first_page(self.a) + 1
    }
}

/// The file page holding the first byte of edge `a` of a CSR payload file.
fn first_page(a: u64) -> u64 {
    (HEADER_LEN + 4 * a) / ALIGN as u64
}

/// The file page holding the last byte of the edges before `b` (b > 0).
fn last_page(b: u64) -> u64 {
    (HEADER_LEN + 4 * b - 1) / ALIGN as u64
}

/// Reads whole out-edge lists from the out-CSR (see the module docs).
pub struct ListReader<'d> {
    degrees: &'d [u32],
    /// `base[k]` = the CSR offset of vertex `k * SAMPLE`.
    base: Vec<u64>,
    targets: LayoutFile,
    weights: Option<LayoutFile>,
    n: u32,
}

impl<'d> ListReader<'d> {
    /// Opens `csr.out.targets` (and `csr.out.weights` on a weighted store) with the
    /// store's read mode and counters; `degrees` are the store's out-degrees. Their
    /// sum must be the CSR's edge count.
    pub fn open(store: &Store, degrees: &'d [u32]) -> Result<ListReader<'d>> {
        let targets = store.layout("csr.out.targets", FileKind::CsrTargets)?;
        let weights = if store.weighted() {
            Some(store.layout("csr.out.weights", FileKind::CsrWeights)?)
        } else {
            None
        };
        if degrees.len() as u64 != store.vertices() {
            return Err(corrupt(
                store.dir().join("degrees.out"),
                "wrong number of entries",
            ));
        }
        let mut base = Vec::with_capacity(degrees.len() / SAMPLE + 1);
        let mut off = 0u64;
        for (v, &d) in degrees.iter().enumerate() {
            if v % SAMPLE == 0 {
                base.push(off);
            }
            off += d as u64;
        }
        if off != targets.header.count
            || weights
                .as_ref()
                .is_some_and(|w| w.header.count != targets.header.count)
        {
            return Err(corrupt(
                targets.file.path(),
                format!(
                    "the out-degrees sum to {off} edges but the CSR holds {}",
                    targets.header.count
                ),
            ));
        }
        Ok(ListReader {
            degrees,
            base,
            targets,
            weights,
            n: store.vertices() as u32,
        })
    }

    /// The CSR edge range of `v`'s out-edges.
    pub fn range(&self, v: u32) -> (u64, u64) {
        let k = v as usize / SAMPLE;
        let a = self.base[k]
            + self.degrees[k * SAMPLE..v as usize]
                .iter()
                .map(|&d| d as u64)
                .sum::<u64>();
        (a, a + self.degrees[v as usize] as u64)
    }

    /// Groups the lists of `vertices` (ascending) into requests; vertices without
    /// out-edges are skipped.
    pub fn plan(&self, vertices: &[u32]) -> Vec<ListGroup> {
        let mut groups: Vec<ListGroup> = Vec::new();
        // The previous vertex and its range, to step to the next without
        // re-summing from the sample point.
        let mut prev: Option<(u32, u64)> = None;
        for (i, &v) in vertices.iter().enumerate() {
            let a = match prev {
                Some((p, end)) if v > p && (v as usize - p as usize) < SAMPLE => {
                    end + self.degrees[p as usize + 1..v as usize]
                        .iter()
                        .map(|&d| d as u64)
                        .sum::<u64>()
                }
                _ => self.range(v).0,
            };
            let b = a + self.degrees[v as usize] as u64;
            prev = Some((v, b));
            if a == b {
                continue;
            }
            match groups.last_mut() {
                Some(g) if first_page(a) <= last_page(g.b) + 1 && g.b - g.a < GROUP_EDGES => {
                    g.last = i + 1;
                    g.b = b;
                }
                _ => groups.push(ListGroup {
                    first: i,
                    last: i + 1,
                    a,
                    b,
                }),
            }
        }
        groups
    }

    /// Reads group `g` of `vertices` (from [`ListReader::plan`] on the same slice):
    /// one request for the targets and, with `with_weights` on a weighted store, one
    /// for the weights. The block's sources are the group's vertices with edges.
    pub fn read(&self, vertices: &[u32], g: &ListGroup, with_weights: bool) -> Result<Block> {
        // Each reading thread keeps its two read buffers (their memory is reused
        // from request to request instead of going back to the allocator).
        thread_local! {
            static BUFS: std::cell::RefCell<(AlignedBuf, AlignedBuf)> =
                std::cell::RefCell::new((AlignedBuf::default(), AlignedBuf::default()));
        }
        BUFS.with(|b| {
            let (tbuf, wbuf) = &mut *b.borrow_mut();
            self.read_with(vertices, g, with_weights, tbuf, wbuf)
        })
    }

    fn read_with(
        &self,
        vertices: &[u32],
        g: &ListGroup,
        with_weights: bool,
        tbuf: &mut AlignedBuf,
        wbuf: &mut AlignedBuf,
    ) -> Result<Block> {
        let len = (g.b - g.a) as usize;
        let at = self.targets.read_payload_into(4 * g.a, 4 * len, tbuf)?;
        // `at` is a multiple of 4 in a page-aligned buffer.
        let dsts: &[u32] = bytemuck::cast_slice(&tbuf.as_slice()[at..at + 4 * len]);
        let weights: Option<&[f32]> = match (&self.weights, with_weights) {
            (Some(wf), true) => {
                let at = wf.read_payload_into(4 * g.a, 4 * len, wbuf)?;
                Some(bytemuck::cast_slice(&wbuf.as_slice()[at..at + 4 * len]))
            }
            _ => None,
        };
        // The group's lists, with the edges of vertices nobody asked for (between
        // two lists in the same pages) dropped.
        let k = g.last - g.first;
        let mut out = Block {
            srcs: Vec::with_capacity(k),
            offs: Vec::with_capacity(k + 1),
            dsts: Vec::with_capacity(len),
            ..Default::default()
        };
        out.offs.push(0);
        let mut ow = weights.map(|_| Vec::with_capacity(len));
        let mut end = g.a;
        for &v in &vertices[g.first..g.last] {
            let (va, vb) = self.range(v);
            if va == vb {
                continue;
            }
            if va < end || vb > g.b {
                return Err(corrupt(
                    self.targets.file.path(),
                    "a list of the group lies outside its request",
                ));
            }
            end = vb;
            let (s, e) = ((va - g.a) as usize, (vb - g.a) as usize);
            out.srcs.push(v);
            if let Some(&bad) = dsts[s..e].iter().find(|&&t| t >= self.n) {
                return Err(corrupt(
                    self.targets.file.path(),
                    format!("target {bad} is not below the vertex count {}", self.n),
                ));
            }
            out.dsts.extend_from_slice(&dsts[s..e]);
            if let (Some(ow), Some(w)) = (&mut ow, weights) {
                ow.extend_from_slice(&w[s..e]);
            }
            out.offs.push(out.dsts.len() as u32);
        }
        out.weights = ow;
        Ok(out)
    }
}
