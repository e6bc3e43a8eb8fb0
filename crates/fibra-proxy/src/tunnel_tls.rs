//! The tunnel after a `101` from an `https://` upstream: as [`crate::tunnel`]'s, but the
//! upstream side is a rustls session, which must be driven by one fiber only.
//!
//! So the connection's fiber owns both ends: the client's transport and the upstream's TLS
//! session. It reads the client and encrypts what it reads to the upstream; it takes in the
//! upstream's records (`try_read`: only what has arrived), decrypts them and writes the
//! plaintext to the client. What it cannot do is wait for two sockets at once, so a second
//! fiber, the *watcher*, only waits until the upstream socket is readable and wakes the
//! connection's fiber, which waits for "client readable or woken". The watcher never reads
//! or writes: after a wake-up it waits until the owner has taken in what arrived (the
//! `drained` notification), so it does not spin on readiness the owner has yet to clear.
//!
//! Backpressure needs no queue: the fiber writes what it read before it reads more from the
//! same side, so a client that stops reading stops the reads from the upstream, and the other
//! way round; memory is the two read buffers and rustls's own. One thing it must not do is
//! stop reading the upstream while the upstream is slow to take what it writes: an upstream
//! that writes before it reads (an echo) would then wait on us as we wait on it. So while
//! records for the upstream do not fit its socket, the fiber goes on taking in what the
//! upstream sends, and waits for "writable or the upstream readable".
//!
//! The end is [`crate::tunnel`]'s: when the upstream closes, what it sent goes to the client
//! and both connections close; when the client closes, the upstream gets `close_notify` and
//! the end of stream, and what it still sends goes to the client until it closes too. An
//! upstream silent for the proxy's read timeout ends the tunnel (the watcher's wait times
//! out). The upstream gets `close_notify` whichever side ended it. A TCP end without
//! `close_notify` ends the tunnel all the same (the protocol on top, a WebSocket's close
//! frames, says whether it was clean), logged at debug level.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fibra::net::TcpStream;
use fibra::sync::Notify;
use rustls::ClientConnection;

use crate::tls::{TlsStream, TryRead, TryWrite};
use fibra_http::Upgraded;

/// Bytes read at a time from the client (and plaintext from rustls for the client).
const PIECE: usize = 16 * 1024;

/// What the connection's fiber and the watcher share.
struct Shared {
    /// The watcher → the owner: the upstream may have input, or the watcher has ended.
    readable: Notify,
    /// The owner → the watcher: what had arrived has been taken in; wait again.
    drained: Notify,
    /// The owner is done: the watcher returns.
    stop: AtomicBool,
    /// The watcher's wait failed (the read timeout, or a socket error): the tunnel ends.
    failed: AtomicBool,
}

/// Copies both ways between `client` and the TLS session `up` until one side closes
/// (what the upstream sent right after its `101`, already read, has gone to the client).
pub(crate) fn run(mut client: Upgraded, mut up: Box<TlsStream>) {
    let sock = up.0.sock.0.clone();
    let shared = Arc::new(Shared {
        readable: Notify::new(),
        drained: Notify::new(),
        stop: AtomicBool::new(false),
        failed: AtomicBool::new(false),
    });
    let watcher = {
        let (sock, shared) = (sock.clone(), shared.clone());
        let mut fiber = fibra::fiber::Builder::new().name("proxy tunnel watcher");
        // Same worker: the socket is registered with its poller.
        if let Some(w) = fibra::current_worker() {
            fiber = fiber.worker(w);
        }
        fiber.spawn(move || watch(&sock, &shared))
    };
    let watcher = match watcher {
        Ok(h) => h,
        Err(e) => {
            log::warn!("proxy tunnel: cannot spawn its fiber: {e}");
            return;
        }
    };
    if let Err(e) = pump(&mut client, &mut up.0.conn, &sock, &shared) {
        log::debug!("proxy tunnel (TLS upstream) ended: {e}");
    }
    // `close_notify` before the socket shuts; then the watcher, wherever it waits, returns.
    up.close_notify();
    shared.stop.store(true, Ordering::SeqCst);
    let _ = sock.shutdown(Shutdown::Both);
    shared.drained.notify_one();
    let _ = watcher.join();
}

