//! The answers the connection loop gives itself, in place of the application's: `408` for a
//! head (or body) that does not arrive in time, `431` for one too large, the body errors
//! (`413`, `400`), `500` for a handler that panicked. Each is reported to the error hook,
//! logged, and ends the connection (lingering close). All out of line: rare paths of the loop.

use std::rc::Rc;

use http::StatusCode;

use super::buffered::Shared;
use super::decode::BodyError;
use super::dispatch::Conn;
use super::encode::put_error;
use super::log::{log_rejected, log_rejected_request};
use crate::error::ProtocolError;
use crate::parse::RequestHead;
use crate::response::{error_response, Response};
use crate::service::Service;
use crate::transport::Transport;

impl<T, H> Conn<'_, T, H>
where
    T: Transport,
    H: Service + ?Sized,
{
    /// The head in the read buffer outgrew its limit: answers `431`.
    #[cold]
    #[inline(never)]
    pub(super) fn head_too_large(&self, sh: &mut Shared<T>) {
        let e = ProtocolError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "request head too large",
        );
        self.settings.report_rejected(sh.peer, e);
        log_rejected(self.settings, sh.peer, sh.pending(), &e, false);
        put_error(&mut sh.wbuf, &e, self.server(), false);
        sh.linger();
    }

    /// Waiting for input timed out: answers 408 if part of a head has arrived; an idle (or
    /// silent new) connection just ends.
    // Cold: a timeout ends a connection, at most once.
    #[cold]
    pub(super) fn read_timed_out(&self, sh: &mut Shared<T>) {
        if sh.has_pending() {
            let e = ProtocolError::new(StatusCode::REQUEST_TIMEOUT, "request head timeout");
            self.settings.report_rejected(sh.peer, e);
            log_rejected(self.settings, sh.peer, sh.pending(), &e, false);
            put_error(&mut sh.wbuf, &e, self.server(), false);
            sh.linger();
        }
    }

    /// The handler panicked: reports it and answers 500 (rare paths of [`Conn::respond`] are out
    /// of line so the code a request runs stays together).
    #[cold]
    #[inline(never)]
    pub(super) fn handler_panicked(&self, p: Box<dyn std::any::Any + Send>) -> Response {
        self.settings.report_caught(self.peer(), p);
        error_response(StatusCode::INTERNAL_SERVER_ERROR, "internal server error")
    }

    /// Reading the request body failed while the handler ran: answers the error (the handler's
    /// response is dropped) and ends the connection.
    // Cold and out of line: a rare path of `respond` (see `handler_panicked`).
    #[cold]
    #[inline(never)]
    pub(super) fn body_failed(
        &self,
        sh: &mut Shared<T>,
        e: BodyError,
        is_head: bool,
        logged: Option<&Rc<RequestHead>>,
    ) {
        let e = match e {
            BodyError::Protocol(e) => e,
            BodyError::Timeout => {
                ProtocolError::new(StatusCode::REQUEST_TIMEOUT, "request body timeout")
            }
            BodyError::Io => {
                let _ = sh.flush();
                return;
            }
        };
        self.settings.report_rejected(sh.peer, e);
        if let Some(req) = logged {
            log_rejected_request(self.settings, sh.peer, req, &e, is_head);
        }
        put_error(&mut sh.wbuf, &e, self.server(), is_head);
        sh.linger();
    }
}
