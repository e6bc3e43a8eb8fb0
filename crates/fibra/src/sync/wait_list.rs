//! `WaitList`: the queue of waiters behind a lock or a channel, with an identity per entry.
//!
//! A waiter that parks may wake spuriously (std's `Thread::unpark` can wake a waiting thread
//! at any time, and a fiber's park token can carry a stale wake-up), and it may leave its wait
//! by unwinding (a cancelled fiber). A plain queue of waiters then either gets a duplicate entry
//! (the waiter queues itself again on its next turn) or keeps a stale one (the waiter is gone);
//! a release that wakes that entry wakes nobody, and a real waiter behind it sleeps forever.
//!
//! So each entry has an id, given by [`WaitList::push`]. The protocol every primitive follows,
//! all under the primitive's own lock:
//! - **register**: before parking, a waiter with no entry pushes one and keeps its id; a waiter
//!   whose entry is still queued ([`WaitList::contains`]) was woken spuriously and does not push
//!   again;
//! - **wake**: the releasing side pops entries ([`WaitList::pop_front`], [`WaitList::drain`])
//!   and wakes them; a popped entry is how a waiter knows it was woken;
//! - **leave**: a waiter leaving the primitive, by returning or by unwinding, removes its entry
//!   if it is still queued ([`WaitList::remove`]). One that was popped but leaves without taking
//!   what it was woken for (it unwinds, or times out at the same moment) passes the wake-up on
//!   to the next entry, so it is never lost.
//!
//! Ids grow with each push, so the queue stays sorted by id and a look-up is a binary search.

use super::lock;
use crate::sched::Waiter;
use std::collections::VecDeque;
use std::sync::Mutex;

/// A FIFO of waiters `W`, each entry with an id unique within the list.
#[derive(Debug)]
pub(crate) struct WaitList<W> {
    entries: VecDeque<(u64, W)>,
    next_id: u64,
}

impl<W> Default for WaitList<W> {
    fn default() -> Self {
        WaitList {
            entries: VecDeque::new(),
            next_id: 0,
        }
    }
}

impl<W> WaitList<W> {
    /// Queues `waiter` at the back and returns its entry's id.
    pub(crate) fn push(&mut self, waiter: W) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_back((id, waiter));
        id
    }

    /// Whether entry `id` is still queued (not popped or removed).
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.position(id).is_some()
    }

    /// Removes entry `id`; false if it was not queued any more.
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        match self.position(id) {
            Some(i) => {
                self.entries.remove(i);
                true
            }
            None => false,
        }
    }

    /// Takes the oldest entry.
    pub(crate) fn pop_front(&mut self) -> Option<W> {
        self.entries.pop_front().map(|(_, w)| w)
    }

    /// Takes every entry, oldest first.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = W> {
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(|(_, w)| w)
    }

    /// The number of queued entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    fn position(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |&(i, _)| i).ok()
    }
}

/// A waiter's entry in a [`WaitList`] kept inside a primitive's state `S` (behind a std
/// mutex; `list` finds the list in it), following the protocol in the module doc. Dropping it
/// while registered — the waiter unwound out of its wait — removes the entry, or passes a
/// wake-up it received on to the next waiter.
pub(crate) struct Place<'a, S, F: Fn(&mut S) -> &mut WaitList<Waiter>> {
    state: &'a Mutex<S>,
    list: F,
    id: Option<u64>,
}

impl<'a, S, F: Fn(&mut S) -> &mut WaitList<Waiter>> Place<'a, S, F> {
    /// No entry yet, for the list that `list` finds in `state`.
    pub(crate) fn new(state: &'a Mutex<S>, list: F) -> Self {
        Place {
            state,
            list,
            id: None,
        }
    }

    /// Under the lock, before parking: queues the caller unless its entry is still queued (the
    /// last wake-up was spurious).
    pub(crate) fn register(&mut self, st: &mut S) {
        let list = (self.list)(st);
        match self.id {
            Some(id) if list.contains(id) => {}
            _ => self.id = Some(list.push(Waiter::current())),
        }
    }

    /// Under the lock: whether the caller's entry was popped (it was woken) since it
    /// registered. False before any registration.
    pub(crate) fn was_woken(&self, st: &mut S) -> bool {
        self.id.is_some_and(|id| !(self.list)(st).contains(id))
    }

    /// Under the lock, leaving with what it waited for: removes the entry if still queued.
    pub(crate) fn leave_served(&mut self, st: &mut S) {
        if let Some(id) = self.id.take() {
            (self.list)(st).remove(id);
        }
    }

    /// Under the lock, leaving without what it waited for: removes the entry, or, if it was
    /// popped, returns the next waiter, to be woken (after unlocking) in its place.
    #[must_use = "a wake-up passed on must be delivered"]
    pub(crate) fn leave_unserved(&mut self, st: &mut S) -> Option<Waiter> {
        let id = self.id.take()?;
        let list = (self.list)(st);
        if list.remove(id) {
            None
        } else {
            list.pop_front()
        }
    }
}

impl<S, F: Fn(&mut S) -> &mut WaitList<Waiter>> Drop for Place<'_, S, F> {
    fn drop(&mut self) {
        if self.id.is_none() {
            return;
        }
        let next = self.leave_unserved(&mut lock(self.state));
        if let Some(w) = next {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WaitList;

    #[test]
    fn entries_leave_in_order_and_ids_stay_unique() {
        let mut l = WaitList::default();
        let a = l.push('a');
        let b = l.push('b');
        let c = l.push('c');
        assert!(a != b && b != c && a != c);
        assert_eq!(l.pop_front(), Some('a'));
        assert!(!l.contains(a));
        assert!(l.contains(b) && l.contains(c));
        assert_eq!(l.drain().collect::<String>(), "bc");
        assert_eq!(l.len(), 0);
        assert!(!l.contains(b));
        assert_ne!(l.push('d'), c, "an id is never given twice");
    }

    #[test]
    fn a_waiter_removes_only_its_own_entry() {
        let mut l = WaitList::default();
        let ids: Vec<u64> = (0..10).map(|i| l.push(i)).collect();
        assert!(l.remove(ids[4]));
        assert!(!l.remove(ids[4]), "removed twice");
        assert!(l.remove(ids[9]) && l.remove(ids[0]));
        assert_eq!(l.len(), 7);
        let rest: Vec<i32> = std::iter::from_fn(|| l.pop_front()).collect();
        assert_eq!(rest, [1, 2, 3, 5, 6, 7, 8]);
    }

    #[test]
    fn a_spurious_wake_up_does_not_queue_a_duplicate() {
        // The protocol of `Mutex::lock`: push once, and on a later turn push again only if the
        // entry was popped (a real wake-up that lost the race for the lock).
        let mut l = WaitList::default();
        let mut mine = None;
        for _turn in 0..5 {
            match mine {
                Some(id) if l.contains(id) => {}
                _ => mine = Some(l.push("me")),
            }
        }
        let other = l.push("other");
        assert_eq!(l.len(), 2);
        assert_eq!(l.pop_front(), Some("me"));
        assert_eq!(l.pop_front(), Some("other"));
        assert!(!l.contains(other));
    }
}
