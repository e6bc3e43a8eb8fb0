//! The dispatch loop, HTTP/1.1's protocol loop: answer every complete request that has
//! arrived (`serve_ready`, `serve_buffered`), run the handler and send its response
//! (`respond`, `send`), and set the read timeout for what comes next (`arm_read`). One burst
//! of it runs between two waits of the idle stage. The server's own answers are in
//! `refuse.rs`, the access-log entries in `log.rs`, the hand-offs to an upgrade or HTTP/2 in
//! `switch.rs`.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use http::{Method, StatusCode, Version};

use super::buffered::{read_sizes, HotBuffers, Shared};
use super::decode::BodyState;
use super::encode::{bad_101, put_error, write_response};
use super::log::log_rejected;
use super::switch::{names_http, preface, Preface};
use super::ConnCtl;
use crate::body::{Body, BodySource};
use crate::chunked::ChunkedDecoder;
use crate::parse::{parse_head_cached, BodyKind, Head, HeadCache, RequestHead};
use crate::request::Request;
use crate::response::{Kind, Response, UpgradeFn};
use crate::service::Service;
use crate::settings::Settings;
use crate::transport::{is_timeout, Transport};

thread_local! {
    /// The previous request's parse on this thread (one per worker), reused for identical
    /// targets and fields. Per worker rather than per connection: keep-alive clients of one
    /// site repeat their Host, paths and fields across connections too, and a cache that
    /// every connection shares stays in the CPU caches, where one per connection would be
    /// cold memory by the time its next request comes.
    static HEAD_CACHE: RefCell<HeadCache> = RefCell::new(HeadCache::default());
}

/// What answering a connection's requests needs besides the requests themselves. Kept to one
/// cache line: the shared stack reads it from the connection's own stack.
#[repr(align(64))]
pub(super) struct Conn<'a, T, H: ?Sized> {
    pub(super) shared: &'a Rc<RefCell<Shared<T>>>,
    /// The same state, as the source a request's `Body` reads from.
    pub(super) src: &'a Rc<RefCell<dyn BodySource>>,
    pub(super) settings: &'a Settings,
    pub(super) handler: &'a H,
    pub(super) ctl: &'a ConnCtl<'a>,
}

