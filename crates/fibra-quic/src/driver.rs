//! The driver: one fiber per endpoint that owns the UDP socket and runs quinn-proto.
//!
//! Each round it
//! 1. receives what has arrived (`try_recv_many`, a few batches; GRO entries cut back into
//!    datagrams) and feeds each datagram to `Endpoint::handle` with `Instant::now()`,
//!    routing the result: to its connection, to a new server connection, or a stateless
//!    response into the outbox;
//! 2. runs `handle_timeout` for the connections whose deadline has passed;
//! 3. for each connection touched (by a datagram, a timer, or a handle's operation): forwards
//!    endpoint events both ways, turns application events into wake-ups (a stream readable or
//!    writable, streams opened or available, handshake done, connection lost), and collects
//!    its packets with `poll_transmit` (GSO trains up to the socket's limit) while the outbox
//!    has room;
//! 4. unlocks, wakes the fibers collected, and sends the outbox (`try_send_many`), keeping
//!    what the socket's full buffer refused;
//! 5. waits until the socket is readable (or writable, if the outbox is stuck), or a handle
//!    notifies it, or the earliest connection deadline passes (see `timers` for precision).
//!
//! It runs until every `Endpoint` handle is dropped and no connection is left, or until it fails (the socket, or the runtime shutting down). Either
//! way it leaves a reason in the state and wakes every waiter, who then fail with it.

use crate::group::generation_of;
use crate::io::{Inbox, Outbox};
use crate::state::{self, ConnState, Shared, State, Wake, READER, WRITER};
use crate::timers::Timers;
use bytes::BytesMut;
use fibra::net::UdpSocket;
use quinn_proto::{ConnectionError, DatagramEvent, Event, Incoming, StreamEvent};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Receive batches per round before the rest of the round runs (and other fibers get a turn).
const RECV_ROUNDS: usize = 4;

/// Receive errors in a row after which the socket is taken to be broken.
const MAX_RECV_ERRORS: u32 = 64;

/// The most writers a round wakes from [`SendStream::wait_sent`](crate::SendStream::wait_sent)
/// (the rest wait for the next rounds, oldest first). A woken writer makes its next chunk
/// (fibra-http reads 128 KiB of a file) and the round after makes packets of it: four at a
/// time is half a megabyte, which a core's cache still holds when the packets are made.
/// Woken all at once, 32 downloads read 4 MiB before any of it became packets: copying the
/// data into packets took 2.5 times as long (perf, 1 MiB downloads: 13 % of the server's
/// samples against 5 %). Two a round made each `sendmmsg` carry fewer trains, and the
/// kernel's copy of them cost more than the cache saved; eight did worse than four.
const SENT_WAKES_PER_ROUND: usize = 4;

/// The driver fiber's body.
pub(crate) fn run(shared: Arc<Shared>, socket: UdpSocket, gro: bool) {
    let mut stop = Stop {
        shared: &shared,
        why: "the endpoint's driver panicked".into(),
    };
    let mut driver = Driver {
        shared: &shared,
        socket: &socket,
        inbox: Inbox::new(gro),
        outbox: Outbox::default(),
        timers: Timers::default(),
        wake: Vec::new(),
        due: Vec::new(),
        driving: Vec::new(),
        forwarded: Vec::new(),
    };
    stop.why = driver.run();
}

/// On the driver's exit, however it comes (a panic too): records why and wakes everybody.
struct Stop<'a> {
    shared: &'a Shared,
    why: String,
}

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        let mut wake = Vec::new();
        {
            let mut st = self.shared.lock();
            st.failure = Some(std::mem::take(&mut self.why));
            st.closed = true;
            for c in st.conns.values() {
                c.wake_everyone(&mut wake);
            }
        }
        state::wake(&mut wake);
        self.shared.accept.notify_one();
    }
}

struct Driver<'a> {
    shared: &'a Shared,
    socket: &'a UdpSocket,
    inbox: Inbox,
    outbox: Outbox,
    timers: Timers,
    /// Fibers to wake once the lock is released.
    wake: Vec<Wake>,
    /// Connections whose deadline has passed (scratch).
    due: Vec<u64>,
    /// The dirty list being driven (scratch, swapped with `State::dirty`).
    driving: Vec<u64>,
    /// Datagrams the group's other members forwarded (scratch, swapped with
    /// `Shared::forwarded`).
    forwarded: Vec<(SocketAddr, BytesMut)>,
}

