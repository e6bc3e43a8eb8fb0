//! The per-worker stack pool.
//!
//! Creating a fiber must not `mmap` in steady state: a finished fiber hands its guard-paged stack
//! back here and the next spawn on the same worker takes it. Only this module and `fiber` touch
//! `corosensei`.

use corosensei::stack::DefaultStack;
use std::io;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

/// A LIFO pool of guard-paged stacks of one size, owned by one worker thread.
pub(crate) struct StackPool {
    /// Usable size of every stack in the pool (the guard page comes on top).
    size: usize,
    /// Idle stacks, most recently used last (its pages are the likeliest to be warm).
    idle: Vec<DefaultStack>,
    /// The pool never keeps more idle stacks than this; extra ones are unmapped.
    max_idle: usize,
}

impl StackPool {
    pub(crate) fn new(size: usize, max_idle: usize) -> Self {
        StackPool {
            size,
            idle: Vec::new(),
            max_idle,
        }
    }

    /// Takes a stack from the pool, or maps a new one when the pool is empty.
    #[inline]
    pub(crate) fn get(&mut self) -> io::Result<DefaultStack> {
        match self.idle.pop() {
            Some(stack) => Ok(stack),
            None => DefaultStack::new(self.size),
        }
    }

    /// Gives a stack back; it is unmapped if the pool is full.
    #[inline]
    pub(crate) fn put(&mut self, stack: DefaultStack) {
        if self.idle.len() < self.max_idle {
            self.idle.push(stack);
        }
    }
}

/// The address range around the guard page of a stack whose `limit` is `limit`: `[lo, hi)`.
///
/// corosensei's `DefaultStack::limit` is the start of its mapping, guard page included, so the
/// guard is the page above it; the page below is included too in case a stack type reports
/// its lowest usable address instead. Either way the range holds no usable stack memory.
/// Async-signal-safe (the page size is cached before any stack exists).
pub(crate) fn guard_range(limit: usize) -> (usize, usize) {
    let page = page_size();
    (limit.saturating_sub(page), limit + page)
}

/// The system page size (asked once).
pub(crate) fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let cached = PAGE.load(Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: sysconf has no preconditions; _SC_PAGESIZE is always supported on Linux.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let size = if size > 0 { size as usize } else { 4096 };
    PAGE.store(size, Relaxed);
    size
}
