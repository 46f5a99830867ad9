//! Where an ingest writes, checked before the work: the output name's lock and
//! state, the build and spill directories (removed unless committed, stale ones of
//! dead processes cleaned), a vertex count that only a stray id explains, and the
//! store's least size against the free space.

use super::*;

/// Refuses a vertex count that only a stray large id can explain (a single id
/// 4294967294, or random bytes read as bin32), before any store file is written.
pub(super) fn check_plausible(n: u64, input_edges: u64, max_id: u64, declared: bool) -> Result<()> {
    if declared || n <= SPARSE_MIN_VERTICES {
        return Ok(());
    }
    if n / input_edges.max(1) > SPARSE_VERTICES_PER_EDGE {
        return Err(StoreError::Invalid(format!(
            "the largest id, {max_id}, makes {n} vertices for {input_edges} edges (a store over {SPARSE_MIN_VERTICES} vertices may hold at most {SPARSE_VERTICES_PER_EDGE} per edge unless declared): the ids are sparse, or the input is not in the format read; pass --remap to number the distinct ids densely, or --vertices N to declare the count"
        )));
    }
    Ok(())
}

/// The least the store's files take (degrees and CSR offsets per vertex; CSR and
/// packed grid targets, and weights, per edge): an ingest that cannot fit even
/// this is refused before writing.
pub fn min_store_bytes(n: u64, edges: u64, weighted: bool, in_edges: bool) -> u64 {
    let w = weighted as u64;
    let out = n * 16 + edges * (6 + 8 * w);
    let inn = if in_edges {
        n * 8 + edges * (4 + 4 * w)
    } else {
        0
    };
    out + inn
}

/// Refuses when `need` bytes cannot fit in `free` on the file system of `dir`.
pub(super) fn check_space(dir: &Path, need: u64, free: Option<u64>) -> Result<()> {
    match free {
        Some(free) if need > free => Err(StoreError::Invalid(format!(
            "the store needs at least {} but {} has {} free; free some space or write elsewhere (-o, --tmp-dir)",
            outcore_io::format_bytes(need),
            dir.display(),
            outcore_io::format_bytes(free)
        ))),
        _ => Ok(()),
    }
}

pub(super) enum OutState {
    Fresh,
    EmptyDir,
    Replace,
}

/// Takes the output name's lock for the whole ingest (see [`outcore_io::NameLock`]).
pub(super) fn lock_output(out: &Path) -> Result<outcore_io::NameLock> {
    match outcore_io::NameLock::try_lock(out)? {
        Some(l) => Ok(l),
        None => Err(StoreError::Invalid(format!(
            "{}: another ingest (or reorder) is writing this store now; wait for it to finish or choose another -o",
            out.display()
        ))),
    }
}

pub(super) fn check_output(out: &Path, force: bool) -> Result<OutState> {
    match std::fs::symlink_metadata(out) {
        Err(_) => Ok(OutState::Fresh),
        Ok(md) if !md.is_dir() => Err(StoreError::Invalid(format!(
            "{}: exists and is not a directory; refusing to replace it",
            out.display()
        ))),
        Ok(_) => {
            if out.join(MANIFEST).exists() {
                if force {
                    Ok(OutState::Replace)
                } else {
                    Err(StoreError::Exists { dir: out.into() })
                }
            } else if std::fs::read_dir(out)
                .map_err(|e| IoError::new(out, "read directory", e))?
                .next()
                .is_none()
            {
                Ok(OutState::EmptyDir)
            } else {
                Err(StoreError::Invalid(format!(
                    "{}: exists, is not empty and is not an outcore store; refusing to write into it",
                    out.display()
                )))
            }
        }
    }
}

/// Removes the build directory unless the ingest committed.
pub(super) struct WorkDir {
    pub(super) build: PathBuf,
    pub(super) spill: PathBuf,
    pub(super) committed: bool,
    pub(super) _registered: [outcore_io::temp::Registration; 2],
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.spill);
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.build);
        }
    }
}

pub(super) fn make_workdir(out: &Path, tmp: Option<&Path>) -> Result<WorkDir> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = out
        .file_name()
        .ok_or_else(|| StoreError::Invalid(format!("{}: not a usable output name", out.display())))?
        .to_string_lossy()
        .into_owned();
    // `.NAME.ingest-PID` and `.NAME.old-PID` directories of dead processes.
    outcore_io::temp::clean_stale_of(&parent, &name);
    let pid = std::process::id();
    let build = parent.join(format!(".{name}.ingest-{pid}"));
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(&build).map_err(|e| IoError::new(&build, "create directory", e))?;
    let spill = match tmp {
        Some(t) => {
            outcore_io::temp::clean_stale(t);
            t.join(format!("outcore-spill-{pid}"))
        }
        None => build.join("spill"),
    };
    let mut wd = WorkDir {
        _registered: [
            outcore_io::temp::register(&build),
            outcore_io::temp::register(&spill),
        ],
        build,
        spill: spill.clone(),
        committed: false,
    };
    if let Err(e) = std::fs::create_dir_all(&spill) {
        wd.committed = false;
        return Err(IoError::new(&spill, "create directory", e).into());
    }
    Ok(wd)
}
