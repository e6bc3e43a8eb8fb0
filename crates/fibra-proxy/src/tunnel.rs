//! After the upstream answered `101 Switching Protocols` (a WebSocket, say): the client's
//! connection and the upstream's are joined, and bytes go both ways as they come, until one
//! side closes.
//!
//! Two fibers on the worker that runs the connection: the connection's own fiber reads the
//! client and writes what it reads to the upstream, and writes to the client what the second
//! fiber read from the upstream. The second fiber hands its bytes over through an
//! [`Outbox`] bounded at [`QUEUED_BYTES`], so a client that stops reading stops the reads
//! from the upstream (and the other way round, a write to the upstream holds up the client's
//! reads): memory stays flat. While the upstream is slow to take what the connection's fiber
//! writes, that fiber goes on writing the queued upstream bytes to the client, so an upstream
//! that writes before it reads (an echo) is never left waiting on us while we wait on it.
//! Only the connection's fiber touches the client's transport (a TLS session must not be
//! used from two fibers).
//!
//! The end, as nginx's: when the upstream closes, what it sent is written to the client and
//! both connections close. When the client closes, the upstream's connection is shut for
//! writing (it sees the end of stream), and what it still sends goes to the client until it
//! closes too. As nginx's `proxy_read_timeout`, an upstream silent for the proxy's read
//! timeout ends the tunnel. The upstream connection never goes back to the pool.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fibra::net::TcpStream;
use fibra::sync::Notify;

use crate::tls::UpStream;
use fibra_http::outbox::Outbox;
use fibra_http::Upgraded;

/// Upstream bytes read but not yet written to the client, at most (one more read may wait).
const QUEUED_BYTES: usize = 64 * 1024;
/// Bytes read at a time, each way.
const PIECE: usize = 16 * 1024;

/// Copies both ways between `client` and `upstream` until one side closes. `early` holds
/// what the upstream sent right after its `101` head (already read), written to the client
/// first. A TLS upstream's tunnel is [`crate::tunnel_tls`]'s.
pub(crate) fn run(mut client: Upgraded, upstream: UpStream, early: Vec<u8>) {
    if !early.is_empty() && client.write_all(&early).is_err() {
        return;
    }
    let upstream = match upstream {
        UpStream::Plain(s) => s,
        UpStream::Tls(s) => return crate::tunnel_tls::run(client, s),
    };
    let upstream = Arc::new(upstream);
    let woken = Arc::new(Notify::new());
    let (outbox, tx) = Outbox::with_notify(QUEUED_BYTES, woken.clone());
    let up_done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (up, done, woken) = (upstream.clone(), up_done.clone(), woken.clone());
        let mut fiber = fibra::fiber::Builder::new().name("proxy tunnel");
        // Same worker: the socket is registered with its poller, and the two fibers then
        // never run at once.
        if let Some(w) = fibra::current_worker() {
            fiber = fiber.worker(w);
        }
        fiber.spawn(move || {
            let mut buf = vec![0u8; PIECE];
            loop {
                match (&*up).read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec(), None).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        log::debug!("proxy tunnel: reading the upstream: {e}");
                        break;
                    }
                }
            }
            done.store(true, Ordering::SeqCst);
            woken.notify_one();
        })
    };
    let reader = match reader {
        Ok(h) => h,
        Err(e) => {
            log::warn!("proxy tunnel: cannot spawn its fiber: {e}");
            return;
        }
    };
    if let Err(e) = pump(&mut client, &upstream, &outbox, &woken, &up_done) {
        log::debug!("proxy tunnel ended: {e}");
    }
    // Unblocks the reader fiber wherever it waits: in its read (the socket is shut) or in
    // its send (the outbox is closed).
    let _ = upstream.shutdown(Shutdown::Both);
    outbox.close();
    let _ = reader.join();
}

/// The connection fiber's side: client → upstream, and the queued upstream → client.
fn pump(
    client: &mut Upgraded,
    upstream: &TcpStream,
    outbox: &Outbox,
    woken: &Notify,
    up_done: &AtomicBool,
) -> io::Result<()> {
    client.set_nonblocking(true);
    let mut buf = vec![0u8; PIECE];
    let mut client_open = true;
    loop {
        // Read before the flush: everything queued before the reader was done gets written.
        let done = up_done.load(Ordering::SeqCst);
        outbox.flush_to(client)?;
        if done {
            return Ok(());
        }
        if client_open {
            match client.read(&mut buf) {
                Ok(0) => {
                    client_open = false;
                    upstream.shutdown(Shutdown::Write)?;
                    continue;
                }
                Ok(n) => {
                    write_upstream(upstream, &buf[..n], client, outbox, woken)?;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        outbox.wait_with(|woken| {
            if client_open {
                client.wait_readable_or(woken)
            } else {
                woken.wait();
                Ok(true)
            }
        })?;
    }
}

/// Writes `data` to the upstream; while it does not fit the upstream's socket, writes what
/// the reader fiber queued to the client and waits for "writable or more queued". Honours
/// the upstream's write timeout.
fn write_upstream(
    upstream: &TcpStream,
    mut data: &[u8],
    client: &mut Upgraded,
    outbox: &Outbox,
    woken: &Notify,
) -> io::Result<()> {
    while !data.is_empty() {
        match upstream.try_write(data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                outbox.flush_to(client)?;
                upstream.writable_or_notified(woken)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