impl<T, H> Conn<'_, T, H>
where
    T: Transport,
    H: Service + ?Sized,
{
    pub(super) fn peer(&self) -> Option<SocketAddr> {
        self.shared.borrow().peer
    }

    pub(super) fn server(&self) -> Option<&str> {
        self.settings.server_header.as_deref()
    }

    /// Reads what has arrived (without waiting), answers every complete request and sends the
    /// responses; repeats while reads bring more. Returns false when the connection must end,
    /// true when it has to wait for input (with the read timeout set for that wait).
    // Forced inline into the keep-alive loop (`Connection::serve`), as LLVM chose to before
    // the body sinks: out of line, a pipelined request costs ~15 more instructions (2 %) in
    // saves, restores and reloads across the call (bench/arch_gate.sh). See also
    // `Connection::burst_on_shared_stack`.
    #[inline(always)]
    pub(super) fn serve_ready(&self) -> bool {
        let shared = self.shared;
        let _hot = HotBuffers::lend(shared, self.settings);
        loop {
            let drained = {
                let mut sh = shared.borrow_mut();
                if !sh.make_room(read_sizes(self.settings).1) {
                    self.head_too_large(&mut sh);
                    return false;
                }
                let room = sh.room();
                match sh.try_read_in() {
                    Ok(0) => return false,
                    Ok(n) => {
                        self.ctl.idle.store(false, Ordering::Relaxed);
                        n < room
                    }
                    // Nothing yet: wait, unless TLS just agreed on `h2` (then HTTP/2 starts
                    // now, its SETTINGS first, rather than when the preface arrives).
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        return !(sh.first && self.alpn_chose_h2(&mut sh));
                    }
                    // A transport whose `try_read` waits (see `Transport::try_read`).
                    Err(e) if is_timeout(&e) => {
                        self.read_timed_out(&mut sh);
                        return false;
                    }
                    Err(_) => return false,
                }
            };
            if !self.serve_buffered() || !self.arm_read() {
                return false;
            }
            // A short read took everything there was: wait rather than try again.
            if drained {
                return true;
            }
        }
    }

    /// After answering what was complete: sends the responses and sets the read timeout for
    /// what comes next (idle between requests, else what is left of the head deadline).
    /// False when the connection must end instead (a failed write, the head deadline
    /// passed: 408).
    ///
    /// A shutdown that began since the last response went out does not end the connection
    /// here: that response told the client it may send another request, and closing now
    /// would reset the connection under it. The connection waits as an idle one; the next
    /// request is answered with `Connection: close`, and the server closes the connection if
    /// it stays idle (at once for `shutdown`, after the idle grace for `drain`).
    fn arm_read(&self) -> bool {
        let Conn { settings, ctl, .. } = *self;
        let mut sh = self.shared.borrow_mut();
        if sh.flush().is_err() {
            return false;
        }
        let partial = sh.has_pending();
        if !partial && !sh.first {
            ctl.idle.store(true, Ordering::Relaxed);
            sh.set_read_timeout(settings.idle_timeout);
        } else {
            let now = Instant::now();
            let deadline = *sh
                .head_deadline
                .get_or_insert(now + settings.header_timeout);
            if now >= deadline {
                self.read_timed_out(&mut sh);
                return false;
            }
            sh.set_read_timeout(deadline - now);
        }
        true
    }

    /// Answers the complete requests at the front of the read buffer. Returns false when the
    /// connection must end, true when it needs more input.
    fn serve_buffered(&self) -> bool {
        let Conn {
            shared, settings, ..
        } = *self;
        loop {
            let (head, seq) = {
                let mut sh = shared.borrow_mut();
                if !sh.has_pending() {
                    return true;
                }
                if sh.first && self.ctl.h2 {
                    if self.alpn_chose_h2(&mut sh) {
                        return false;
                    }
                    match preface(sh.pending()) {
                        Preface::No => {}
                        Preface::Partial => return true,
                        Preface::Whole => {
                            sh.h2 = true;
                            return false;
                        }
                    }
                }
                let cache: *const RefCell<HeadCache> = HEAD_CACHE.with(|c| c as *const _);
                // SAFETY: `with` returned, so this thread's value is alive; it lives until the
                // thread's thread-locals are destroyed, which cannot happen during this call on
                // this thread, and the reference is only used for the parse below. (Parsed
                // outside `with`, the head is not copied out of the closure's result.)
                let cache = unsafe { &*cache };
                let parsed = parse_head_cached(sh.pending(), settings, &mut cache.borrow_mut());
                match parsed {
                    Ok(Some((head, n))) => {
                        sh.consume(n);
                        sh.head_deadline = None;
                        if sh.first {
                            sh.first = false;
                            // Known only now behind a PROXY protocol header (see
                            // `crate::proxy_protocol`): the client's, not the balancer's.
                            sh.peer = sh.io.as_ref().and_then(|io| io.peer_addr());
                            sh.server_name = sh
                                .io
                                .as_ref()
                                .and_then(|io| io.server_name().map(Arc::from));
                        }
                        // The request's body state, in the same borrow as the parse.
                        let seq = begin_request(&mut sh, &head, settings);
                        (head, seq)
                    }
                    Ok(None) => return true,
                    Err(e) => {
                        settings.report_rejected(sh.peer, e);
                        if sh.first && self.ctl.h2 && !names_http(sh.pending()) {
                            // Not HTTP/1.x at all, where HTTP/2 is on: most likely a broken
                            // HTTP/2 preface, which RFC 9113 §3.4 makes a connection error. An
                            // HTTP/1.1 answer would mean nothing to such a client: close.
                            return false;
                        }
                        log_rejected(settings, sh.peer, sh.pending(), &e, false);
                        put_error(&mut sh.wbuf, &e, self.server(), false);
                        sh.linger();
                        return false;
                    }
                }
            };
            if !self.respond(head, seq) {
                return false;
            }
        }
    }

    /// Runs the handler for one parsed request (number `seq`, from [`begin_request`]) and
    /// writes (or buffers) its response. Returns whether the connection goes on to the next
    /// request.
    ///
    /// Inlined into the read loop, so the parsed head reaches it without being copied into a
    /// call's argument. A value built field by field and then copied whole is read back with
    /// wider loads than the stores that wrote it, and such a load waits until those stores
    /// have reached the cache (store-to-load forwarding fails): these copies of the head and
    /// of the response were the most expensive instructions of a pipelined request.
    #[inline(always)]
    fn respond(&self, head: Head, seq: u64) -> bool {
        let Conn {
            shared,
            src,
            settings,
            handler,
            ..
        } = *self;
        // 2. Run the handler.
        let is_head = head.method == Method::HEAD;
        let http11 = head.version == Version::HTTP_11;
        // The request as received, for the access log (only when one is on; a reference
        // count: the head is shared with the request).
        let logged = settings.logs_access().then(|| head.request.clone());
        let logged = logged.as_ref();
        // (Shutdown is looked at after the handler ran.)
        let client_closes = !head.keep_alive;
        let mut close = client_closes || !settings.keep_alive;
        let req = Request::from_head(head.request, Body::from_conn(src.clone(), seq));
        // The response is written inside the same `catch_unwind` as the handler runs in: a
        // response that crossed it would be copied out of its return slot, then again into
        // `write_response`, and those copies of a just-built value stall on store forwarding.
        let mut returned = false;
        let sent = catch_unwind(AssertUnwindSafe(|| {
            let resp = handler.call(req);
            returned = true;
            self.send(resp, is_head, http11, &mut close, logged)
        }));
        let sent = match sent {
            Ok(sent) => sent,
            Err(p) if !returned => {
                close = true;
                let resp = self.handler_panicked(p);
                self.send_cold(resp, is_head, http11, &mut close, logged)
            }
            // Writing a response panicked (a bug): what was composed may be partial.
            Err(p) => {
                settings.report_caught(self.peer(), p);
                return false;
            }
        };
        let Some(upgrade) = sent else {
            return false;
        };
        if let Some(f) = upgrade {
            self.run_upgrade(f);
            return false;
        }
        let mut sh = shared.borrow_mut();
        if !close && !matches!(sh.body, BodyState::Done) && !sh.drain(settings.max_drain_bytes) {
            close = true;
        }
        if close {
            if client_closes && !sh.has_pending() && matches!(sh.body, BodyState::Done) {
                sh.close_now();
            } else {
                sh.linger();
            }
            return false;
        }
        true
    }

    /// Decides the connection's fate once the handler returned, then writes its response.
    /// Returns the upgrade callback of a 101, or `None` if the connection ends
    /// (the request body failed, or writing did). Makes the access-log entry if `logged`.
    // Forced inline into `respond`, for the reason given there (no copy of the response).
    #[inline(always)]
    fn send(
        &self,
        mut resp: Response,
        is_head: bool,
        http11: bool,
        close: &mut bool,
        logged: Option<&Rc<RequestHead>>,
    ) -> Option<Option<UpgradeFn>> {
        let Conn {
            shared,
            settings,
            ctl,
            ..
        } = *self;
        {
            let mut sh = shared.borrow_mut();
            if let Some(e) = sh.body_error.take() {
                self.body_failed(&mut sh, e, is_head, logged);
                return None;
            }
            if !*close && !matches!(sh.body, BodyState::Done) {
                let buffered = sh.pending().len() as u64;
                *close = sh.continue_pending
                    || matches!(sh.body, BodyState::Length(n) if n.saturating_sub(buffered) > settings.max_drain_bytes);
            }
        }
        // Shutdown may have begun while the handler ran. (A `Connection: close` of the
        // handler's is found while composing the head: `write_response`.)
        if ctl.shutting_down.load(Ordering::SeqCst) {
            *close = true;
        }
        let status = resp.status();
        if status == StatusCode::SWITCHING_PROTOCOLS
            && !matches!(resp.body().kind, Kind::Upgrade(_))
        {
            *close = true;
            bad_101(&mut resp);
        }
        match write_response(shared, &mut resp, is_head, http11, settings, ctl, close) {
            Ok(upgrade) => {
                if let Some(req) = logged {
                    self.log_access(req, &resp, is_head, false);
                }
                if resp.shed() {
                    std::mem::forget(resp);
                }
                Some(upgrade)
            }
            Err(_) => {
                if let Some(req) = logged {
                    self.log_access(req, &resp, is_head, true);
                }
                None
            }
        }
    }

    /// [`Conn::send`] for the rare responses made by the server itself (out of line).
    #[cold]
    #[inline(never)]
    fn send_cold(
        &self,
        resp: Response,
        is_head: bool,
        http11: bool,
        close: &mut bool,
        logged: Option<&Rc<RequestHead>>,
    ) -> Option<Option<UpgradeFn>> {
        self.send(resp, is_head, http11, close, logged)
    }
}

/// Readies the connection's state for the request just parsed (its body, `Expect:
/// 100-continue`, a fresh access-log count) and returns the request's number, which its
/// [`Body`] carries. Called in the parse's borrow of the state: one borrow fewer a request.
#[inline(always)]
fn begin_request<T: Transport>(sh: &mut Shared<T>, head: &Head, settings: &Settings) -> u64 {
    sh.seq += 1;
    match head.body {
        // The previous request's body is done (read or drained) unless it ended the
        // connection: most requests have none, and the state stays as it is.
        BodyKind::Empty => {
            if !matches!(sh.body, BodyState::Done) {
                sh.body = BodyState::Done;
            }
        }
        BodyKind::Length(n) => sh.body = BodyState::Length(n),
        BodyKind::Chunked => {
            sh.body = BodyState::Chunked(Box::new(ChunkedDecoder::new(sh.max_body, sh.max_trailer)))
        }
    }
    sh.continue_pending = head.expect_continue;
    sh.body_error = None;
    if settings.logs_access() {
        sh.body_sent = None;
    }
    sh.seq
}
