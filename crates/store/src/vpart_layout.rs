//! An opened V-Part layout ([`crate::vpart`]): its record, index and
//! partition files, each checked against the manifest when opened and read in
//! ranges checked against its page sums.

use crate::error::{corrupt, Result, StoreError};
use crate::format::{FileKind, LayoutFile};
use crate::pagesums::PageSums;
use crate::reader::Store;
use crate::vpart::{
    file_name, index_name, mask_bytes, BlockIndex, EdgeCodec, VpartRecord, VPART_VERSION,
};
use crate::vpart_sources::MAX_SOURCE_BYTES;
use outcore_io::ReadMode;

/// An opened layout: the record, the segment starts, and its files.
pub struct VpartLayout {
    pub record: VpartRecord,
    /// `seg[q * (K + 1) + p]`.
    seg: Vec<u64>,
    /// Per partition, its source table's block index (checked against the
    /// record and the table's size when opened).
    block_index: Vec<BlockIndex>,
    /// Per partition, its skip table ([`crate::vpart_index`]) as u32s.
    skip: Vec<Option<Vec<u32>>>,
    skip_unit: u64,
    pub dests: Vec<LayoutFile>,
    pub sources: Vec<LayoutFile>,
    pub edges: Vec<LayoutFile>,
    pub mirrors: Vec<LayoutFile>,
    /// Page-group checksums of each partition's files, in [`Part`] order.
    sums: Vec<[PageSums; 4]>,
    pub weighted: bool,
}

/// One of a partition's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Dests = 0,
    Sources = 1,
    Edges = 2,
    Mirrors = 3,
}

impl VpartLayout {
    /// Opens the layout of `store` (checking every header against the manifest,
    /// and the index's CRC); `None` when the store has none.
    pub fn open(store: &Store, mode: ReadMode) -> Result<Option<VpartLayout>> {
        let Some(rec) = store.manifest().vpart.clone() else {
            return Ok(None);
        };
        if rec.version != VPART_VERSION {
            return Err(StoreError::Invalid(format!(
                "{}: its V-Part layout has format {}, this build reads format {VPART_VERSION}; run `outcore partition` again (or an external run rebuilds it)",
                store.dir().display(),
                rec.version
            )));
        }
        let k = rec.partitions;
        let stats = store.stats().clone();
        let open = |name: String, kind| store.layout_with(&name, kind, mode, stats.clone());
        let index = open(index_name(), FileKind::VpartIndex)?;
        let words: Vec<u64> = index.read_all()?;
        let ku = k as usize;
        if rec.dests.len() != ku {
            return Err(corrupt(
                index.file.path(),
                "does not match the vpart record",
            ));
        }
        // The source tables' sizes, from their headers (checked below).
        let mut sources = Vec::with_capacity(ku);
        for q in 0..k {
            sources.push(open(file_name(q, "sources"), FileKind::VpartSources)?);
        }
        let sizes: Vec<u64> = sources.iter().map(|s| s.header.payload_len).collect();
        let parsed =
            crate::vpart_index::parse(&words, &rec.dests, &rec.mirrors, &rec.edges, &sizes)
                .map_err(|e| corrupt(index.file.path(), e))?;
        let mut l = VpartLayout {
            seg: parsed.seg,
            block_index: parsed.blocks,
            skip: parsed.skip,
            skip_unit: parsed.skip_unit,
            dests: Vec::new(),
            sources: Vec::new(),
            edges: Vec::new(),
            mirrors: Vec::new(),
            sums: Vec::new(),
            weighted: store.weighted(),
            record: rec,
        };
        let codec = l.record.codec(l.weighted);
        for (q, s) in (0..k).zip(sources) {
            let d = open(file_name(q, "dests"), FileKind::VpartDests)?;
            let e = open(file_name(q, "edges"), FileKind::VpartEdges)?;
            let mi = open(file_name(q, "mirrors"), FileKind::VpartMirrors)?;
            let qu = q as usize;
            let ok = d.header.payload_len == 8 * l.record.dests[qu]
                && mi.header.payload_len == mask_bytes(k) as u64 * l.record.dests[qu]
                && s.header.payload_len >= 2 * l.record.mirrors[qu]
                && s.header.payload_len <= MAX_SOURCE_BYTES * l.record.mirrors[qu]
                && e.header.payload_len == codec.payload_bytes(l.record.edges[qu])
                && l.seg[qu * (ku + 1) + ku] == l.record.mirrors[qu];
            if !ok {
                return Err(corrupt(
                    store.dir().join(file_name(q, "*")),
                    "partition files do not match the vpart record",
                ));
            }
            l.dests.push(d);
            l.sources.push(s);
            l.edges.push(e);
            l.mirrors.push(mi);
            let sums = |part| PageSums::load(store, &file_name(q, part));
            l.sums.push([
                sums("dests")?,
                sums("sources")?,
                sums("edges")?,
                sums("mirrors")?,
            ]);
        }
        Ok(Some(l))
    }
    pub fn partitions(&self) -> u32 {
        self.record.partitions
    }
    /// Bytes of one destination's mirror mask ([`mask_bytes`]).
    pub fn mask_bytes(&self) -> usize {
        mask_bytes(self.record.partitions)
    }
    /// Payload bytes of partition `q`'s `part` file.
    pub fn payload_bytes(&self, part: Part, q: usize) -> u64 {
        self.file(part, q).header.payload_len
    }
    fn file(&self, part: Part, q: usize) -> &LayoutFile {
        match part {
            Part::Dests => &self.dests[q],
            Part::Sources => &self.sources[q],
            Part::Edges => &self.edges[q],
            Part::Mirrors => &self.mirrors[q],
        }
    }

