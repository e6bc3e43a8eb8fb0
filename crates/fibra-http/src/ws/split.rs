//! [`split`]: a WebSocket whose connection fiber reads ([`Connection::run`]) while other
//! fibers send ([`Sender`]) through the connection's bounded [`Outbox`].

use std::io;
use std::time::{Duration, Instant};

use tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tungstenite::protocol::frame::Frame;

use super::{Error, Message, WebSocket};
use crate::outbox::{Outbox, OutboxSender};

/// Sends messages on a WebSocket from any fiber or thread; clones share the connection. The
/// frames are encoded by the caller and queued in the connection's [`Outbox`]; its fiber
/// ([`Connection::run`]) writes them.
#[derive(Clone, Debug)]
pub struct Sender {
    outbox: OutboxSender,
    timeout: Option<Duration>,
}

impl Sender {
    /// Queues `msg` (text, binary, ping, pong). Waits while the connection's queue is full, up
    /// to the send timeout given to [`split`] (then `TimedOut`; a zero timeout never waits);
    /// `BrokenPipe` once the connection has ended.
    pub fn send(&self, msg: Message) -> io::Result<()> {
        let frame = match msg {
            Message::Text(t) => Frame::message(t, OpCode::Data(Data::Text), true),
            Message::Binary(b) => Frame::message(b, OpCode::Data(Data::Binary), true),
            Message::Ping(p) => Frame::ping(p),
            Message::Pong(p) => Frame::pong(p),
            Message::Close(_) | Message::Frame(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a Sender sends data and ping/pong messages; the connection closes itself",
                ))
            }
        };
        let mut bytes = Vec::with_capacity(frame.len());
        frame.format(&mut bytes).map_err(io::Error::other)?;
        self.outbox.send(bytes, self.timeout)
    }

    /// Gives the client up (too slow to keep): what is queued is dropped and the connection
    /// ends at once.
    pub fn abort(&self) {
        self.outbox.abort();
    }

    /// Whether the connection has ended (or was aborted).
    pub fn is_closed(&self) -> bool {
        self.outbox.is_closed()
    }
}

/// The connection's side of a [`split`] WebSocket: [`Connection::run`] in the connection's
/// fiber.
pub struct Connection {
    socket: WebSocket,
    outbox: Outbox,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("outbox", &self.outbox)
            .finish_non_exhaustive()
    }
}

/// Splits `socket` into its [`Connection`] (run it in the connection's fiber) and a
/// [`Sender`] for other fibers. At most `queue_bytes` of frames wait to be written (one frame
/// is always taken); a sender waits up to `send_timeout` for room.
pub fn split(
    socket: WebSocket,
    queue_bytes: usize,
    send_timeout: Option<Duration>,
) -> (Connection, Sender) {
    // The connection's fiber waits for input, queued frames and the server's shutdown at
    // once: the outbox wakes it through the shutdown signal's notification.
    let (outbox, tx) = match socket.get_ref().going_away_notify() {
        Some(notify) => Outbox::with_notify(queue_bytes, notify),
        None => Outbox::new(queue_bytes),
    };
    (
        Connection { socket, outbox },
        Sender {
            outbox: tx,
            timeout: send_timeout,
        },
    )
}

impl Connection {
    /// Another sender.
    pub fn sender(&self, send_timeout: Option<Duration>) -> Sender {
        Sender {
            outbox: self.outbox.sender(),
            timeout: send_timeout,
        }
    }

    /// Runs the connection until it ends: hands every text and binary message to
    /// `on_message`, writes what the senders queue (between whole frames), answers pings,
    /// completes the close handshake, and closes with the right code on bad input
    /// ([`super::fail`]). Like [`WebSocket::read`], it pings an idle peer (and closes one
    /// that does not answer) and answers the server's shutdown with `1001`, after which what
    /// senders queue is dropped. Returns when the client has closed, the connection failed,
    /// or a sender aborted it; senders then get `BrokenPipe`.
    pub fn run(mut self, mut on_message: impl FnMut(Message)) {
        self.socket.get_mut().set_nonblocking(true);
        let mut deadline = self.deadline();
        loop {
            if self.socket.going_away_now() {
                // Nothing may follow our close frame: what senders queue is dropped.
                self.outbox.close();
                if self
                    .socket
                    .goodbye(CloseCode::Away, "server shutting down")
                    .is_err()
                {
                    return;
                }
            }
            if !self.socket.said_goodbye
                && (self.outbox.is_closed() || self.outbox.flush_to(self.socket.get_mut()).is_err())
            {
                return;
            }
            match self.socket.inner.read() {
                Ok(msg) => {
                    self.socket.heard();
                    deadline = self.deadline();
                    match msg {
                        Message::Text(_) | Message::Binary(_) => on_message(msg),
                        // The client closed (or answered our close): send the framing's
                        // close reply and end. Nothing may follow our close frame, so what
                        // senders still queue is dropped.
                        Message::Close(_) => {
                            self.outbox.close();
                            let _ = self.socket.inner.flush();
                            return;
                        }
                        _ => {}
                    }
                }
                Err(Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Pongs and a close reply the framing queued go out before the wait.
                    match self.socket.inner.flush() {
                        Ok(()) => {}
                        Err(Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => return,
                    }
                    match self.wait(deadline) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                            if self.socket.on_idle().is_err() {
                                return;
                            }
                            deadline = self.deadline();
                        }
                        Err(_) => return,
                    }
                }
                Err(e) => return super::fail(&mut self.socket, &e),
            }
        }
    }

    /// When the current wait for the peer runs out (`None`: never).
    fn deadline(&self) -> Option<Instant> {
        let wait = self.socket.keepalive.wait()?;
        fibra::time::now().checked_add(wait)
    }

    /// Waits for input, queued frames or the server's shutdown, until `deadline` (then
    /// `TimedOut`).
    fn wait(&self, deadline: Option<Instant>) -> io::Result<()> {
        let io = self.socket.get_ref();
        let left = deadline.map(|d| d.saturating_duration_since(fibra::time::now()));
        if left == Some(Duration::ZERO) {
            return Err(io::ErrorKind::TimedOut.into());
        }
        io.set_read_timeout(left)?;
        self.outbox
            .wait_with(|notify| io.wait_readable_or(notify))
            .map(drop)
    }
}
