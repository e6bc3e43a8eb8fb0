//! Pure tests: ticks are plain numbers, tasks are mocks. They run under Miri.

use super::{TimerHeap, TimerTask, COMPACT_FLOOR, SHRINK_FLOOR};
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

/// Entries that are the queued entries of fibers with a deadline: the ones that can still
/// wake something.
fn useful(h: &TimerHeap<Mock>) -> usize {
    h.heap
        .iter()
        .filter(|e| e.task.queued.load(Relaxed) == e.when && e.task.deadline.load(Relaxed) != 0)
        .count()
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

#[test]
fn a_cancelled_timer_never_fires() {
    let mut h = TimerHeap::default();
    let t = Mock::new();
    h.arm(&*t, 10);
    h.cancel(&*t);
    assert_eq!(t.deadline.load(Relaxed), 0);
    h.fire(10);
    assert_eq!(t.expired(), 0);
    assert_eq!(h.next_due(), None);
}

#[test]
fn finished_tasks_are_released_long_before_their_deadlines() {
    let mut h = TimerHeap::default();
    let mut released = Vec::new();
    // Batches of fibers that park until tick 60,000, are woken at once and finish, while
    // time stands at tick 1: nothing comes due.
    let (batches, batch) = if cfg!(miri) { (8, 50) } else { (200, 1_000) };
    for _ in 0..batches {
        let tasks: Vec<Arc<Mock>> = (0..batch).map(|_| Mock::new()).collect();
        for t in &tasks {
            h.arm(&**t, 60_000);
        }
        for t in &tasks {
            t.wake_early();
            h.cancel(&**t);
        }
        released.extend(tasks.iter().map(Arc::downgrade));
        drop(tasks);
        h.fire(1);
        // Every entry is counted garbage: past the floor, the heap is compacted to nothing.
        assert!(h.heap.len() <= COMPACT_FLOOR, "{}", h.heap.len());
        let alive = released.iter().filter(|w| w.strong_count() > 0).count();
        assert!(alive <= COMPACT_FLOOR, "{alive} finished tasks still alive");
    }
    assert!(
        h.compactions >= batches / 2,
        "{} compactions",
        h.compactions
    );
    h.clear();
    assert!(released.iter().all(|w| w.strong_count() == 0));
}

#[test]
fn compaction_keeps_live_timers_and_they_fire_on_time() {
    let mut h = TimerHeap::default();
    let (n_live, n_dead) = if cfg!(miri) { (20, 40) } else { (100, 100) };
    // Live fibers with deadlines at ticks 1000, 1010, ... among many that finish early.
    let live: Vec<Arc<Mock>> = (0..n_live).map(|_| Mock::new()).collect();
    for (i, t) in live.iter().enumerate() {
        h.arm(&**t, 1000 + 10 * i as u64);
    }
    // A live fiber woken early, parked without a timeout: its entry is garbage.
    let idle = Mock::new();
    h.arm(&*idle, 500);
    idle.wake_early();
    for round in 0..20u64 {
        let dead: Vec<Arc<Mock>> = (0..n_dead).map(|_| Mock::new()).collect();
        for t in &dead {
            h.arm(&**t, 2000 + round);
            t.wake_early();
            h.cancel(&**t);
        }
        h.fire(round + 1);
        let mut all = live.clone();
        all.push(idle.clone());
        check_invariant(&h, &all);
        assert!(h.heap.len() <= 2 * useful(&h) + COMPACT_FLOOR + n_dead);
    }
    assert!(h.compactions >= 2, "{} compactions", h.compactions);
    // Compaction dropped the idle fiber's entry and reset its queued tick.
    assert_eq!(idle.queued.load(Relaxed), 0);
    assert!(entries_of(&h, &idle).is_empty());
    assert_eq!(h.heap.len(), useful(&h));
    assert_eq!(useful(&h), live.len());
    // Its next timeout queues a new entry.
    h.arm(&*idle, 1005);
    assert_eq!(entries_of(&h, &idle), vec![1005]);
    // Every tick, or (under Miri, which is slow) the tick before each deadline and its own.
    let dues = (0..n_live as u64).map(|i| 1000 + 10 * i).chain([1005]);
    let ticks: Vec<u64> = if cfg!(miri) {
        let mut t: Vec<u64> = dues.flat_map(|d| [d - 1, d]).collect();
        t.sort_unstable();
        t.dedup();
        t.push(2100);
        t
    } else {
        (21..=2100).collect()
    };
    for now in ticks {
        h.fire(now);
        for (i, t) in live.iter().enumerate() {
            let due = 1000 + 10 * i as u64;
            assert_eq!(t.expired(), usize::from(now >= due), "task {i} at {now}");
        }
        assert_eq!(idle.expired(), usize::from(now >= 1005));
    }
    assert_eq!(h.next_due(), None);
}

#[test]
fn compaction_gives_back_the_capacity_of_a_mostly_empty_heap() {
    let mut h = TimerHeap::default();
    // As if a burst of timers had come and gone.
    h.heap.reserve(4 * SHRINK_FLOOR);
    let tasks: Vec<Arc<Mock>> = (0..2 * COMPACT_FLOOR).map(|_| Mock::new()).collect();
    for t in &tasks {
        h.arm(&**t, 10);
    }
    for t in &tasks[1..] {
        h.cancel(&**t);
    }
    h.fire(1);
    assert_eq!(h.heap.len(), 1);
    let cap = h.heap.capacity();
    assert!((SHRINK_FLOOR / 2..4 * SHRINK_FLOOR).contains(&cap), "{cap}");
    // A heap below the floor keeps its capacity.
    h.heap.shrink_to(SHRINK_FLOOR - 1);
    let cap = h.heap.capacity();
    for t in &tasks[1..] {
        h.arm(&**t, 10);
        h.cancel(&**t);
    }
    h.fire(1);
    assert_eq!(h.heap.len(), 1);
    assert_eq!(h.heap.capacity(), cap);
    h.fire(10);
    assert_eq!(tasks[0].expired(), 1);
}

/// A small deterministic generator (xorshift64*), so the model test needs no crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % n
    }
}

