//! The deadline heap of one worker, as a plain data structure: no clock (time is the `now` tick
//! the caller passes), no runtime, no context switch, so its tests run under Miri.
//!
//! It is generic over [`TimerTask`], what it needs of a fiber: the fiber's two timer words and
//! what to do when its deadline passes. The runtime's one implementation is for
//! `Task` (in `sched/task.rs`); the tests use a mock.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// What the deadline heap needs of a fiber. Both words belong to the fiber's home worker, the
/// only thread that touches them, so they are read and written `Relaxed`.
pub(crate) trait TimerTask: Sized {
    /// The fiber's current timeout in ticks, 0 for none.
    fn deadline(&self) -> &AtomicU64;
    /// The tick of the fiber's queued entry (see [`TimerHeap`]), 0 for none.
    fn timer_queued(&self) -> &AtomicU64;
    /// A new strong reference to this fiber, for a heap entry.
    fn to_arc(&self) -> Arc<Self>;
    /// The fiber's deadline passed (the heap has cleared `deadline`): mark it timed out and
    /// wake it.
    fn expire(&self);
}

/// Compaction waits until at least this many entries may be garbage, so a small heap is never
/// rebuilt for a handful of them.
pub(crate) const COMPACT_FLOOR: usize = 64;

/// Compaction gives back the spare capacity of a heap at most a quarter full (down to twice its
/// length, but not below half this), unless its capacity is below this many entries (1 MiB):
/// smaller heaps keep theirs, so that arming does not reallocate after every compaction.
const SHRINK_FLOOR: usize = 1 << 16;

/// One heap entry: fiber `task` is to be looked at on tick `when`.
struct Entry<T> {
    when: u64,
    task: Arc<T>,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.when == other.when
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest deadline on top.
        other.when.cmp(&self.when)
    }
}

/// The deadline heap of one worker: entries are pushed lazily (arming a timeout is usually two
/// plain stores), looked at when they come due, and garbage is swept out by compaction.
///
/// # Protocol
/// Each fiber has two words, `deadline` (`d`) and `timer_queued` (`q`):
/// - `d` is the fiber's current timeout, 0 for none. [`arm`](Self::arm) sets it, the fiber
///   clears it when it runs again (`fiber::park_end`), [`fire`](Self::fire) clears it when it
///   expires the fiber, [`cancel`](Self::cancel) when the fiber is finished.
/// - `q` names the fiber's *queued entry*: the entry due at tick `q`. Every other entry of the
///   fiber (`when != q`) is *stale*: it was superseded by an earlier one, or the fiber was
///   cancelled, and it is dropped, unlooked-at, when it comes due or is compacted.
///
/// # Invariant
/// - If `q != 0`, the heap holds an entry of the fiber due at `q`.
/// - If `d != 0`, then `0 < q <= d`: the queued entry comes due no later than the deadline,
///   and when it does, `fire` expires the fiber or re-queues the entry for `d`.
///
/// # Garbage
/// An entry is garbage if it is stale, or its fiber's `d` is 0 (woken early, or finished): it
/// can wake nothing, and it keeps its fiber's task alive. `garbage` counts such entries as they
/// are made — superseded by `arm`, or left by a finished fiber through `cancel` — and is never
/// decremented, so it is an upper bound on the counted ones still queued. Garbage of a fiber
/// that was woken early and is still alive is not counted: it is at most one entry per such
/// fiber, is counted once the fiber finishes, and keeps alive only a task that is alive anyway.
///
/// When the count exceeds both [`COMPACT_FLOOR`] and half the heap, `fire` rebuilds the heap
/// without garbage ([`BinaryHeap::retain`], O(n)), paid for by the more than n/2 counted
/// events since the last rebuild: amortised O(1) each. So a finished fiber's task is released
/// at the latest once about as many fibers again have finished or been re-armed, not at its
/// deadline, and the heap holds at most about twice the entries that can still wake a fiber
/// plus one per live fiber woken early. `fire` runs on every turn of the worker's loop, so
/// compaction is never far behind the count.
pub(crate) struct TimerHeap<T: TimerTask> {
    heap: BinaryHeap<Entry<T>>,
    /// Entries made garbage since the last compaction (an upper bound, see above).
    garbage: usize,
    /// Compactions so far, for the tests.
    #[cfg(test)]
    compactions: usize,
}