impl Driver<'_> {
    /// Rounds until the endpoint is done; returns why it stopped.
    fn run(&mut self) -> String {
        let mut recv_errors = 0;
        loop {
            let mut received = false;
            // Not while an upgrade's new process reads the socket: then what is ours comes
            // through the mailbox.
            let receiving = self.shared.receiving.load(Relaxed);
            for _ in 0..RECV_ROUNDS {
                if !receiving {
                    break;
                }
                match self.inbox.receive(self.socket) {
                    Ok(0) => break,
                    Ok(_) => {
                        recv_errors = 0;
                        received = true;
                        let mut st = self.shared.lock();
                        handle_datagrams(&mut st, self.shared, &mut self.inbox, &mut self.outbox);
                    }
                    // One error is news about one peer (an ICMP report); many in a row, a
                    // broken socket.
                    Err(e) => {
                        recv_errors += 1;
                        if recv_errors > MAX_RECV_ERRORS {
                            return format!("receiving on the socket failed: {e}");
                        }
                        break;
                    }
                }
            }
            if self.shared.membership.is_some() && self.take_forwarded() {
                received = true;
            }
            let (deadline, more, done) = {
                let mut st = self.shared.lock();
                let now = Instant::now();
                self.fire_timers(&mut st, now);
                let more = self.drive(&mut st, now);
                let done = st.released && st.conns.is_empty();
                (self.timers.next(&st), more, done)
            };
            let woke = !self.wake.is_empty();
            state::wake(&mut self.wake);
            if done {
                return "the endpoint was dropped".into();
            }
            let refused = self.outbox.flush(self.socket);
            if refused != 0 {
                self.shared.refused.fetch_add(refused, Relaxed);
            }
            if received || woke || (more && !self.outbox.blocked) {
                // Let the fibers just woken (and any other) run before the next round; the
                // socket may hold more, which the wait below then finds at once.
                fibra::yield_now();
                if more && !self.outbox.blocked {
                    continue;
                }
            }
            if deadline.is_some_and(|at| at <= Instant::now()) {
                continue;
            }
            let waited = if self.outbox.blocked {
                self.socket
                    .writable_or_notified_until(&self.shared.driver, deadline)
            } else if receiving {
                self.socket
                    .readable_or_notified_until(&self.shared.driver, deadline)
            } else {
                let wait = deadline.map_or(Duration::MAX, |at| {
                    at.saturating_duration_since(Instant::now())
                });
                // Notified or timed out: both start a round. Neither, before the deadline:
                // the fiber is being cancelled (`Notify` then returns at once).
                let notified = self.shared.driver.wait_timeout(wait);
                if !notified && deadline.is_none_or(|at| Instant::now() < at) {
                    return "the fibra runtime is shutting down".into();
                }
                Ok(notified)
            };
            match waited {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                Err(e) => return format!("waiting on the socket failed: {e}"),
            }
        }
    }

    /// Feeds quinn-proto the datagrams other members of the group forwarded; returns whether
    /// there were any.
    fn take_forwarded(&mut self) -> bool {
        self.shared.mailbox.take(&mut self.forwarded);
        if self.forwarded.is_empty() {
            return false;
        }
        let mut st = self.shared.lock();
        let now = Instant::now();
        st.forwarded_in += self.forwarded.len() as u64;
        for (from, datagram) in self.forwarded.drain(..) {
            handle_datagram(&mut st, now, from, datagram, &mut self.outbox);
        }
        true
    }

    /// `handle_timeout` for every connection whose deadline has passed.
    fn fire_timers(&mut self, st: &mut State, now: Instant) {
        self.timers.take_due(st, now, &mut self.due);
        for id in self.due.drain(..) {
            if let Some(c) = st.conns.get_mut(&id) {
                c.conn.handle_timeout(now);
            }
            st.mark_dirty(id);
        }
    }

    /// Drives every connection touched since the last round; returns whether some still have
    /// packets to make (the outbox filled up first).
    fn drive(&mut self, st: &mut State, now: Instant) -> bool {
        let max_payload = st.endpoint.config().get_max_udp_payload_size();
        let max_train = Outbox::max_train(
            self.socket,
            usize::try_from(max_payload).unwrap_or(usize::MAX),
        );
        std::mem::swap(&mut self.driving, &mut st.dirty);
        for id in self.driving.drain(..) {
            let Some(c) = st.conns.get_mut(&id) else {
                continue;
            };
            c.dirty = false;
            let cut_short = drive_conn(
                st,
                id,
                now,
                max_train,
                &mut self.outbox,
                self.shared,
                &mut self.wake,
            );
            if cut_short {
                st.mark_dirty(id);
            }
            self.timers.update(st, id);
            if let Some(c) = st.conns.get(&id) {
                if c.drained && !c.held && !c.queued {
                    st.conns.remove(&id);
                }
            }
        }
        let due = st.sent_ready.len().min(SENT_WAKES_PER_ROUND);
        self.wake.extend(st.sent_ready.drain(..due));
        !st.dirty.is_empty() || !st.sent_ready.is_empty()
    }
}