impl Shared {
    /// `TimedOut` once the watcher gave up waiting for the upstream.
    fn check(&self) -> io::Result<()> {
        if self.failed.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the upstream was silent for the read timeout",
            ));
        }
        Ok(())
    }
}

/// The watcher: waits for the upstream socket to be readable, wakes the owner, and waits
/// until it has drained the socket, until told to stop.
fn watch(sock: &TcpStream, shared: &Shared) {
    while !shared.stop.load(Ordering::SeqCst) {
        if let Err(e) = sock.readable() {
            log::debug!("proxy tunnel: waiting for the upstream: {e}");
            shared.failed.store(true, Ordering::SeqCst);
            shared.readable.notify_one();
            return;
        }
        shared.readable.notify_one();
        shared.drained.wait();
    }
}

/// The owner's loop: upstream → client and client → upstream, until one ends the tunnel.
fn pump(
    client: &mut Upgraded,
    tls: &mut ClientConnection,
    sock: &TcpStream,
    shared: &Shared,
) -> io::Result<()> {
    client.set_nonblocking(true);
    let mut buf = vec![0u8; PIECE];
    let mut pulled = vec![0u8; PIECE];
    let mut client_open = true;
    loop {
        shared.check()?;
        if !pull(tls, sock, client, &mut buf)? {
            return Ok(()); // the upstream closed
        }
        shared.drained.notify_one();
        // What taking in records made rustls answer (a key update).
        if !flush(tls, sock, client, &mut buf, shared)? {
            return Ok(());
        }
        if client_open {
            match client.read(&mut buf) {
                Ok(0) => {
                    client_open = false;
                    tls.send_close_notify();
                    if !flush(tls, sock, client, &mut pulled, shared)? {
                        return Ok(());
                    }
                    sock.shutdown(Shutdown::Write)?;
                    continue;
                }
                Ok(n) => {
                    if !push(tls, sock, client, &buf[..n], &mut pulled, shared)? {
                        return Ok(());
                    }
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            client.wait_readable_or(&shared.readable)?;
        } else {
            shared.readable.wait();
        }
    }
}

/// Takes in what the upstream sent and writes its plaintext to the client. False once the
/// upstream has closed (with `close_notify` or without).
fn pull(
    tls: &mut ClientConnection,
    sock: &TcpStream,
    client: &mut Upgraded,
    buf: &mut [u8],
) -> io::Result<bool> {
    loop {
        loop {
            match tls.reader().read(buf) {
                Ok(0) => return Ok(false),
                Ok(n) => client.write_all(&buf[..n])?,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    log::debug!("proxy tunnel: the upstream closed without close_notify");
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
        }
        match tls.read_tls(&mut TryRead(sock)) {
            Ok(_) => {} // records, or the end of stream: the reader says which next
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) => return Err(e),
        }
        if let Err(e) = tls.process_new_packets() {
            // The alert for what rustls refused, if it fits (the tunnel ends either way).
            let _ = tls.write_tls(&mut TryWrite(sock));
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        // An answer rustls queued (a key update) goes out with the owner's next flush.
    }
}

/// Encrypts `data` to the upstream (rustls takes as much as its buffer holds; sending
/// empties it for the rest), taking in what the upstream sends meanwhile (see [`flush`]).
/// False once the upstream has closed.
fn push(
    tls: &mut ClientConnection,
    sock: &TcpStream,
    client: &mut Upgraded,
    mut data: &[u8],
    buf: &mut [u8],
    shared: &Shared,
) -> io::Result<bool> {
    while !data.is_empty() {
        let n = tls.writer().write(data)?;
        data = &data[n..];
        if !flush(tls, sock, client, buf, shared)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Sends the records rustls has queued. While they do not fit the socket, it takes in what
/// the upstream sends (to the client) and waits for "writable or the upstream readable",
/// so an upstream that writes before it reads is never left waiting on us while we wait
/// on it. Honours the write timeout. False once the upstream has closed.
fn flush(
    tls: &mut ClientConnection,
    sock: &TcpStream,
    client: &mut Upgraded,
    buf: &mut [u8],
    shared: &Shared,
) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(&mut TryWrite(sock)) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if !pull(tls, sock, client, buf)? {
                    return Ok(false);
                }
                shared.drained.notify_one();
                shared.check()?;
                sock.writable_or_notified(&shared.readable)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}
