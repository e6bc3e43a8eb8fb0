//! [`Tls`]: the TLS transport over another one, driven by the connection's fiber.

use std::cell::{OnceCell, RefCell};
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use fibra::fiber::Wait;
use fibra::sync::Notify;
use rustls::server::{Acceptor, ClientHello};
use rustls::{ProtocolVersion, ServerConfig, ServerConnection};

use super::AlpnHook;

mod as_transport;
use crate::transport::{self, Capabilities, ShutdownHandle, Transport};

/// A server-side TLS connection over the transport `T` (usually [`crate::Tcp`]), made by
/// [`crate::tls::TlsAcceptor`].
///
/// The connection's fiber alone touches its [`rustls::ServerConnection`]: reads feed the
/// ciphertext that has arrived into rustls and hand out the plaintext it decrypts, writes
/// encrypt and send at once. The handshake runs lazily within the first reads, so it counts
/// against the read timeout the connection loop sets (the header timeout) and never holds up
/// the accept loop. A peer that does not speak TLS gets rustls's alert and a read error, which
/// ends the connection; one that sends plain HTTP gets a readable `400` instead of the alert
/// ("The plain HTTP request was sent to HTTPS port", as nginx answers).
///
/// Readiness forwards to `T`, except that plaintext rustls has already decrypted is ready at
/// once; timeouts, the peer address and the shutdown handle are `T`'s. The ALPN protocol and
/// the SNI name are the session's.
pub struct Tls<T> {
    // A `RefCell` only for the few `&self` methods that need the session (`shutdown`, the
    // waits); the reads and writes reach it through `get_mut`, at no cost.
    state: RefCell<State<T>>,
    /// What the handshake settled, copied out of the session once it is done: what
    /// [`Transport::alpn`] and [`Transport::server_name`] lend, which a borrow of `state`
    /// could not.
    agreed: OnceCell<Agreed>,
    /// Connections agreeing on its protocol are closed after the handshake (see
    /// [`AlpnHook`]); set when it took this one.
    hook: Option<Arc<AlpnHook>>,
    hooked: bool,
}

/// What a finished handshake settled, for the connection loop and the handler.
#[derive(Debug)]
struct Agreed {
    /// The ALPN protocol.
    alpn: Option<Box<[u8]>>,
    /// The SNI name.
    server_name: Option<Box<str>>,
}

struct State<T> {
    io: T,
    /// The session; `None` until the ClientHello has chosen its configuration (see
    /// [`Tls::choosing`]).
    conn: Option<ServerConnection>,
    /// Before the ClientHello, when the configuration depends on it.
    hello: Option<Box<Hello>>,
    /// rustls holds plaintext, or has seen the end of the stream: a read returns at once.
    ready: bool,
    /// The first bytes the client sent (up to 8), kept to recognise plain HTTP sent to the
    /// TLS port if the handshake fails on them.
    first: [u8; 8],
    first_len: u8,
}

/// Picks a connection's configuration from its ClientHello (see [`Tls::choosing`]); `None`
/// refuses the handshake with a fatal `unrecognized_name` alert (RFC 6066 §3), as a server
/// with no site for the name the client asked for does.
pub type ChooseConfig = dyn Fn(&ClientHello<'_>) -> Option<Arc<ServerConfig>> + Send + Sync;

/// A fatal `unrecognized_name` alert (112) in a TLS 1.2-versioned alert record: what a refused
/// ClientHello is answered with.
const UNRECOGNIZED_NAME_ALERT: [u8; 7] = [21, 3, 3, 0, 2, 2, 112];

/// A connection waiting for its ClientHello.
struct Hello {
    acceptor: Acceptor,
    choose: Arc<ChooseConfig>,
}

/// rustls's default limit on buffered outgoing TLS data.
const DEFAULT_BUFFER_LIMIT: usize = 64 * 1024;

/// The answer to plain HTTP on the TLS port, as nginx gives it: a readable 400 instead of a
/// TLS alert the client cannot show.
const PLAIN_HTTP_REPLY: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\
Content-Length: 46\r\nConnection: close\r\n\r\nThe plain HTTP request was sent to HTTPS port\n";

/// Whether `head` starts like an HTTP/1 request line: a method in capitals, then a space.
fn looks_like_http(head: &[u8]) -> bool {
    let method_len = head.iter().take_while(|b| b.is_ascii_uppercase()).count();
    (3..=7).contains(&method_len) && head.get(method_len) == Some(&b' ')
}

impl<T> std::fmt::Debug for Tls<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (handshaking, ready) = match self.state.try_borrow() {
            Ok(s) => (
                Some(s.conn.as_ref().is_none_or(|c| c.is_handshaking())),
                Some(s.ready),
            ),
            Err(_) => (None, None),
        };
        f.debug_struct("Tls")
            .field("handshaking", &handshaking)
            .field("ready", &ready)
            .field("agreed", &self.agreed.get())
            .finish_non_exhaustive()
    }
}