/// Feeds the datagrams `inbox` holds to quinn-proto, but for those another member of the
/// endpoint's group owns: those go to it.
fn handle_datagrams(st: &mut State, shared: &Shared, inbox: &mut Inbox, outbox: &mut Outbox) {
    let now = Instant::now();
    let peer = shared.membership.as_ref().and_then(|m| m.group.peer());
    // A GRO entry's datagrams share its buffer.
    inbox.take(|from, mut data, segment| {
        let size = segment.unwrap_or(data.len()).max(1);
        while !data.is_empty() {
            let datagram = data.split_to(size.min(data.len()));
            if let Some(peer) = &peer {
                if generation_of(&datagram) == Some(peer.generation)
                    && (peer.forward)(from, &datagram)
                {
                    st.to_peer += 1;
                    continue;
                }
            }
            if let Some(m) = &shared.membership {
                if let Some(to) = m.elsewhere(&datagram) {
                    if m.group.forward(to, from, datagram) {
                        st.forwarded_out += 1;
                    }
                    continue;
                }
            }
            handle_datagram(st, now, from, datagram, outbox);
        }
    });
}

/// Feeds one datagram to quinn-proto and routes what comes of it.
pub(crate) fn handle_datagram(
    st: &mut State,
    now: Instant,
    from: SocketAddr,
    data: BytesMut,
    outbox: &mut Outbox,
) {
    let mut buf = outbox.buffer();
    let len = data.len();
    match st.endpoint.handle(now, from, None, None, data, &mut buf) {
        Some(DatagramEvent::ConnectionEvent(handle, event)) => {
            outbox.recycle(buf);
            if let Some(&id) = st.by_handle.get(&handle) {
                if let Some(c) = st.conns.get_mut(&id) {
                    c.conn.handle_event(event);
                }
                st.mark_dirty(id);
            }
        }
        Some(DatagramEvent::NewConnection(incoming)) => {
            new_connection(st, now, incoming, buf, outbox);
        }
        Some(DatagramEvent::Response(t))
            if len < MIN_INITIAL_SIZE && is_version_negotiation(&buf[..t.size]) =>
        {
            // RFC 9000 §5.2.2: "Servers MUST drop smaller packets that specify unsupported
            // versions." quinn-proto 0.11.14 answers any size; a 12-byte datagram got 44
            // bytes back (the `quic_datagram` fuzz target's amplification check).
            outbox.recycle(buf);
        }
        Some(DatagramEvent::Response(t)) => {
            outbox.push(t.destination, buf, t.size, t.segment_size);
        }
        None => outbox.recycle(buf),
    }
}

/// The smallest datagram that may carry a client's first Initial (RFC 9000 §14.1).
const MIN_INITIAL_SIZE: usize = 1200;

/// Whether `packet` is a Version Negotiation packet: a long header with version 0.
fn is_version_negotiation(packet: &[u8]) -> bool {
    packet.len() >= 5 && packet[0] & 0x80 != 0 && packet[1..5] == [0; 4]
}

/// A client's first packet: accept it (the handshake goes on in the connection), refuse it
/// once the endpoint is closed, or, while [`State::retry_bound`] handshakes or more are in
/// progress, answer a client whose address is not validated with a Retry: a flood of
/// Initials from forged addresses then costs one small stateless packet each, not a
/// handshake's state and up to three times its bytes.
fn new_connection(
    st: &mut State,
    now: Instant,
    incoming: Incoming,
    mut buf: Vec<u8>,
    outbox: &mut Outbox,
) {
    if st.closed {
        let t = st.endpoint.refuse(incoming, &mut buf);
        outbox.push(t.destination, buf, t.size, t.segment_size);
        return;
    }
    let incoming = if st.handshakes >= st.retry_bound
        && !incoming.remote_address_validated()
        && incoming.may_retry()
    {
        match st.endpoint.retry(incoming, &mut buf) {
            Ok(t) => {
                st.retries_sent += 1;
                outbox.push(t.destination, buf, t.size, t.segment_size);
                return;
            }
            // Not retryable after all (`may_retry` said it was): accept it.
            Err(e) => e.into_incoming(),
        }
    } else {
        incoming
    };
    match st.endpoint.accept(incoming, now, &mut buf, None) {
        Ok((handle, conn)) => {
            outbox.recycle(buf);
            st.insert(handle, conn, None, false);
        }
        Err(e) => match e.response {
            Some(t) => outbox.push(t.destination, buf, t.size, t.segment_size),
            None => outbox.recycle(buf),
        },
    }
}

