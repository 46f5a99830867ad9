//! Typed vertex arrays, in memory or mmap'd (CLIP §3.3), and the budget that
//! decides which.

use outcore_io::{format_bytes, IoError};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Types with an atomic twin of the same size and alignment.
pub trait AtomicRepr: bytemuck::Pod + Send + Sync {
    type Atomic: Send + Sync;
}
impl AtomicRepr for u32 {
    type Atomic = AtomicU32;
}
impl AtomicRepr for f32 {
    type Atomic = AtomicU32;
}
impl AtomicRepr for u64 {
    type Atomic = AtomicU64;
}
impl AtomicRepr for f64 {
    type Atomic = AtomicU64;
}

/// Where an array lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    Memory,
    /// Mapped from a (now unlinked) file created at this path.
    Mapped(PathBuf),
}

enum Storage<T> {
    Memory(Vec<T>),
    Mapped(memmap2::MmapMut),
}

/// `len` values of `T`, one per vertex.
pub struct VertexArray<T: bytemuck::Pod> {
    storage: Storage<T>,
    len: usize,
    backing: Backing,
}

impl<T: bytemuck::Pod + Send + Sync> VertexArray<T> {
    /// An in-memory array (no budget accounting), filled with `init`.
    pub fn in_memory(len: usize, init: T) -> VertexArray<T> {
        VertexArray {
            storage: Storage::Memory(vec![init; len]),
            len,
            backing: Backing::Memory,
        }
    }

    /// An in-memory array taking over `v` (no copy).
    pub fn from_vec(v: Vec<T>) -> VertexArray<T> {
        VertexArray {
            len: v.len(),
            storage: Storage::Memory(v),
            backing: Backing::Memory,
        }
    }

    /// An array mapped from a new file in `dir`, filled with `init`.
    pub fn mapped(dir: &Path, name: &str, len: usize, init: T) -> Result<VertexArray<T>, IoError> {
        let path = dir.join(format!(".outcore-{name}-{}.vertices", std::process::id()));
        let err = |op, e| IoError::new(&path, op, e);
        let bytes = (len * std::mem::size_of::<T>()).max(1) as u64;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| err("create vertex file", e))?;
        let r = (|| {
            // Reserve the blocks now so a full disk is an error here, not a SIGBUS later.
            // SAFETY: fallocate on an open descriptor we own, with valid arguments.
            let rc = unsafe { libc_fallocate(&file, bytes) };
            if rc != 0 {
                let e = std::io::Error::from_raw_os_error(rc);
                if rc != libc::EOPNOTSUPP {
                    return Err(err("reserve space for vertex file", e));
                }
                file.set_len(bytes)
                    .map_err(|e| err("extend vertex file", e))?;
            }
            // SAFETY: the file was just created by us (create_new) and is unlinked right
            // after mapping, so no other process or code path can truncate or modify it
            // while the mapping lives.
            unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(|e| err("mmap vertex file", e))
        })();
        let _ = std::fs::remove_file(&path);
        let map = r?;
        let mut a = VertexArray {
            storage: Storage::Mapped(map),
            len,
            backing: Backing::Mapped(path),
        };
        if bytemuck::bytes_of(&init).iter().any(|&b| b != 0) {
            a.fill(init);
        }
        Ok(a)
    }

    pub fn backing(&self) -> &Backing {
        &self.backing
    }
    /// Writes a mapped array's dirty pages to its file and waits (`msync`), so
    /// the kernel may drop them under a memory limit instead of holding them
    /// dirty (a memory cgroup cannot always write them back in time and then
    /// kills the process). Nothing to do for an array in memory.
    pub fn write_back(&self) -> std::io::Result<()> {
        match &self.storage {
            Storage::Mapped(m) => m.flush(),
            Storage::Memory(_) => Ok(()),
        }
    }

    /// [`VertexArray::write_back`] of elements `r` only (the pages holding
    /// them).
    pub fn write_back_range(&self, r: std::ops::Range<usize>) -> std::io::Result<()> {
        match &self.storage {
            Storage::Mapped(m) => {
                let size = std::mem::size_of::<T>();
                let (a, b) = (r.start.min(self.len) * size, r.end.min(self.len) * size);
                if b > a {
                    m.flush_range(a, b - a)
                } else {
                    Ok(())
                }
            }
            Storage::Memory(_) => Ok(()),
        }
    }

    /// Tells the kernel that a mapped array is now used in ascending order
    /// (`MADV_SEQUENTIAL`): it reads further ahead and reclaims the pages
    /// behind first, so a result larger than memory that is filled, then
    /// summarized, then written out, each in one sequential pass, does not
    /// evict pages just read ahead. Advice only: a refusal changes nothing.
    pub fn advise_sequential(&self) {
        if let Storage::Mapped(m) = &self.storage {
            let _ = m.advise(memmap2::Advice::Sequential);
        }
    }

    pub fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mapped(_))
    }
    /// Bytes of the array.
    pub fn bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }
    /// Sets every element to `x` (in parallel).
    pub fn fill(&mut self, x: T) {
        use rayon::prelude::*;
        let s: &mut [T] = self;
        s.par_chunks_mut(1 << 16).for_each(|c| c.fill(x));
    }
}

