//! The deadline heap of one worker, as a plain data structure: no clock (time is the `now` tick
//! the caller passes), no runtime, no context switch, so its tests run under Miri.
//!
//! It is generic over [`TimerTask`], what it needs of a fiber: the fiber's two timer words and
//! what to do when its deadline passes. The runtime's one implementation is for
//! [`Task`](crate::fiber::Task) (in `timer.rs`); the tests use a mock.

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
/// plain stores) and looked at when they come due.
///
/// # Protocol
/// Each fiber has two words, `deadline` (`d`) and `timer_queued` (`q`):
/// - `d` is the fiber's current timeout, 0 for none. [`arm`](Self::arm) sets it, the fiber
///   clears it when it runs again (`fiber::park_end`), [`fire`](Self::fire) clears it when it
///   expires the fiber.
/// - `q` names the fiber's *queued entry*: the entry due at tick `q`. Every other entry of the
///   fiber (`when != q`) is *stale*: it was superseded by an earlier one, and it is dropped,
///   unlooked-at, when it comes due.
///
/// # Invariant
/// - If `q != 0`, the heap holds an entry of the fiber due at `q`.
/// - If `d != 0`, then `0 < q <= d`: the queued entry comes due no later than the deadline,
///   and when it does, `fire` expires the fiber or re-queues the entry for `d`.
pub(crate) struct TimerHeap<T: TimerTask> {
    heap: BinaryHeap<Entry<T>>,
}

impl<T: TimerTask> Default for TimerHeap<T> {
    fn default() -> Self {
        TimerHeap {
            heap: BinaryHeap::new(),
        }
    }
}

impl<T: TimerTask> TimerHeap<T> {
    /// Arms `task`'s timeout for tick `when` (non-zero). The caller is the task itself, on its
    /// home worker.
    ///
    /// No allocation (beyond the heap's amortised growth) and no syscall; when the fiber's
    /// queued entry is due at or before `when`, just a store.
    #[inline(always)]
    pub(crate) fn arm(&mut self, task: &T, when: u64) {
        task.deadline().store(when, Relaxed);
        let queued = task.timer_queued().load(Relaxed);
        if queued == 0 || queued > when {
            task.timer_queued().store(when, Relaxed);
            self.heap.push(Entry {
                when,
                task: task.to_arc(),
            });
        }
    }

    /// The tick of the earliest queued entry.
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.when)
    }

    /// Expires every fiber whose deadline has passed at tick `now`.
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
    }

    /// Drops every entry (at shutdown).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }
}

#[cfg(test)]
mod tests {
    //! Pure tests: ticks are plain numbers, tasks are mocks. They run under Miri.

    use super::{TimerHeap, TimerTask};
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::atomic::{AtomicU64, AtomicUsize};
    use std::sync::{Arc, Weak};

    /// A fiber as the heap sees it.
    struct Mock {
        deadline: AtomicU64,
        queued: AtomicU64,
        /// Times `expire` was called.
        expired: AtomicUsize,
        me: Weak<Mock>,
    }

    impl Mock {
        fn new() -> Arc<Mock> {
            Arc::new_cyclic(|me| Mock {
                deadline: AtomicU64::new(0),
                queued: AtomicU64::new(0),
                expired: AtomicUsize::new(0),
                me: me.clone(),
            })
        }

        fn expired(&self) -> usize {
            self.expired.load(Relaxed)
        }

        /// What `fiber::park_end` does when the fiber runs again (woken early or not).
        fn wake_early(&self) {
            self.deadline.store(0, Relaxed);
        }
    }

    impl TimerTask for Mock {
        fn deadline(&self) -> &AtomicU64 {
            &self.deadline
        }
        fn timer_queued(&self) -> &AtomicU64 {
            &self.queued
        }
        fn to_arc(&self) -> Arc<Self> {
            self.me.upgrade().expect("a mock is alive while armed")
        }
        fn expire(&self) {
            self.expired.fetch_add(1, Relaxed);
        }
    }

