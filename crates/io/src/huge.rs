//! Vectors whose pages are asked to be transparent huge pages.
//!
//! Arrays written or read at random (accumulators, CSR builders) miss the TLB
//! on almost every access with 4 KiB pages once they outgrow what the TLB
//! covers (a few MiB); with 2 MiB pages they fault 512 times less often and
//! rarely miss it. `MADV_HUGEPAGE` is only advice: where THP is off, these
//! are ordinary vectors with the same contents. The advice is given before
//! the pages are first touched, so the kernel can back them with huge pages
//! at the first fault (THP in `madvise` mode, as on this project's machines).

/// Advises transparent huge pages for the whole 2 MiB pages inside the
/// memory `[ptr, ptr + bytes)`.
fn advise(ptr: usize, bytes: usize) {
    const HUGE: usize = 2 << 20;
    let a = ptr.div_ceil(HUGE) * HUGE;
    let b = (ptr + bytes) / HUGE * HUGE;
    if b > a {
        // SAFETY: [a, b) lies inside an allocation the caller owns (and
        // borrows mutably); MADV_HUGEPAGE changes neither the contents nor
        // the mapping's validity.
        unsafe {
            libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
        }
    }
}

/// Advises transparent huge pages for the whole 2 MiB pages inside `v`.
pub fn advise_huge<T>(v: &mut [T]) {
    advise(v.as_mut_ptr() as usize, std::mem::size_of_val(v));
}

/// A zeroed vector of `len` elements in huge pages where the kernel gives
/// them (a large zeroed allocation is fresh, untouched memory).
pub fn huge_zeroed<T: bytemuck::Zeroable + Clone>(len: usize) -> Vec<T> {
    let mut v: Vec<T> = bytemuck::zeroed_vec(len);
    advise_huge(&mut v);
    v
}

/// A vector of `len` copies of `x` in huge pages where the kernel gives
/// them: the allocation is advised before it is filled.
pub fn huge_filled<T: Copy>(len: usize, x: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    advise(
        v.as_mut_ptr() as usize,
        v.capacity() * std::mem::size_of::<T>(),
    );
    v.resize(len, x);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vectors_hold_what_was_asked() {
        for len in [0, 1, 1000, 3 << 20] {
            let z: Vec<u64> = huge_zeroed(len);
            assert_eq!(z.len(), len);
            assert!(z.iter().all(|&x| x == 0));
            let f = huge_filled(len, u64::MAX - 7);
            assert_eq!(f.len(), len);
            assert!(f.iter().all(|&x| x == u64::MAX - 7));
        }
    }
}