impl<T: bytemuck::Pod + Send + Sync> VertexArray<T> {
    /// The array with every element replaced by `f(element)`, converted in place
    /// (no second array) when `U` has `T`'s size and alignment, else into a new
    /// in-memory array (the caller accounts for it).
    pub fn map_into<U: bytemuck::Pod + Send + Sync>(
        mut self,
        f: impl Fn(&T) -> U + Sync,
    ) -> VertexArray<U> {
        use rayon::prelude::*;
        let same = std::mem::size_of::<U>() == std::mem::size_of::<T>()
            && std::mem::align_of::<U>() == std::mem::align_of::<T>();
        if !same {
            let s: &[T] = &self;
            return VertexArray::from_vec(s.par_iter().map(&f).collect());
        }
        let s: &mut [T] = &mut self;
        s.par_chunks_mut(1 << 14).for_each(|c| {
            for x in c {
                *x = bytemuck::cast(f(x));
            }
        });
        let VertexArray {
            storage,
            len,
            backing,
        } = self;
        let storage = match storage {
            Storage::Memory(v) => Storage::Memory(
                bytemuck::allocation::try_cast_vec(v)
                    .unwrap_or_else(|_| unreachable!("same size and alignment")),
            ),
            Storage::Mapped(m) => Storage::Mapped(m),
        };
        VertexArray {
            storage,
            len,
            backing,
        }
    }
}

impl<T: AtomicRepr> VertexArray<T> {
    /// The same memory as atomics, for edge functions running on many threads.
    pub fn atomic(&self) -> &[T::Atomic] {
        debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<T::Atomic>());
        debug_assert_eq!(std::mem::align_of::<T>(), std::mem::align_of::<T::Atomic>());
        let s: &[T] = self;
        // SAFETY: `T::Atomic` has the size and alignment of `T` (AtomicU32 for 4-byte
        // and AtomicU64 for 8-byte types, checked above); the memory is initialised;
        // we hand out a shared view borrowed from `&self`, so no `&mut [T]` can exist
        // at the same time, and atomics permit concurrent mutation through `&`.
        unsafe { std::slice::from_raw_parts(s.as_ptr() as *const T::Atomic, s.len()) }
    }
}

impl<T: bytemuck::Pod> Deref for VertexArray<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.storage {
            Storage::Memory(v) => v,
            Storage::Mapped(m) => &bytemuck::cast_slice(&m[..])[..self.len],
        }
    }
}

impl<T: bytemuck::Pod> DerefMut for VertexArray<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let len = self.len;
        match &mut self.storage {
            Storage::Memory(v) => v,
            Storage::Mapped(m) => &mut bytemuck::cast_slice_mut(&mut m[..])[..len],
        }
    }
}

/// posix_fallocate; returns 0 or an errno.
///
/// # Safety
/// `file` must be an open, writable descriptor.
unsafe fn libc_fallocate(file: &std::fs::File, len: u64) -> i32 {
    use std::os::fd::AsRawFd;
    libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t)
}

/// Hands out vertex arrays within a memory budget: in memory while it lasts, then
/// mapped from files in the work directory.
pub struct StateBudget {
    remaining: AtomicU64,
    total: u64,
    work_dir: PathBuf,
    force_mapped: bool,
    log: Mutex<Vec<(String, u64, Backing)>>,
}

