//! [`Outbox`]: how fibers other than a connection's owner send on it.
//!
//! A connection is owned by one fiber, which alone reads and writes its transport — for TLS,
//! the only one that touches the rustls session (using one from two fibers or threads at once
//! is how rustls deadlocks). Other fibers that must send on the connection (an HTTP/2 stream,
//! a WebSocket sender, a broadcast) hand their bytes to its outbox instead, through a cloneable
//! [`OutboxSender`]; the owner waits for "readable or output queued"
//! ([`Outbox::wait_readable`]), writes what is queued in one vectored write
//! ([`Outbox::flush_to`]: over TLS, records of as many messages as fit in one `write`), and
//! reads. The queue is bounded in bytes: a sender waits while it is full, so a client that
//! stops reading holds memory flat and its senders block (or time out) instead.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use fibra::sync::Notify;

use crate::transport::Transport;

struct Queue {
    chunks: VecDeque<Vec<u8>>,
    bytes: usize,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Notified when something is queued: wakes the owner. (It may be shared with other
    /// reasons to wake the owner, see [`Outbox::with_notify`].)
    queued: Arc<Notify>,
    /// Notified when the owner took bytes out, or closed: wakes waiting senders.
    space: Notify,
    /// The owner is gone (or closed the outbox): sends fail.
    closed: AtomicBool,
    limit: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the outbox, from either side: queued bytes are dropped, the owner wakes (and
    /// sees it closed), and a sender about to wait finds the permit stored on `space`; each
    /// one that wakes passes it on (see `OutboxSender::send`).
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        {
            let mut q = self.lock();
            q.chunks.clear();
            q.bytes = 0;
        }
        self.queued.notify_one();
        self.space.notify_one();
    }
}

/// The owner's end of a connection's outbox: waits for input or queued output and writes
/// what other fibers queued. Dropping it closes the outbox (senders then get `BrokenPipe`).
pub struct Outbox {
    shared: Arc<Shared>,
}

/// A sending end of an [`Outbox`], for any fiber or thread. Clones share the outbox.
#[derive(Clone)]
pub struct OutboxSender {
    shared: Arc<Shared>,
}

/// What woke [`Outbox::wait_readable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The transport may have input (or plaintext is already decrypted): read it.
    Readable,
    /// Output was queued: write it with [`Outbox::flush_to`].
    Queued,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("queued_bytes", &self.shared.lock().bytes)
            .field("limit", &self.shared.limit)
            .finish()
    }
}

impl std::fmt::Debug for OutboxSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxSender")
            .field("closed", &self.shared.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Outbox {
    /// A new outbox holding at most `limit_bytes` queued bytes (at least one message is
    /// always accepted, however large), and its first sender.
    pub fn new(limit_bytes: usize) -> (Outbox, OutboxSender) {
        Outbox::with_notify(limit_bytes, Arc::default())
    }

    /// [`Outbox::new`] whose owner is woken through `queued`, which may also be notified for
    /// other reasons (an upgraded connection's graceful-shutdown signal): a wake-up with
    /// nothing queued is reported as [`Woken::Queued`] all the same.
    pub fn with_notify(limit_bytes: usize, queued: Arc<Notify>) -> (Outbox, OutboxSender) {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                chunks: VecDeque::new(),
                bytes: 0,
            }),
            queued,
            space: Notify::new(),
            closed: AtomicBool::new(false),
            limit: limit_bytes,
        });
        (
            Outbox {
                shared: shared.clone(),
            },
            OutboxSender { shared },
        )
    }

    /// Another sender.
    pub fn sender(&self) -> OutboxSender {
        OutboxSender {
            shared: self.shared.clone(),
        }
    }

    /// Whether the outbox was closed ([`Outbox::close`], or [`OutboxSender::abort`]).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Bytes queued and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.shared.lock().bytes
    }

    /// Waits until `io` may have input or something is queued, honouring `io`'s read timeout
    /// (`TimedOut`). Queued output wins when both are there, so the owner writes before it
    /// reads.
    pub fn wait_readable<T: Transport>(&self, io: &T) -> io::Result<Woken> {
        self.wait_with(|notify| io.wait_readable_or(notify))
    }

    /// [`Outbox::wait_readable`] with the wait of something other than a [`Transport`]
    /// (e.g. [`crate::Upgraded::wait_readable_or`]): `wait_readable_or` must wait until
    /// input may have come or the `Notify` it gets is notified (true).
    pub fn wait_with(
        &self,
        wait_readable_or: impl FnOnce(&Notify) -> io::Result<bool>,
    ) -> io::Result<Woken> {
        if self.queued_bytes() > 0 {
            return Ok(Woken::Queued);
        }
        if wait_readable_or(&self.shared.queued)? || self.queued_bytes() > 0 {
            Ok(Woken::Queued)
        } else {
            Ok(Woken::Readable)
        }
    }

    /// Writes everything queued to `io`, many messages per vectored write, and wakes a
    /// sender waiting for room. Returns the bytes written.
    pub fn flush_to<W: Write>(&self, io: &mut W) -> io::Result<usize> {
        let chunks: Vec<Vec<u8>> = {
            let mut q = self.shared.lock();
            q.bytes = 0;
            q.chunks.drain(..).collect()
        };
        if chunks.is_empty() {
            return Ok(0);
        }
        self.shared.space.notify_one();
        let total: usize = chunks.iter().map(Vec::len).sum();
        // (chunk, offset) of the first byte not written yet.
        let (mut idx, mut off) = (0usize, 0usize);
        while idx < chunks.len() {
            let slices: Vec<IoSlice<'_>> = std::iter::once(IoSlice::new(&chunks[idx][off..]))
                .chain(chunks[idx + 1..].iter().map(|c| IoSlice::new(c)))
                .collect();
            let mut n = match io.write_vectored(&slices) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            while idx < chunks.len() && n >= chunks[idx].len() - off {
                n -= chunks[idx].len() - off;
                idx += 1;
                off = 0;
            }
            off += n;
        }
        io.flush()?;
        Ok(total)
    }

    /// Closes the outbox: queued bytes are dropped and senders get `BrokenPipe` from now on.
    pub fn close(&self) {
        self.shared.close();
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.close();
    }
}

