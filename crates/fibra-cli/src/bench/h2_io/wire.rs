//! The connection's transport as the `h2` crate sees it: `AsyncRead + AsyncWrite` over a
//! [`Transport`], for the fiber that drives the crate's client connection only.
//!
//! Reads never wait: a read that finds nothing returns `Pending` and records that the
//! connection wants input, and the owner fiber then waits for input *or* a wake-up from a
//! stream fiber ([`Transport::wait_readable_or`]). Writes do wait, the fiber way: a write
//! into a full socket parks the owner fiber (up to the write timeout), which is what
//! backpressure towards a slow reader should do. The bytes the HTTP/1.1 loop had already
//! read (the connection preface, and whatever followed it) are read first.

use std::cell::{Cell, Ref, RefCell};
use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::park::Parker;
use fibra_http::Transport;

/// The transport, shared by the adapter (inside the `h2` connection) and the owning fiber's
/// waits between polls.
pub struct Link<T> {
    io: RefCell<T>,
    /// Bytes read before the switch to HTTP/2, served first.
    early: RefCell<(Vec<u8>, usize)>,
    /// A read found nothing since the last [`Link::take_wants_read`].
    wants_read: Cell<bool>,
}

impl<T: Transport> Link<T> {
    /// A link over `io` whose first reads return `early` (bytes already read off it).
    pub fn new(io: T, early: Vec<u8>) -> Rc<Link<T>> {
        Rc::new(Link {
            io: RefCell::new(io),
            early: RefCell::new((early, 0)),
            wants_read: Cell::new(false),
        })
    }

    /// Whether the last poll ended waiting for input (and forgets it).
    pub fn take_wants_read(&self) -> bool {
        self.wants_read.replace(false)
    }

    /// The transport, between polls (a poll of the `h2` connection borrows it).
    pub fn transport(&self) -> Ref<'_, T> {
        self.io.borrow()
    }

    /// Polls `fut` (a handshake, say) with `parker`'s waker until it is ready, waiting as
    /// [`Link::wait`] does after each `Pending`; `None` if a wait failed (the read timeout,
    /// an error).
    pub fn block_on<F: Future>(&self, parker: &Parker, fut: F) -> Option<F::Output> {
        let mut fut = pin!(fut);
        let mut cx = Context::from_waker(parker.waker());
        loop {
            if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
                return Some(out);
            }
            if !self.wait(parker) {
                return None;
            }
        }
    }

    /// Waits after a poll returned `Pending`: for input or a wake-up of `parker`'s waker
    /// when the poll wanted input, else for the wake-up alone. False when the wait failed
    /// (the read timeout, an error): the connection should end.
    pub fn wait(&self, parker: &Parker) -> bool {
        if self.take_wants_read() {
            self.io.borrow().wait_readable_or(parker.notify()).is_ok()
        } else {
            parker.notify().wait();
            true
        }
    }
}

/// The largest read into the crate's buffer.
const SCRATCH_LEN: usize = 16 * 1024;

thread_local! {
    /// Where a read lands before it is copied into the crate's buffer: one per worker,
    /// zeroed once.
    static SCRATCH: Cell<Option<Box<[u8]>>> = const { Cell::new(None) };
}

/// The `h2` crate's view of a [`Link`]: pass it to `h2::server::handshake` or
/// `h2::client::handshake`, and poll what they return from the fiber that owns the link,
/// with a [`Parker`]'s waker, calling [`Link::wait`] whenever a poll returns `Pending`.
pub struct H2Io<T>(pub Rc<Link<T>>);

impl<T: Transport> AsyncRead for H2Io<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let link = &self.0;
        {
            let mut early = link.early.borrow_mut();
            let (bytes, pos) = &mut *early;
            if *pos < bytes.len() {
                let n = buf.remaining().min(bytes.len() - *pos);
                buf.put_slice(&bytes[*pos..*pos + n]);
                *pos += n;
                if *pos == bytes.len() {
                    *early = (Vec::new(), 0);
                }
                return Poll::Ready(Ok(()));
            }
        }
        // The crate's buffer is uninitialised spare capacity: zeroing all of it for every
        // read cost more than the request (a `memset` of kilobytes per read). Read into the
        // thread's scratch, zeroed once, and copy out what came.
        // Taken out while in use: a TLS read may write (handshake replies) and so wait, and
        // another fiber of the thread then reads with a scratch of its own.
        let mut scratch = SCRATCH
            .with(Cell::take)
            .unwrap_or_else(|| vec![0; SCRATCH_LEN].into_boxed_slice());
        let want = buf.remaining().min(scratch.len());
        let result = link.io.borrow_mut().try_read(&mut scratch[..want]);
        if let Ok(n) = result {
            buf.put_slice(&scratch[..n]);
        }
        SCRATCH.with(|s| s.set(Some(scratch)));
        match result.map(|_| ()) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                link.wants_read.set(true);
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl<T: Transport> AsyncWrite for H2Io<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.0.io.borrow_mut().write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(self.0.io.borrow_mut().write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.0.io.borrow_mut().flush())
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let io = self.0.io.borrow_mut();
        Poll::Ready(io.shutdown(std::net::Shutdown::Write))
    }
}