/// The inner transport's non-blocking read as an `io::Read`, for `read_tls`.
struct TryRead<'a, T>(&'a mut T);

impl<T: Transport> Read for TryRead<'_, T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

/// A read of the inner transport that keeps a copy of the connection's first bytes.
struct Sniff<'a, R> {
    inner: R,
    first: &'a mut [u8; 8],
    first_len: &'a mut u8,
}

impl<R: Read> Read for Sniff<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let have = usize::from(*self.first_len);
        let take = (8 - have).min(n);
        self.first[have..have + take].copy_from_slice(&buf[..take]);
        *self.first_len += take as u8;
        Ok(n)
    }
}

impl<T: Transport> Tls<T> {
    /// Wraps `io`, over which the handshake has not started yet, with the session `conn`.
    pub fn new(io: T, conn: ServerConnection) -> Tls<T> {
        Tls::with_state(io, Some(conn), None)
    }

    /// Wraps `io` with a session whose configuration `choose` picks once the client's
    /// ClientHello has arrived (by its cipher suites, SNI name, ALPN protocols…; rustls's
    /// [`Acceptor`]).
    pub fn choosing(io: T, choose: Arc<ChooseConfig>) -> Tls<T> {
        let hello = Hello {
            acceptor: Acceptor::default(),
            choose,
        };
        Tls::with_state(io, None, Some(Box::new(hello)))
    }

    fn with_state(io: T, conn: Option<ServerConnection>, hello: Option<Box<Hello>>) -> Tls<T> {
        Tls {
            state: RefCell::new(State {
                io,
                conn,
                hello,
                ready: false,
                first: [0; 8],
                first_len: 0,
            }),
            agreed: OnceCell::new(),
            hook: None,
            hooked: false,
        }
    }

    /// Closes the connection after its handshake if it agrees on `hook`'s protocol.
    pub(super) fn with_hook(mut self, hook: Option<Arc<AlpnHook>>) -> Tls<T> {
        self.hook = hook;
        self
    }

    /// After a read: whether an [`AlpnHook`] takes the connection. The first time, its
    /// `close_notify` goes out; the read then reports the end of the stream, and the
    /// connection loop closes.
    #[cold]
    fn hooked(&mut self) -> bool {
        if !self.hooked {
            let Some(agreed) = self.agreed() else {
                return false;
            };
            let (alpn, name) = (agreed.alpn.as_deref(), agreed.server_name.as_deref());
            let hooked = self.hook.as_ref().is_some_and(|h| h.take(alpn, name));
            if !hooked {
                // Not this hook's: never asked again.
                self.hook = None;
                return false;
            }
            self.hooked = true;
            // Closed from this side, properly: the client reads the end of the session.
            let st = self.state.get_mut();
            if let Some(conn) = st.conn.as_mut() {
                conn.send_close_notify();
            }
            let _ = st.send_pending();
        }
        true
    }

    /// What the handshake settled; `None` until it is done.
    fn agreed(&self) -> Option<&Agreed> {
        if let Some(agreed) = self.agreed.get() {
            return Some(agreed);
        }
        let agreed = {
            let st = self.state.borrow();
            let conn = st.conn.as_ref().filter(|c| !c.is_handshaking())?;
            Agreed {
                alpn: conn.alpn_protocol().map(Box::from),
                server_name: conn.server_name().map(Box::from),
            }
        };
        Some(self.agreed.get_or_init(|| agreed))
    }

