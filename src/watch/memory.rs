//! Giving the memory a reconcile freed back to the system, so that an idle daemon stays small.
//!
//! A reconcile of hundreds of jobs peaks at tens of megabytes (the live objects, the rendered ones, the plan) and
//! frees them when it ends. glibc's allocator keeps freed memory for reuse instead of returning it, so without a
//! trim the daemon idles at its peak: 52 MB resident after creating 300 jobs, 28 MB after a trim
//! (docs/performance.md, `watch`). The loop trims once it has been quiet for a moment rather than right after a
//! reconcile: the watch events of the reconcile's own writes keep coming for a while, and free memory too.

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
