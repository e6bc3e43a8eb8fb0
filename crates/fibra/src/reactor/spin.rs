//! The lock around a socket's waiters: a spin lock, released with a plain store.
//!
//! Every keep-alive wake-up takes a socket's waiter lock twice: once when the event hands the
//! waiting fiber over ([`super::IoState::on_event`]), once when the fiber waits again
//! ([`super::IoState::add_waiter`]). `std::sync::Mutex` releases with an atomic swap (it must
//! see whether a thread sleeps on the futex), so each of those costs two locked instructions,
//! and its poison check reads the global panic count. Here a release is a store, and the lock
//! holds nothing to poison: its sections only move entries in and out of [`super::Waiters`]
//! and never run user code. Contention is rare (a socket waited on from two threads at once)
//! and the sections are a few dozen instructions, so a waiter spins, then yields its thread.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Spins before each `yield_now` while the lock is held elsewhere.
const SPINS: u32 = 64;

/// A value behind a spin lock (see the module docs).
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a `SpinGuard`, and at most one guard exists at a
// time (`lock` sets `locked` with an Acquire compare-exchange that only one thread can win,
// the guard's drop clears it with a Release store), so the value moves between threads as
// with a `Mutex`: `T: Send` suffices.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock, spinning (then yielding the thread) while another thread holds it.
    #[inline(always)]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard { lock: self }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        loop {
            for _ in 0..SPINS {
                if !self.locked.load(Relaxed)
                    && self
                        .locked
                        .compare_exchange_weak(false, true, Acquire, Relaxed)
                        .is_ok()
                {
                    return;
                }
                std::hint::spin_loop();
            }
            std::thread::yield_now();
        }
    }
}

/// The lock, held: derefs to the value, releases on drop.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock (see `SpinLock`'s `Sync`), so no other reference to
        // the value exists while it lives.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only use of the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.lock.locked.store(false, Release);
    }
}

#[cfg(test)]
mod tests {
    use super::SpinLock;
    use std::sync::Arc;

    #[test]
    fn threads_taking_turns_lose_no_update() {
        let threads = 4;
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        let lock = Arc::new(SpinLock::new((0u64, 0u64)));
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..rounds {
                        let mut g = lock.lock();
                        // Two plain writes that only a lock keeps equal.
                        let (a, b) = *g;
                        assert_eq!(a, b);
                        *g = (a + 1, b + 1);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*lock.lock(), (threads * rounds, threads * rounds));
    }

    #[test]
    fn a_panic_while_held_releases_the_lock() {
        let lock = SpinLock::new(vec![1]);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut g = lock.lock();
            g.push(2);
            panic!("in the section");
        }));
        assert!(r.is_err());
        assert_eq!(*lock.lock(), vec![1, 2]);
    }
}