impl<T: TimerTask> Default for TimerHeap<T> {
    fn default() -> Self {
        TimerHeap {
            heap: BinaryHeap::new(),
            garbage: 0,
            #[cfg(test)]
            compactions: 0,
        }
    }
}

/// Marks the branch that calls it as rarely taken (`std::hint::cold_path`, stable only since
/// Rust 1.95, does the same): its code goes away from the hot path.
#[cold]
#[inline]
fn cold_path() {}

impl<T: TimerTask> TimerHeap<T> {
    /// Arms `task`'s timeout for tick `when` (non-zero). The caller is the task itself, on its
    /// home worker.
    ///
    /// No allocation (beyond the heap's amortised growth) and no syscall; when the fiber's
    /// queued entry is due at or before `when`, just a store. Never drops an entry (the caller
    /// is a running fiber, and dropping a task may run arbitrary code).
    #[inline(always)]
    pub(crate) fn arm(&mut self, task: &T, when: u64) {
        task.deadline().store(when, Relaxed);
        let queued = task.timer_queued().load(Relaxed);
        if queued == 0 || queued > when {
            // Once per fiber and timeout period: rare next to a keep-alive connection's parks.
            cold_path();
            // An entry queued for later is superseded by this one: it is garbage now.
            self.garbage += usize::from(queued != 0);
            task.timer_queued().store(when, Relaxed);
            self.heap.push(Entry {
                when,
                task: task.to_arc(),
            });
        }
    }

    /// `task` will not park again (it finished, or will never run): disarms its timeout and
    /// makes its queued entry stale, to be released by the next compaction.
    ///
    /// O(1), and drops nothing, so it may be called while other state is borrowed.
    pub(crate) fn cancel(&mut self, task: &T) {
        task.deadline().store(0, Relaxed);
        if task.timer_queued().load(Relaxed) != 0 {
            task.timer_queued().store(0, Relaxed);
            self.garbage += 1;
        }
    }

    /// The tick of the earliest queued entry (possibly garbage: then `fire` just drops it).
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.when)
    }

    /// Expires every fiber whose deadline has passed at tick `now`, then compacts the heap if
    /// enough of it is garbage.
    ///
    /// Drops entries, and so maybe the last reference to a finished task (and the outcome of a
    /// detached fiber): call it where arbitrary code may run, not from a fiber.
    pub(crate) fn fire(&mut self, now: u64) {
        while let Some(top) = self.heap.peek() {
            if top.when > now {
                break;
            }
            let Some(Entry { when, task }) = self.heap.pop() else {
                break;
            };
            if task.timer_queued().load(Relaxed) != when {
                continue; // stale
            }
            task.timer_queued().store(0, Relaxed);
            let deadline = task.deadline().load(Relaxed);
            if deadline == 0 {
                continue;
            }
            if deadline <= now {
                task.deadline().store(0, Relaxed);
                task.expire();
            } else {
                task.timer_queued().store(deadline, Relaxed);
                self.heap.push(Entry {
                    when: deadline,
                    task,
                });
            }
        }
        if self.garbage > COMPACT_FLOOR && self.garbage > self.heap.len() / 2 {
            self.compact();
        }
    }

    /// Rebuilds the heap without garbage: stale entries, and queued entries of fibers without
    /// a deadline (whose `q` goes back to 0, so their next `arm` queues a new entry). Keeps the
    /// invariant: a fiber with `d != 0` keeps its queued entry.
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        self.heap.retain(|e| {
            let queued = e.task.timer_queued();
            if queued.load(Relaxed) != e.when {
                return false;
            }
            if e.task.deadline().load(Relaxed) == 0 {
                queued.store(0, Relaxed);
                return false;
            }
            true
        });
        self.garbage = 0;
        #[cfg(test)]
        {
            self.compactions += 1;
        }
        let (len, cap) = (self.heap.len(), self.heap.capacity());
        if cap >= SHRINK_FLOOR && len <= cap / 4 {
            self.heap.shrink_to((len * 2).max(SHRINK_FLOOR / 2));
        }
    }

    /// Drops every entry (at shutdown).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.garbage = 0;
    }
}

#[cfg(test)]
mod tests;