    /// The TLS session (negotiated version, ALPN protocol, SNI name, …); `None` before the
    /// ClientHello of a [`Tls::choosing`] connection.
    pub fn with_session<R>(&self, f: impl FnOnce(&ServerConnection) -> R) -> Option<R> {
        self.state.borrow().conn.as_ref().map(f)
    }

    /// The transport underneath.
    pub fn with_inner<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.state.borrow().io)
    }
}

impl<T: Transport> State<T> {
    /// Sends every TLS record rustls has queued (handshake messages, alerts, encrypted
    /// data): normally one `write` (rustls writes its queue vectored).
    fn send_pending(&mut self) -> io::Result<()> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(());
        };
        while conn.wants_write() {
            if conn.write_tls(&mut self.io)? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }

    /// Processes the records `read_tls` took in, sends what that queued (the handshake's
    /// replies), and notes whether plaintext is waiting. On a TLS error the alert rustls
    /// queued is sent (best effort) and the error returned.
    fn process(&mut self) -> io::Result<()> {
        let conn = self.conn.as_mut().ok_or_else(handshake_not_started)?;
        match conn.process_new_packets() {
            Ok(st) => {
                self.ready = st.plaintext_bytes_to_read() > 0 || st.peer_has_closed();
                // TLS 1.3 records that follow the handshake (the session tickets) wait for
                // the reply to the request that came with the client's `Finished`, and leave
                // in the same write: the client does not wait for them.
                if self.ready
                    && !conn.is_handshaking()
                    && conn.protocol_version() == Some(ProtocolVersion::TLSv1_3)
                {
                    return Ok(());
                }
                self.send_pending()
            }
            Err(e) => {
                self.ready = false;
                let plain = conn.is_handshaking() && self.plain_http();
                Err(self.refuse(e, plain, |st| {
                    let _ = st.send_pending();
                }))
            }
        }
    }

    /// Ends a connection whose TLS failed with `e`: plain HTTP on the TLS port (`plain`) gets
    /// a readable 400 rather than an alert, anything else the alert `send_alert` sends (best
    /// effort). Returns the error to report.
    fn refuse(
        &mut self,
        e: rustls::Error,
        plain: bool,
        send_alert: impl FnOnce(&mut Self),
    ) -> io::Error {
        let peer = self
            .io
            .peer_addr()
            .map_or("-".to_string(), |p| p.to_string());
        if plain {
            log::info!("{peer}: plain HTTP on the TLS port ({e})");
            let _ = self.io.write_all(PLAIN_HTTP_REPLY);
        } else {
            log::info!("{peer}: TLS failed: {e}");
            send_alert(self);
        }
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    /// Whether the connection's first bytes look like an HTTP/1 request line.
    fn plain_http(&self) -> bool {
        looks_like_http(&self.first[..usize::from(self.first_len)])
    }

    /// Plaintext rustls has, if any (`WouldBlock` if none, `Ok(0)` at the end of the stream).
    fn read_plain(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(io::ErrorKind::WouldBlock.into());
        };
        match conn.reader().read(buf) {
            Ok(n) => {
                if n > 0 {
                    // Refreshes `ready`. An error here is rustls's stored one, which the next
                    // read reports (with the alert sent then).
                    self.ready = match conn.process_new_packets() {
                        Ok(st) => st.plaintext_bytes_to_read() > 0 || st.peer_has_closed(),
                        Err(_) => true,
                    };
                }
                Ok(n)
            }
            // The peer closed the TCP stream without `close_notify`: HTTP/1.1 frames its
            // messages itself, so this is the end of the stream like any other.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// One read of ciphertext from the inner transport into rustls (`try_read` if
    /// `nonblocking`, else a blocking read), keeping a copy of the connection's first bytes.
    fn fill(&mut self, nonblocking: bool) -> io::Result<usize> {
        let State {
            io,
            conn,
            hello,
            first,
            first_len,
            ..
        } = self;
        // Into the session, or into the acceptor while the ClientHello is awaited.
        let mut read_tls = |rd: &mut dyn Read| match (conn.as_mut(), hello.as_mut()) {
            (Some(conn), _) => conn.read_tls(rd),
            (None, Some(hello)) => hello.acceptor.read_tls(rd),
            (None, None) => Err(handshake_not_started()),
        };
        match (*first_len < 8, nonblocking) {
            (false, false) => read_tls(io),
            (false, true) => read_tls(&mut TryRead(io)),
            (true, false) => read_tls(&mut Sniff {
                inner: io,
                first,
                first_len,
            }),
            (true, true) => read_tls(&mut Sniff {
                inner: TryRead(io),
                first,
                first_len,
            }),
        }
    }

    /// While the ClientHello is awaited: once the acceptor has it, the session of the
    /// configuration `choose` picks. Ok while more bytes are needed.
    fn accept_hello(&mut self) -> io::Result<()> {
        let Some(hello) = self.hello.as_mut() else {
            return Ok(());
        };
        let accepted = match hello.acceptor.accept() {
            Ok(None) => return Ok(()),
            Ok(Some(accepted)) => accepted,
            Err((e, mut alert)) => {
                self.hello = None;
                let plain = self.plain_http();
                return Err(self.refuse(e, plain, |st| {
                    let _ = alert.write_all(&mut st.io);
                }));
            }
        };
        let Some(config) = (hello.choose)(&accepted.client_hello()) else {
            self.hello = None;
            let name = accepted.client_hello().server_name().map(str::to_owned);
            let e = rustls::Error::General(format!("no site for the name {name:?}"));
            return Err(self.refuse(e, false, |st| {
                let _ = st.io.write_all(&UNRECOGNIZED_NAME_ALERT);
            }));
        };
        self.hello = None;
        match accepted.into_connection(config) {
            Ok(conn) => {
                self.conn = Some(conn);
                self.process()
            }
            Err((e, mut alert)) => Err(self.refuse(e, false, |st| {
                let _ = alert.write_all(&mut st.io);
            })),
        }
    }

    /// Reads plaintext, taking in ciphertext with `fill` (a blocking or non-blocking read of
    /// the inner transport) until some is decrypted or `fill` fails.
    fn read_with(&mut self, buf: &mut [u8], nonblocking: bool) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.read_plain(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return r,
            }
            // `read_tls` takes one read of the inner transport; 0 marks its end of stream,
            // which the next `read_plain` reports.
            let n = self.fill(nonblocking)?;
            if self.conn.is_none() {
                if n == 0 {
                    return Ok(0);
                }
                self.accept_hello()?;
                continue;
            }
            self.process()?;
        }
    }
}

