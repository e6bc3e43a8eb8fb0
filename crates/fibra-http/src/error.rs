//! [`ProtocolError`]: a request the server refuses, with the status to answer. Its own module
//! because both the parser (which finds them) and the settings (whose error hook reports them)
//! name it.

use std::fmt;

use http::StatusCode;

/// A request the server refuses to process: the status to answer with and a short reason.
///
/// Every protocol error closes the connection after the answer (`Connection: close`), because
/// the server can no longer tell where the next request would start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolError {
    status: StatusCode,
    reason: &'static str,
}

impl ProtocolError {
    /// An error answered with `status`; `reason` is for logs and the response body.
    pub const fn new(status: StatusCode, reason: &'static str) -> Self {
        ProtocolError { status, reason }
    }
    pub(crate) const fn bad(reason: &'static str) -> Self {
        Self::new(StatusCode::BAD_REQUEST, reason)
    }
    /// The status code to answer with (400, 408, 413, 414, 431, 501 or 505).
    pub fn status(&self) -> StatusCode {
        self.status
    }
    /// A short human-readable reason, e.g. `"invalid Content-Length"`.
    pub fn reason(&self) -> &'static str {
        self.reason
    }
    /// Whether the connection must be closed after answering. Always true: after a framing
    /// error the position of the next request in the byte stream is unknown.
    pub fn closes_connection(&self) -> bool {
        true
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason, self.status)
    }
}

impl std::error::Error for ProtocolError {}
