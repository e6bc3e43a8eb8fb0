//! The queue between an event stream's producer (a fiber of its own) and the connection's
//! fiber that writes the events: bounded in bytes, closed from either end.
//!
//! Not `fibra::sync::mpsc`: the connection's fiber must wake for an event, for the end of
//! the producer, and for the server's shutdown (whose [`Notify`] fibra-http hands out,
//! `BodyWriter::going_away_notify`), and a channel's receiver waits for its messages only.
//! Here the producer wakes the connection's fiber through that same `Notify`.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use fibra::sync::Notify;

/// See the module docs.
pub(super) struct Queue {
    state: Mutex<State>,
    /// Wakes the connection's fiber: an event queued, the producer done (and, shared, the
    /// server's shutdown).
    ready: Arc<Notify>,
    /// Wakes the producer: room in the queue, or the connection gone.
    room: Notify,
    /// Most bytes queued (one event is always taken, however large).
    limit: usize,
}

struct State {
    events: VecDeque<Bytes>,
    bytes: usize,
    /// The producer returned (with this), or unwound (an error saying so).
    finished: Option<io::Result<()>>,
    /// The connection's side has gone (why): sends fail from now on.
    closed: Option<&'static str>,
}

/// What the connection's fiber found ([`Queue::take`]).
pub(super) enum Taken {
    /// Events to write, in order.
    Events(Vec<Bytes>),
    /// The producer is done and everything it sent was taken.
    Finished(io::Result<()>),
    /// Nothing came within the wait.
    Idle,
    /// Woken with nothing to take (the server's shutdown, or a stale wake-up).
    Woken,
}

impl Queue {
    pub(super) fn new(limit: usize, ready: Arc<Notify>) -> Queue {
        Queue {
            state: Mutex::new(State {
                events: VecDeque::new(),
                bytes: 0,
                finished: None,
                closed: None,
            }),
            ready,
            room: Notify::new(),
            limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The producer's side: queues `event`, waiting while the queue is full; `BrokenPipe`
    /// once the connection's side has gone.
    pub(super) fn push(&self, event: Bytes) -> io::Result<()> {
        loop {
            {
                let mut st = self.lock();
                if let Some(why) = st.closed {
                    return Err(io::Error::new(io::ErrorKind::BrokenPipe, why));
                }
                if st.bytes == 0 || st.bytes + event.len() <= self.limit {
                    st.bytes += event.len();
                    st.events.push_back(event);
                    drop(st);
                    self.ready.notify_one();
                    return Ok(());
                }
            }
            // A `notify_one` that comes before this wait is kept as a permit: none is lost.
            self.room.wait();
        }
    }

    /// Whether the connection's side has gone.
    pub(super) fn is_closed(&self) -> bool {
        self.lock().closed.is_some()
    }

    /// The producer's side is done (the first call counts).
    pub(super) fn finish(&self, result: io::Result<()>) {
        {
            let mut st = self.lock();
            if st.finished.is_some() {
                return;
            }
            st.finished = Some(result);
        }
        self.ready.notify_one();
    }

    /// The connection's side: everything queued, else the producer's result once it is done,
    /// else waits (at most `wait`; `None`: until woken).
    pub(super) fn take(&self, wait: Option<Duration>) -> Taken {
        if let Some(taken) = self.take_now() {
            return taken;
        }
        let woken = match wait {
            Some(d) => self.ready.wait_timeout(d),
            None => {
                self.ready.wait();
                true
            }
        };
        match self.take_now() {
            Some(taken) => taken,
            None if woken => Taken::Woken,
            None => Taken::Idle,
        }
    }

    fn take_now(&self) -> Option<Taken> {
        let mut st = self.lock();
        if !st.events.is_empty() {
            st.bytes = 0;
            let events = st.events.drain(..).collect();
            drop(st);
            self.room.notify_one();
            return Some(Taken::Events(events));
        }
        st.finished.take().map(Taken::Finished)
    }

    /// The connection's side has gone (`why`): what is queued is dropped, and the producer's
    /// sends fail from now on (a waiting one wakes).
    pub(super) fn close(&self, why: &'static str) {
        {
            let mut st = self.lock();
            st.closed.get_or_insert(why);
            st.events.clear();
            st.bytes = 0;
        }
        self.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(limit: usize) -> Queue {
        Queue::new(limit, Arc::default())
    }

    fn events(t: Taken) -> Vec<Bytes> {
        match t {
            Taken::Events(e) => e,
            _ => panic!("no events"),
        }
    }

    #[test]
    fn events_then_the_end_in_order() {
        let q = queue(100);
        q.push(Bytes::from_static(b"a")).unwrap();
        q.push(Bytes::from_static(b"b")).unwrap();
        q.finish(Ok(()));
        assert_eq!(events(q.take(None)), [&b"a"[..], &b"b"[..]]);
        assert!(matches!(q.take(None), Taken::Finished(Ok(()))));
    }

    #[test]
    fn an_empty_wait_runs_out() {
        let q = queue(100);
        assert!(matches!(
            q.take(Some(Duration::from_millis(1))),
            Taken::Idle
        ));
    }

    #[test]
    fn a_full_queue_holds_the_producer_until_taken() {
        let q = Arc::new(queue(4));
        q.push(Bytes::from_static(b"1234")).unwrap();
        let q2 = q.clone();
        let producer = std::thread::spawn(move || q2.push(Bytes::from_static(b"5")));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(events(q.take(None)), [&b"1234"[..]]);
        producer.join().unwrap().unwrap();
        assert_eq!(events(q.take(None)), [&b"5"[..]]);
    }

    #[test]
    fn closing_fails_sends_and_wakes_a_waiting_producer() {
        let q = Arc::new(queue(1));
        q.push(Bytes::from_static(b"x")).unwrap();
        let q2 = q.clone();
        let producer = std::thread::spawn(move || q2.push(Bytes::from_static(b"y")));
        std::thread::sleep(Duration::from_millis(20));
        q.close("gone");
        let err = producer.join().unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        assert!(q.is_closed());
    }
}
