//! The waiters of one socket, per direction: an inline slot for the first (the common case),
//! a boxed list for the others (two acceptors on one listener, readers in two fibers).
//!
//! A pure data structure, generic over the entry (an `Arc<Task>` in the reactor, a plain
//! number in the tests, which run under Miri). The reactor's protocol around it is in
//! [`super::IoState`]'s doc.

use super::{Dir, READABLE, WRITABLE};

/// What a waiter entry is known by: two entries with the same identity are the same waiter.
pub(crate) trait Identity {
    /// The waiter's identity (for a task: its address).
    fn identity(&self) -> usize;
}

/// A waiter beyond the first of its direction.
type Extra<E> = (Dir, E);

/// The waiters of each direction of one socket.
pub(crate) struct Waiters<E> {
    reader: Option<E>,
    writer: Option<E>,
    /// Waiters beyond the first of each direction; boxed, so the common case of one waiter
    /// keeps the socket's state in one cache line.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Extra<E>>>>,
}

impl<E> Default for Waiters<E> {
    fn default() -> Self {
        Waiters {
            reader: None,
            writer: None,
            more: None,
        }
    }
}

impl<E: Identity> Waiters<E> {
    /// The inline slot of direction `dir`.
    fn slot(&mut self, dir: Dir) -> &mut Option<E> {
        match dir {
            Dir::Read => &mut self.reader,
            Dir::Write => &mut self.writer,
        }
    }

    /// Registers the waiter `identity` for `dir` (its entry made by `entry`), unless it is
    /// registered already.
    #[inline(always)]
    pub(crate) fn add(&mut self, dir: Dir, identity: usize, entry: impl FnOnce() -> E) {
        let slot = self.slot(dir);
        match slot {
            None => *slot = Some(entry()),
            Some(e) if e.identity() == identity => {}
            Some(_) => self.add_more(dir, identity, entry),
        }
    }

    #[cold]
    fn add_more(&mut self, dir: Dir, identity: usize, entry: impl FnOnce() -> E) {
        let more = self.more.get_or_insert_with(Box::default);
        if !more
            .iter()
            .any(|(d, e)| *d == dir && e.identity() == identity)
        {
            more.push((dir, entry()));
        }
    }

    /// Removes waiter `identity`'s registration for `dir`, if any.
    pub(crate) fn remove(&mut self, dir: Dir, identity: usize) {
        let slot = self.slot(dir);
        if slot.as_ref().is_some_and(|e| e.identity() == identity) {
            *slot = None;
        }
        if let Some(more) = &mut self.more {
            more.retain(|(d, e)| !(*d == dir && e.identity() == identity));
        }
    }

    /// Removes every waiter of the directions in `bits` (`READABLE`, `WRITABLE`): the inline
    /// ones, and the others if there are any (`None` when there are none, so the common case
    /// has no vector to drop).
    #[inline(always)]
    pub(crate) fn take(&mut self, bits: usize) -> (Option<E>, Option<E>, Option<Vec<E>>) {
        let reader = if bits & READABLE != 0 {
            self.reader.take()
        } else {
            None
        };
        let writer = if bits & WRITABLE != 0 {
            self.writer.take()
        } else {
            None
        };
        let more = if self.more.is_some() {
            self.take_more(bits)
        } else {
            None
        };
        (reader, writer, more)
    }

    #[cold]
    fn take_more(&mut self, bits: usize) -> Option<Vec<E>> {
        let more = self.more.as_mut()?;
        let mut woken = Vec::new();
        let mut i = 0;
        while i < more.len() {
            if bits & more[i].0.bit() != 0 {
                woken.push(more.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
        Some(woken)
    }
}

#[cfg(test)]
mod tests {
    use super::{Dir, Identity, Waiters, READABLE, WRITABLE};

    impl Identity for u32 {
        fn identity(&self) -> usize {
            *self as usize
        }
    }

    fn take(w: &mut Waiters<u32>, bits: usize) -> Vec<u32> {
        let (r, wr, more) = w.take(bits);
        let mut all: Vec<u32> = r
            .into_iter()
            .chain(wr)
            .chain(more.into_iter().flatten())
            .collect();
        all.sort_unstable();
        all
    }

    #[test]
    fn every_waiter_of_a_direction_is_woken_once() {
        let mut w = Waiters::default();
        for id in [1u32, 2, 3, 2, 1] {
            w.add(Dir::Read, id as usize, || id); // a second add of one waiter is a no-op
        }
        w.add(Dir::Write, 9, || 9);
        w.add(Dir::Write, 1, || 1); // one fiber may wait for both directions
        assert_eq!(take(&mut w, READABLE), [1, 2, 3]);
        assert_eq!(take(&mut w, READABLE), [] as [u32; 0]);
        assert_eq!(take(&mut w, READABLE | WRITABLE), [1, 9]);
    }

    #[test]
    fn a_timed_out_waiter_removes_only_itself() {
        let mut w = Waiters::default();
        for id in 1u32..=4 {
            w.add(Dir::Write, id as usize, || id);
        }
        w.add(Dir::Read, 2, || 2);
        w.remove(Dir::Write, 1); // the inline one
        w.remove(Dir::Write, 3); // one in the list
        w.remove(Dir::Write, 7); // not there
        assert_eq!(take(&mut w, WRITABLE), [2, 4]);
        assert_eq!(take(&mut w, READABLE), [2]);
        // The slot freed by a removal takes the next waiter.
        w.add(Dir::Read, 5, || 5);
        assert_eq!(take(&mut w, READABLE), [5]);
    }
}