/// Random arms (earlier and later), early wake-ups, finishes and ticks against a model:
/// every fiber expires exactly on the first tick at or after its deadline unless it was
/// woken before, the invariant always holds, finished fibers are released and garbage
/// stays bounded.
#[test]
fn random_operations_match_the_model() {
    let mut h = TimerHeap::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (steps, n_fibers) = if cfg!(miri) {
        (1_500, 16)
    } else {
        (200_000, 64)
    };
    let mut now = 1u64;
    // Each fiber with the deadline the model expects (0: none) and its expiries so far.
    let mut fibers: Vec<(Arc<Mock>, u64, usize)> =
        (0..n_fibers).map(|_| (Mock::new(), 0, 0)).collect();
    let mut finished: Vec<Weak<Mock>> = Vec::new();
    for _ in 0..steps {
        let i = rng.below(fibers.len() as u64) as usize;
        match rng.below(10) {
            // Park with a timeout (re-arming earlier or later than the queued entry).
            0..=3 => {
                let when = now + 1 + rng.below(200);
                h.arm(&*fibers[i].0, when);
                fibers[i].1 = when;
            }
            // Woken early: runs again, without a deadline.
            4..=5 => {
                fibers[i].0.wake_early();
                fibers[i].1 = 0;
            }
            // Finishes; a new fiber takes its place.
            6 => {
                let (t, _, _) = std::mem::replace(&mut fibers[i], (Mock::new(), 0, 0));
                h.cancel(&*t);
                finished.push(Arc::downgrade(&t));
            }
            // Time passes.
            _ => {
                now += 1 + rng.below(3);
                h.fire(now);
                for (t, deadline, expiries) in &mut fibers {
                    if *deadline != 0 && *deadline <= now {
                        *deadline = 0;
                        *expiries += 1;
                    }
                    assert_eq!(t.expired(), *expiries);
                    assert_eq!(t.deadline.load(Relaxed), *deadline);
                }
                // Uncounted garbage: at most an entry per fiber woken early.
                let bound = 2 * useful(&h) + COMPACT_FLOOR + 2 * fibers.len();
                assert!(h.heap.len() <= bound, "{} > {bound}", h.heap.len());
            }
        }
        if rng.below(64) == 0 {
            let live: Vec<Arc<Mock>> = fibers.iter().map(|f| f.0.clone()).collect();
            check_invariant(&h, &live);
        }
    }
    assert!(h.compactions >= 2, "{} compactions", h.compactions);
    // Finished fibers are held only by garbage the compaction threshold allows.
    let alive = finished.iter().filter(|w| w.strong_count() > 0).count();
    assert!(
        alive <= 2 * (COMPACT_FLOOR + fibers.len()),
        "{alive} finished alive"
    );
    h.clear();
    assert!(finished.iter().all(|w| w.strong_count() == 0));
}