    /// `count` elements of `T` at payload byte `offset` of partition `q`'s `part`
    /// file, read widened to whole checksum groups and checked against the
    /// file's page sums ([`VpartLayout::read_into`]).
    pub fn read<T: bytemuck::Pod>(
        &self,
        part: Part,
        q: usize,
        offset: u64,
        count: u64,
    ) -> Result<Vec<T>> {
        let mut v = Vec::new();
        self.read_into(
            part,
            q,
            offset,
            count * std::mem::size_of::<T>() as u64,
            &mut v,
        )
        .map(|skew| {
            v.drain(..skew);
            v.truncate(count as usize);
            v
        })
    }

    /// Reads payload bytes `offset..offset + bytes` of partition `q`'s `part`
    /// file into `buf` widened to whole checksum groups, checks them, and
    /// returns where `offset` lies in `buf` (in elements of `T`).
    pub fn read_into<T: bytemuck::Pod>(
        &self,
        part: Part,
        q: usize,
        offset: u64,
        bytes: u64,
        buf: &mut Vec<T>,
    ) -> Result<usize> {
        self.sums[q][part as usize].read_checked(self.file(part, q), offset, offset + bytes, buf)
    }
    /// Asks for payload bytes `offset..offset + bytes` of partition `q`'s
    /// `part` file to be read ahead into the page cache (a hint; the read that
    /// uses them checks them).
    pub fn will_need(&self, part: Part, q: usize, offset: u64, bytes: u64) {
        self.file(part, q).will_need(offset, bytes)
    }
    /// Every partition's source-table block index.
    pub fn block_indexes(&self) -> &[BlockIndex] {
        &self.block_index
    }
    /// Partition `q`'s source-table block index.
    pub fn block_index(&self, q: usize) -> &BlockIndex {
        &self.block_index[q]
    }
    /// Partition `p`'s skip table: row r (k u32s, `[r * k + q]`) is p's
    /// position in its segment of `S_q` at destination `r * skip_unit()`, the
    /// last row at its end; `None` when a segment has 2^32 mirrors or more.
    pub fn skip_table(&self, p: usize) -> Option<&[u32]> {
        self.skip[p].as_deref()
    }
    /// Destinations per unit of the skip tables ([`skip_unit`]).
    pub fn skip_unit(&self) -> u64 {
        self.skip_unit
    }
    /// First mirror of owner `p`'s destinations in partition `q`'s source table.
    pub fn segment(&self, q: u32, p: u32) -> u64 {
        let k = self.record.partitions as usize;
        self.seg[q as usize * (k + 1) + p as usize]
    }
    /// The packing of this layout's edge records.
    pub fn codec(&self) -> EdgeCodec {
        self.record.codec(self.weighted)
    }
    /// Bytes of one unpacked edge record (u32 target, and f32 weight when
    /// weighted): an upper bound of a packed one's, which buffers are planned by.
    pub fn edge_bytes(&self) -> u64 {
        if self.weighted {
            8
        } else {
            4
        }
    }
}