    /// Entries of `task` in the heap.
    fn entries_of(h: &TimerHeap<Mock>, task: &Arc<Mock>) -> Vec<u64> {
        let mut whens: Vec<u64> = h
            .heap
            .iter()
            .filter(|e| Arc::ptr_eq(&e.task, task))
            .map(|e| e.when)
            .collect();
        whens.sort_unstable();
        whens
    }

    /// The invariant of [`TimerHeap`] for each of `live`.
    fn check_invariant(h: &TimerHeap<Mock>, live: &[Arc<Mock>]) {
        for t in live {
            let d = t.deadline.load(Relaxed);
            let q = t.queued.load(Relaxed);
            if q != 0 {
                assert!(entries_of(h, t).contains(&q), "no entry at q = {q}");
            }
            if d != 0 {
                assert!(q != 0 && q <= d, "d = {d}, q = {q}");
            }
        }
    }

    #[test]
    fn a_timer_fires_on_its_tick_and_not_before() {
        let mut h = TimerHeap::default();
        let t = Mock::new();
        h.arm(&*t, 10);
        assert_eq!(h.next_due(), Some(10));
        h.fire(9);
        assert_eq!(t.expired(), 0);
        h.fire(10);
        assert_eq!(t.expired(), 1);
        assert_eq!(t.deadline.load(Relaxed), 0);
        assert_eq!(t.queued.load(Relaxed), 0);
        assert_eq!(h.next_due(), None);
        assert_eq!(Arc::strong_count(&t), 1, "the heap let go of the task");
    }

    #[test]
    fn re_arming_earlier_fires_at_the_earlier_tick_once() {
        let mut h = TimerHeap::default();
        let t = Mock::new();
        h.arm(&*t, 100);
        h.arm(&*t, 50);
        assert_eq!(entries_of(&h, &t), vec![50, 100]);
        check_invariant(&h, std::slice::from_ref(&t));
        h.fire(49);
        assert_eq!(t.expired(), 0);
        h.fire(50);
        assert_eq!(t.expired(), 1);
        // The superseded entry is dropped when it comes due, and wakes nothing.
        t.wake_early();
        h.fire(100);
        assert_eq!(t.expired(), 1);
        assert_eq!(h.next_due(), None);
    }

    #[test]
    fn re_arming_later_pushes_nothing_and_fires_at_the_later_tick() {
        let mut h = TimerHeap::default();
        let t = Mock::new();
        h.arm(&*t, 50);
        t.wake_early();
        h.arm(&*t, 100); // the fiber parks again with a later deadline
        assert_eq!(entries_of(&h, &t), vec![50]);
        check_invariant(&h, std::slice::from_ref(&t));
        h.fire(50); // the entry comes due and is queued again for the deadline
        assert_eq!(t.expired(), 0);
        assert_eq!(entries_of(&h, &t), vec![100]);
        check_invariant(&h, std::slice::from_ref(&t));
        h.fire(99);
        assert_eq!(t.expired(), 0);
        h.fire(100);
        assert_eq!(t.expired(), 1);
    }

    #[test]
    fn a_timer_re_armed_after_a_superseded_entry_fires_once_at_its_own_tick() {
        let mut h = TimerHeap::default();
        let t = Mock::new();
        h.arm(&*t, 100);
        h.arm(&*t, 50);
        h.fire(50);
        assert_eq!(t.expired(), 1);
        t.wake_early();
        h.arm(&*t, 150); // the stale entry at 100 must not touch this one
        h.fire(100);
        assert_eq!(t.expired(), 1);
        assert_eq!(entries_of(&h, &t), vec![150]);
        check_invariant(&h, std::slice::from_ref(&t));
        h.fire(150);
        assert_eq!(t.expired(), 2);
        assert_eq!(h.next_due(), None);
    }
}
