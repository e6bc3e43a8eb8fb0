//! Where the HTTP/1.1 loop hands a connection to another protocol: after a `101` to the
//! handler's upgrade callback (`run_upgrade`), and at its start to HTTP/2 — as soon as TLS has
//! agreed on `h2` (`alpn_chose_h2`, before any byte of the client's arrives), or when the
//! input opens with the preface (`preface`); a line that is not HTTP/1.x at all
//! (`names_http`) is taken for a broken preface.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::buffered::Shared;
use super::dispatch::Conn;
use crate::response::{UpgradeFn, Upgraded};
use crate::service::Service;
use crate::tls::ALPN_H2;
use crate::transport::Transport;

impl<T, H> Conn<'_, T, H>
where
    T: Transport,
    H: Service + ?Sized,
{
    /// On a connection's first bytes (or before them): whether TLS agreed on `h2` where
    /// HTTP/2 is on; if so the connection is marked for HTTP/2 (`Shared::h2`).
    #[cold]
    pub(super) fn alpn_chose_h2(&self, sh: &mut Shared<T>) -> bool {
        let chose = self.ctl.h2 && sh.io.as_ref().is_some_and(|io| io.alpn() == Some(ALPN_H2));
        sh.h2 |= chose;
        chose
    }

    /// After a 101: hands the raw connection (and what was read past the request) to `f`.
    // Cold and out of line: an upgrade ends the loop, at most once per connection.
    #[cold]
    #[inline(never)]
    pub(super) fn run_upgrade(&self, f: UpgradeFn) {
        let mut sh = self.shared.borrow_mut();
        if sh.flush().is_err() {
            return;
        }
        let Some(io) = sh.io.take() else { return };
        let buffered = sh.pending().to_vec();
        let _ = io.set_read_timeout(None);
        drop(sh);
        // Graceful shutdown reaches the upgraded connection through this (one that began
        // after shutdown did finds it set already).
        let going_away = self.ctl.going_away();
        let up = Upgraded::new(Box::new(io), buffered, going_away);
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(up))) {
            self.settings.report_caught(self.peer(), p);
        }
    }
}

/// How far the start of a connection's input matches the HTTP/2 preface.
pub(super) enum Preface {
    No,
    /// Every byte so far matches, but the preface is not complete.
    Partial,
    Whole,
}

/// Compares the first bytes of a connection with the HTTP/2 client preface (no HTTP/1.1
/// request starts with `PRI * HTTP/2.0`).
pub(super) fn preface(input: &[u8]) -> Preface {
    let p = crate::http2::PREFACE;
    let n = input.len().min(p.len());
    if input[..n] != p[..n] {
        Preface::No
    } else if n < p.len() {
        Preface::Partial
    } else {
        Preface::Whole
    }
}

/// Whether the first line of `input` could be an HTTP/1.x request line, malformed or not:
/// it names an HTTP version (`HTTP/` after a space), or its target is a path, or it is not
/// a line of printable words at all (binary input such as a TLS ClientHello, which gets the
/// usual `400`). What is left is a line of words in another protocol, such as a broken
/// HTTP/2 preface.
pub(super) fn names_http(input: &[u8]) -> bool {
    let line = input.split(|&b| b == b'\n').next().unwrap_or(input);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    memchr::memmem::find(line, b" HTTP/").is_some()
        || line
            .split(|&b| b == b' ')
            .nth(1)
            .is_some_and(|target| target.starts_with(b"/"))
        || !line.iter().all(|&b| (b' '..=b'~').contains(&b))
}
