//! Giving the memory a reconcile freed back to the system, so that an idle daemon stays small.
//!
//! A reconcile of hundreds of jobs peaks at tens of megabytes (the live objects, the rendered ones, the plan) and
//! frees them when it ends. glibc's allocator keeps freed memory for reuse instead of returning it, so without a
//! trim the daemon idles at its peak: 52 MB resident after creating 300 jobs, 28 MB after a trim
//! (docs/performance.md, `watch`). The loop trims once it has been quiet for a moment rather than right after a
//! reconcile: the watch events of the reconcile's own writes keep coming for a while, and free memory too.
//!
//! Large buffers (a LIST's body) are kept out of the heap: glibc raises its mmap threshold each time such a
//! buffer is freed, after which the next ones land in the heap between long-lived allocations, and no trim can
//! return those pages. With the threshold fixed, 40 edits of a 300-job file left the daemon 1.7 MB larger
//! instead of 5 MB.

/// Above this size an allocation gets its own mapping, returned to the kernel when freed (glibc's default
/// starting value, which it would otherwise raise up to 32 MiB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 128 * 1024;

/// Keeps large buffers in their own mappings for the rest of the process (glibc only).
pub(super) fn keep_large_buffers_apart() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(
        unsafe_code,
        reason = "an FFI call that takes no pointers and shares no memory"
    )]
    // SAFETY: `mallopt` sets one of the allocator's tunables under its own lock; it takes no pointer and touches
    // no allocation. A refused value (it returns 0) leaves the default, which is only less frugal.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Returns the allocator's free pages to the kernel (glibc only; other C libraries are left to their own policy).
pub(super) fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[expect(
        unsafe_code,
        reason = "an FFI call that takes no pointers and shares no memory"
    )]
    // SAFETY: `malloc_trim` only hands free pages of the allocator's arenas back to the kernel (madvise); it takes
    // the arenas' locks itself and touches no live allocation, so it is sound from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