/// One connection's events and packets; returns whether it has more packets than the outbox
/// took.
pub(crate) fn drive_conn(
    st: &mut State,
    id: u64,
    now: Instant,
    max_train: usize,
    outbox: &mut Outbox,
    shared: &Shared,
    wake: &mut Vec<Wake>,
) -> bool {
    let State {
        endpoint,
        conns,
        by_handle,
        incoming,
        closed,
        handshakes,
        sent_ready,
        ..
    } = st;
    let Some(c) = conns.get_mut(&id) else {
        return false;
    };
    if c.drained {
        return false;
    }
    forward_endpoint_events(endpoint, c);
    while let Some(event) = c.conn.poll() {
        app_event(c, event, wake);
    }
    // Ready for `accept` once the handshake is done (even if the connection was lost right
    // after, in the same round: the application sees it closed), or, where the server took
    // the client's 0-RTT (`Config::zero_rtt`), as soon as its early data may arrive; unless
    // the endpoint stopped accepting.
    let early = c.conn.has_0rtt() && c.conn.is_handshaking() && c.error.is_none();
    if (c.connected || early) && !c.announced && c.conn.side().is_server() {
        c.announced = true;
        if *closed {
            c.conn.close(now, 0u32.into(), bytes::Bytes::new());
            c.error.get_or_insert(ConnectionError::LocallyClosed);
        } else {
            incoming.push_back(id);
            c.queued = true;
            wake.push(Wake::Notify(Arc::clone(&shared.accept)));
        }
    }
    let mut cut_short = false;
    loop {
        if outbox.full() {
            cut_short = true;
            break;
        }
        let mut buf = outbox.buffer();
        match c.conn.poll_transmit(now, max_train, &mut buf) {
            Some(t) => outbox.push(t.destination, buf, t.size, t.segment_size),
            None => {
                outbox.recycle(buf);
                break;
            }
        }
    }
    if !c.sent_watch.is_empty() {
        take_sent_watchers(c, sent_ready);
    }
    forward_endpoint_events(endpoint, c);
    if c.handshaking && !c.conn.is_handshaking() {
        // Connected, or lost (closed, timed out) before it was: either way no longer a
        // handshake in progress.
        c.handshaking = false;
        *handshakes -= 1;
    }
    if c.conn.is_drained() {
        // quinn-proto has forgotten the handle (its `Drained` event went to the endpoint);
        // it may give the number to a new connection.
        c.drained = true;
        by_handle.remove(&c.handle);
    }
    cut_short
}

/// Queues for waking the writers in [`SendStream::wait_sent`](crate::SendStream::wait_sent)
/// whose stream's unsent bytes fell to their mark (or that have nothing more to wait for),
/// once packets were made.
fn take_sent_watchers(c: &mut ConnState, sent_ready: &mut VecDeque<Wake>) {
    let mut watch = std::mem::take(&mut c.sent_watch);
    watch.retain(|&(id, mark)| {
        let waiting = c.unsent_above(id, mark);
        if !waiting {
            sent_ready.extend(c.stream_waiter(id, WRITER));
        }
        waiting
    });
    c.sent_watch = watch;
}

/// Hands the connection's endpoint events to the endpoint, and the endpoint's answers back.
fn forward_endpoint_events(endpoint: &mut quinn_proto::Endpoint, c: &mut ConnState) {
    while let Some(event) = c.conn.poll_endpoint_events() {
        if let Some(answer) = endpoint.handle_event(c.handle, event) {
            c.conn.handle_event(answer);
        }
    }
}

/// Turns one application event into state and wake-ups.
fn app_event(c: &mut ConnState, event: Event, wake: &mut Vec<Wake>) {
    match event {
        Event::HandshakeDataReady | Event::DatagramReceived | Event::DatagramsUnblocked => {}
        Event::Connected => {
            c.connected = true;
            wake.push(Wake::Notify(Arc::clone(&c.waiters.handshake)));
        }
        Event::ConnectionLost { reason } => {
            c.error.get_or_insert(reason);
            c.wake_everyone(wake);
        }
        Event::Stream(StreamEvent::Opened { dir }) => {
            // Opened before the handshake is done: by 0-RTT data, which may be a replay.
            let early = c.conn.is_handshaking();
            while let Some(stream) = c.conn.streams().accept(dir) {
                if early {
                    c.early.insert(stream);
                }
                c.incoming(dir).push_back(stream);
            }
            wake.push(Wake::Notify(Arc::clone(c.waiters.accept(dir))));
        }
        Event::Stream(StreamEvent::Available { dir }) => {
            wake.push(Wake::Notify(Arc::clone(c.waiters.open(dir))));
        }
        Event::Stream(StreamEvent::Readable { id }) => {
            wake.extend(c.stream_waiter(id, READER));
        }
        Event::Stream(StreamEvent::Writable { id }) => {
            wake.extend(c.stream_waiter(id, WRITER));
        }
        Event::Stream(StreamEvent::Finished { id } | StreamEvent::Stopped { id, .. }) => {
            wake.extend(c.stream_waiter(id, WRITER));
            wake.push(Wake::Notify(Arc::clone(&c.waiters.acked)));
        }
    }
}