impl<T: Transport> Read for Tls<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.state.get_mut().read_with(buf, false);
        if self.hook.is_some() && self.hooked() {
            return Ok(0);
        }
        r
    }
}

impl<T: Transport> Write for Tls<T> {
    /// Encrypts as much of `buf` as rustls takes (its buffer limit, 64 KiB by default) and
    /// sends the records: a response the connection loop flushes in one `write` normally
    /// leaves in one system call.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let st = self.state.get_mut();
        let conn = st.conn.as_mut().ok_or_else(handshake_not_started)?;
        let n = conn.writer().write(buf)?;
        st.send_pending()?;
        Ok(n)
    }

    /// Encrypts every slice (records of each, as far as rustls's buffer limit takes them)
    /// and sends them all in one write: how an [`crate::outbox::Outbox`] sends many queued
    /// messages at once.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let st = self.state.get_mut();
        let conn = st.conn.as_mut().ok_or_else(handshake_not_started)?;
        let n = conn.writer().write_vectored(bufs)?;
        st.send_pending()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        let st = self.state.get_mut();
        if let Some(conn) = st.conn.as_mut() {
            conn.writer().flush()?;
        }
        st.send_pending()
    }
}

/// Writing or processing before a session exists (before a [`Tls::choosing`] connection's
/// ClientHello).
fn handshake_not_started() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "the TLS handshake has not started",
    )
}
