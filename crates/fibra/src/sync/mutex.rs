//! A fiber-aware mutex: a contended `lock` parks the fiber instead of blocking its worker.
//!
//! The data lives in a `std::sync::Mutex` that is only ever `try_lock`ed, so this type needs no
//! `unsafe`: whoever wins `try_lock` holds the lock; losers queue themselves as waiters (under
//! the queue lock, after one more `try_lock`, so a release cannot slip between) and park.
//! Unlike `std`'s, this mutex does not poison: a panic while holding it releases it.
//!
//! # Waiter protocol
//! The queue is a [`WaitList`]: a contended `lock` registers once (a spurious wake-up finds its
//! entry still queued and does not queue a duplicate), `MutexGuard::drop` pops the oldest entry
//! and wakes it, and `lock` leaves its entry on every exit: removed if still queued once it has
//! the lock, and, if it unwinds after being woken, the wake-up goes to the next waiter. In a
//! fiber being cancelled, `lock` still waits: the holder is being unwound too and releases it.

use super::lock;
use super::wait_list::{Place, WaitList};
use crate::sched::{park_until, Waiter};
use std::ops::{Deref, DerefMut};
use std::sync::{self, TryLockError};

/// A mutual-exclusion lock usable from fibers and threads.
///
/// ```
/// use std::sync::Arc;
/// let total = fibra::run(|| {
///     let m = Arc::new(fibra::sync::Mutex::new(0));
///     let hs: Vec<_> = (0..8).map(|_| {
///         let m = m.clone();
///         fibra::spawn(move || for _ in 0..100 { *m.lock() += 1; fibra::yield_now(); })
///     }).collect();
///     hs.into_iter().for_each(|h| h.join().unwrap());
///     let v = *m.lock();
///     v
/// });
/// assert_eq!(total, 800);
/// ```
#[derive(Default)]
pub struct Mutex<T> {
    data: sync::Mutex<T>,
    waiters: sync::Mutex<WaitList<Waiter>>,
}

/// Holds the lock; releases it when dropped.
pub struct MutexGuard<'a, T> {
    mutex: &'a Mutex<T>,
    inner: Option<sync::MutexGuard<'a, T>>,
}

impl<T> Mutex<T> {
    /// A new unlocked mutex.
    pub fn new(value: T) -> Self {
        Mutex {
            data: sync::Mutex::new(value),
            waiters: sync::Mutex::new(WaitList::default()),
        }
    }

    fn try_inner(&self) -> Option<sync::MutexGuard<'_, T>> {
        match self.data.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Acquires the lock, parking the caller while another holds it.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        match self.try_inner() {
            Some(g) => self.guard(g),
            None => self.lock_contended(),
        }
    }

    #[cold]
    fn lock_contended(&self) -> MutexGuard<'_, T> {
        let mut place = Place::new(&self.waiters, |q: &mut WaitList<Waiter>| q);
        loop {
            {
                let mut q = lock(&self.waiters);
                if let Some(g) = self.try_inner() {
                    place.leave_served(&mut q);
                    drop(q);
                    return self.guard(g);
                }
                place.register(&mut q);
            }
            park_until(None);
        }
    }

    /// Acquires the lock if it is free.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.try_inner().map(|g| self.guard(g))
    }

    /// Consumes the mutex, returning the data.
    pub fn into_inner(self) -> T {
        self.data.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn guard<'a>(&'a self, g: sync::MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        MutexGuard {
            mutex: self,
            inner: Some(g),
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.try_lock() {
            Some(g) => f.debug_struct("Mutex").field("data", &*g).finish(),
            None => f.write_str("Mutex { <locked> }"),
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.inner
            .as_deref()
            .expect("guard holds the lock until dropped")
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.inner
            .as_deref_mut()
            .expect("guard holds the lock until dropped")
    }
}

impl<T> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        drop(self.inner.take());
        let next = lock(&self.mutex.waiters).pop_front();
        if let Some(w) = next {
            w.wake();
        }
    }
}
