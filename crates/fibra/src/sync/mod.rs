//! Fiber-aware synchronisation: [`Mutex`], [`mpsc`] channels, [`oneshot`], [`Notify`] and
//! [`WaitGroup`].
//!
//! Every primitive works between fibers on any workers and plain OS threads alike: a fiber
//! that waits parks (its worker keeps running other fibers), a thread that waits blocks.
//! Wake-ups for a fiber on another worker go through that worker's inbox.

pub mod mpsc;
mod mutex;
mod notify;
pub mod oneshot;
mod wait_list;
mod waitgroup;

pub use mutex::{Mutex, MutexGuard};
pub use notify::Notify;
pub use waitgroup::WaitGroup;

/// Locks a `std` mutex, ignoring poisoning: the state guarded inside fibra's primitives is
/// updated in single steps that a panic cannot leave half-done.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
