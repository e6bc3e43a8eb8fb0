//! [`Timers`]: the driver's deadlines, one per connection (quinn-proto's `poll_timeout`), in a
//! min-heap with lazy removal.
//!
//! A connection's deadline moves with nearly every packet, so rather than find and fix its
//! heap entry the driver pushes a new one and leaves the old in place; an entry counts only
//! if it still equals the connection's current deadline (`ConnState::timeout`), and the heap
//! is rebuilt once stale entries outnumber live ones by far.
//!
//! # Precision
//! quinn-proto's deadlines are precise `Instant`s. The driver waits for the earliest with
//! `UdpSocket::readable_or_notified_until`, which fibra keeps on its worker's millisecond
//! ticks, rounded up: the driver wakes in the first tick after the deadline, never before,
//! and then calls `handle_timeout` with `Instant::now()` (the precise clock, not fibra's
//! cached one, which may lag and make a due timer look early). Up to about a millisecond late
//! is within what QUIC expects: RFC 9002's timer granularity (kGranularity) is 1 ms, and
//! quinn-proto adds the same granularity to its loss timers. Pacing deadlines, which can be
//! finer, come due up to a millisecond late too; the pacer then releases the packets the
//! elapsed time earned, a slightly larger burst, never a faster average rate.

use crate::state::State;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// Connection deadlines, earliest first (see the module doc).
#[derive(Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
}

impl Timers {
    /// Records connection `id`'s deadline after quinn-proto may have moved it.
    pub(crate) fn update(&mut self, st: &mut State, id: u64) {
        let Some(c) = st.conns.get_mut(&id) else {
            return;
        };
        let at = c.conn.poll_timeout();
        if at == c.timeout {
            return;
        }
        c.timeout = at;
        if let Some(at) = at {
            self.heap.push(Reverse((at, id)));
        }
        if self.heap.len() > 64 + 4 * st.conns.len() {
            self.rebuild(st);
        }
    }

    /// Takes the connections whose deadline is `now` or earlier, appending their ids to `due`.
    pub(crate) fn take_due(&mut self, st: &mut State, now: Instant, due: &mut Vec<u64>) {
        while let Some(&Reverse((at, id))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            if let Some(c) = st.conns.get_mut(&id) {
                if c.timeout == Some(at) {
                    // Handled now; `update` records whatever comes next.
                    c.timeout = None;
                    due.push(id);
                }
            }
        }
    }

    /// The earliest live deadline, dropping stale entries on the way.
    pub(crate) fn next(&mut self, st: &State) -> Option<Instant> {
        while let Some(&Reverse((at, id))) = self.heap.peek() {
            if st.conns.get(&id).is_some_and(|c| c.timeout == Some(at)) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    fn rebuild(&mut self, st: &State) {
        self.heap = st
            .conns
            .iter()
            .filter_map(|(&id, c)| c.timeout.map(|at| Reverse((at, id))))
            .collect();
    }
}