impl OutboxSender {
    /// Queues `bytes` for the owner to write, waiting while the outbox is full (for at most
    /// `timeout`, then `TimedOut`; `None`: as long as it takes). `BrokenPipe` once the owner
    /// has closed it (the connection ended).
    pub fn send(&self, bytes: Vec<u8>, timeout: Option<Duration>) -> io::Result<()> {
        let sh = &*self.shared;
        let deadline = timeout.and_then(|t| std::time::Instant::now().checked_add(t));
        loop {
            if sh.closed.load(Ordering::SeqCst) {
                // Pass the wake-up on: every sender waiting on a closed outbox must return.
                sh.space.notify_one();
                return Err(closed());
            }
            {
                let mut q = sh.lock();
                if q.bytes == 0 || q.bytes + bytes.len() <= sh.limit {
                    q.bytes += bytes.len();
                    q.chunks.push_back(bytes);
                    let room = q.bytes < sh.limit;
                    drop(q);
                    sh.queued.notify_one();
                    if room {
                        // Another sender may be waiting for the room this one woke for.
                        sh.space.notify_one();
                    }
                    return Ok(());
                }
            }
            // The owner's `notify_one` after taking bytes out is stored as a permit if it
            // comes before this wait, so it is never lost; a stale permit costs one more look.
            match deadline {
                None => sh.space.wait(),
                Some(at) => {
                    let left = at.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "outbox full: the connection does not drain",
                        ));
                    }
                    sh.space.wait_timeout(left);
                }
            }
        }
    }

    /// Whether the owner has closed the outbox (or a sender aborted it).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Gives the connection up from the sending side (a client too slow to keep): the
    /// outbox closes, queued bytes are dropped, and the owner, woken, sees
    /// [`Outbox::is_closed`] and ends the connection.
    pub fn abort(&self) {
        self.shared.close();
    }
}

fn closed() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the connection's outbox is closed",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_leave_in_order_in_one_flush() {
        let (outbox, tx) = Outbox::new(1024);
        let tx2 = outbox.sender();
        tx.send(b"one ".to_vec(), None).unwrap();
        tx2.send(b"two ".to_vec(), None).unwrap();
        tx.send(b"three".to_vec(), None).unwrap();
        assert_eq!(outbox.queued_bytes(), 13);
        let mut out = Vec::new();
        assert_eq!(outbox.flush_to(&mut out).unwrap(), 13);
        assert_eq!(out, b"one two three");
        assert_eq!(outbox.queued_bytes(), 0);
    }

    /// A writer that takes at most 3 bytes per call: partial vectored writes resume in the
    /// right place.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(3);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_writes_resume_where_they_stopped() {
        let (outbox, tx) = Outbox::new(1024);
        for part in ["ab", "cdefg", "", "h", "ijklmnop"] {
            tx.send(part.as_bytes().to_vec(), None).unwrap();
        }
        let mut out = Trickle(Vec::new());
        outbox.flush_to(&mut out).unwrap();
        assert_eq!(out.0, b"abcdefghijklmnop");
    }

    #[test]
    fn a_full_outbox_holds_its_sender_until_the_owner_writes() {
        let (outbox, tx) = Outbox::new(8);
        tx.send(vec![1; 8], None).unwrap();
        let err = tx
            .send(vec![2; 4], Some(Duration::from_millis(50)))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            outbox.queued_bytes(),
            8,
            "the refused message was not queued"
        );
        // A sender blocked on the full outbox goes on once the owner has written.
        let waiting = std::thread::spawn(move || tx.send(vec![3; 4], None));
        std::thread::sleep(Duration::from_millis(20));
        let mut out = Vec::new();
        outbox.flush_to(&mut out).unwrap();
        waiting.join().unwrap().unwrap();
        assert_eq!(outbox.queued_bytes(), 4);
    }

    #[test]
    fn one_message_larger_than_the_limit_is_accepted_when_empty() {
        let (outbox, tx) = Outbox::new(8);
        tx.send(vec![0; 100], None).unwrap();
        assert_eq!(outbox.queued_bytes(), 100);
    }

    #[test]
    fn closing_fails_queued_and_blocked_senders() {
        let (outbox, tx) = Outbox::new(4);
        tx.send(vec![1; 4], None).unwrap();
        let blocked: Vec<_> = (0..3)
            .map(|_| {
                let tx = tx.clone();
                std::thread::spawn(move || tx.send(vec![2; 4], None))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        drop(outbox);
        for b in blocked {
            assert_eq!(
                b.join().unwrap().unwrap_err().kind(),
                io::ErrorKind::BrokenPipe
            );
        }
        assert!(tx.is_closed());
        assert_eq!(
            tx.send(vec![0], None).unwrap_err().kind(),
            io::ErrorKind::BrokenPipe
        );
    }
}