impl StateBudget {
    /// `memory` bytes for vertex state; mapped files go to `work_dir`.
    pub fn new(memory: u64, work_dir: PathBuf) -> StateBudget {
        StateBudget {
            remaining: AtomicU64::new(memory),
            total: memory,
            work_dir,
            force_mapped: false,
            log: Mutex::new(Vec::new()),
        }
    }
    /// Maps every array from a file, whatever the budget (for tests and the
    /// external scenario).
    pub fn force_mapped(mut self, yes: bool) -> StateBudget {
        self.force_mapped = yes;
        self
    }
    pub fn total(&self) -> u64 {
        self.total
    }
    /// Budget not yet taken.
    pub fn remaining(&self) -> u64 {
        self.remaining.load(Relaxed)
    }
    /// Takes `bytes` for something other than an array (buffers); false when the
    /// budget does not hold them (nothing is taken then).
    pub fn take(&self, bytes: u64) -> bool {
        self.remaining
            .fetch_update(Relaxed, Relaxed, |r| r.checked_sub(bytes))
            .is_ok()
    }
    /// Returns `bytes` taken earlier.
    pub fn give_back(&self, bytes: u64) {
        self.remaining.fetch_add(bytes, Relaxed);
    }
    /// An array of `len` values named `name`, filled with `init`.
    pub fn alloc<T: bytemuck::Pod + Send + Sync>(
        &self,
        name: &str,
        len: usize,
        init: T,
    ) -> Result<VertexArray<T>, IoError> {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        let a = if !self.force_mapped && self.take(bytes) {
            VertexArray::in_memory(len, init)
        } else {
            VertexArray::mapped(&self.work_dir, name, len, init)?
        };
        self.log
            .lock()
            .unwrap()
            .push((name.to_string(), bytes, a.backing().clone()));
        Ok(a)
    }
    /// One line per array handed out: name, size and where it lives.
    pub fn describe(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(n, b, k)| {
                format!(
                    "{n}: {} {}",
                    format_bytes(*b),
                    match k {
                        Backing::Memory => "in memory".to_string(),
                        Backing::Mapped(_) => "mapped from the work directory".to_string(),
                    }
                )
            })
            .collect()
    }
    /// How many arrays were mapped rather than held in memory.
    pub fn mapped_count(&self) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|x| matches!(x.2, Backing::Mapped(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_maps_what_does_not_fit() {
        let dir = tempfile::tempdir().unwrap();
        let b = StateBudget::new(1000, dir.path().to_path_buf());
        let a = b.alloc::<u32>("a", 200, 7).unwrap();
        assert!(!a.is_mapped());
        let mut c = b.alloc::<u64>("c", 300, 9).unwrap();
        assert!(c.is_mapped());
        assert!(c.iter().all(|&x| x == 9));
        c[299] = 1;
        assert_eq!(c.iter().sum::<u64>(), 9 * 299 + 1);
        let at = c.atomic();
        at[0].fetch_add(5, Relaxed);
        assert_eq!(c[0], 14);
        assert_eq!(b.mapped_count(), 1);
        assert_eq!(b.remaining(), 200);
        // the mapped file is already unlinked
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let z = b.alloc::<f64>("z", 1000, 0.0).unwrap();
        assert!(z.is_mapped() && z.iter().all(|&x| x == 0.0));
        assert_eq!(a.len(), 200);
    }

    #[test]
    fn write_back_range_keeps_values_and_clamps() {
        let dir = tempfile::tempdir().unwrap();
        let b = StateBudget::new(0, dir.path().to_path_buf());
        let mut a = b.alloc::<u64>("a", 5000, 3).unwrap();
        assert!(a.is_mapped());
        for (i, x) in a.iter_mut().enumerate() {
            *x = i as u64 * 7;
        }
        // A range not on a page boundary, one past the end, an empty one.
        a.write_back_range(1000..3001).unwrap();
        a.write_back_range(4000..9000).unwrap();
        a.write_back_range(6000..7000).unwrap();
        assert!(a.iter().enumerate().all(|(i, &x)| x == i as u64 * 7));
        let m = VertexArray::in_memory(10, 1u32);
        m.write_back_range(0..10).unwrap();
    }

    #[test]
    fn missing_work_dir_is_a_clear_error() {
        let b = StateBudget::new(0, PathBuf::from("/nonexistent/work"));
        let e = b.alloc::<u32>("dist", 10, 0).err().unwrap().to_string();
        assert!(
            e.contains("/nonexistent/work") && e.contains("create vertex file"),
            "{e}"
        );
    }
}
