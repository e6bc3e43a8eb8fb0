//! [`Tls`] as a [`Transport`] of the connection loop: timeouts, the peer and shutdown are the
//! inner transport's; readiness is the inner transport's except for plaintext rustls already
//! holds; what TLS agreed on (ALPN, SNI) is the session's; its capabilities (the head before a
//! file, the file itself, the last write) encrypt what the plain ones would send.

use super::*;

impl<T: Transport> Transport for Tls<T> {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.state.borrow().io.set_read_timeout(timeout)
    }

    fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.state.borrow().io.set_write_timeout(timeout)
    }

    /// Shutting the writing side sends `close_notify` first (best effort).
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        let mut st = self.state.borrow_mut();
        if matches!(how, Shutdown::Write | Shutdown::Both) {
            if let Some(conn) = st.conn.as_mut() {
                conn.send_close_notify();
            }
            let _ = st.send_pending();
        }
        st.io.shutdown(how)
    }

    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
        self.state.borrow().io.shutdown_handle()
    }

    fn peer_addr(&self) -> Option<SocketAddr> {
        self.state.borrow().io.peer_addr()
    }

    /// The session's ALPN protocol, once the handshake is done.
    fn alpn(&self) -> Option<&[u8]> {
        self.agreed()?.alpn.as_deref()
    }

    /// The session's SNI name, once the handshake is done.
    fn server_name(&self) -> Option<&str> {
        self.agreed()?.server_name.as_deref()
    }

    /// Plaintext rustls holds, else a non-blocking read of ciphertext from the inner
    /// transport, processed: plaintext, or `WouldBlock` (a partial record, or the handshake
    /// still under way).
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.state.get_mut().read_with(buf, true);
        if self.hook.is_some() && self.hooked() {
            return Ok(0);
        }
        r
    }

    fn wait_readable(&self) -> io::Result<()> {
        let st = self.state.borrow();
        if st.ready {
            return Ok(());
        }
        st.io.wait_readable()
    }

    /// At once (false) when rustls already holds plaintext, else the inner transport's wait.
    fn wait_readable_or(&self, notify: &Notify) -> io::Result<bool> {
        let st = self.state.borrow();
        if st.ready {
            return Ok(false);
        }
        st.io.wait_readable_or(notify)
    }

    /// The inner transport's stackless wait, or [`Wait::ready`] when rustls already holds
    /// plaintext (or has seen the end of the stream): the next step runs at once, and a TLS
    /// connection never waits on its stack.
    fn when_readable(&self) -> Option<Wait> {
        let st = self.state.borrow();
        if st.ready {
            return Some(Wait::ready());
        }
        st.io.when_readable()
    }

    type Caps = Self;

    fn capabilities(&mut self) -> Option<&mut Self> {
        Some(self)
    }
}

/// The inner transport's cork; files read and encrypted in large pieces (no `sendfile`: the
/// bytes must pass through rustls); the last records and `close_notify` in one write.
impl<T: Transport> Capabilities for Tls<T> {
    /// The inner transport's cork: a response head's record and the file records after it
    /// leave in full packets, as over plain TCP.
    fn set_cork(&mut self, on: bool) -> io::Result<()> {
        transport::set_cork(&mut self.state.get_mut().io, on)
    }

    /// Corks the inner transport, then encrypts and sends the head.
    fn write_before_file(&mut self, head: &[u8]) -> io::Result<bool> {
        let _ = self.set_cork(true);
        self.write_all(head)?;
        Ok(true)
    }

    /// Reads the file in 256 KiB pieces and encrypts each into 16 records that leave in one
    /// write (rustls's default 64 KiB buffer limit is lifted meanwhile): four writes per MiB
    /// instead of sixteen.
    fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<u64> {
        const PIECE: usize = 256 * 1024;
        let limit = |tls: &mut Self, limit| {
            if let Some(conn) = tls.state.get_mut().conn.as_mut() {
                conn.set_buffer_limit(limit);
            }
        };
        limit(self, None);
        let sent = transport::copy_file(self, file, offset, len, PIECE);
        limit(self, Some(DEFAULT_BUFFER_LIMIT));
        sent
    }

    /// Encrypts `last`, queues `close_notify` behind it and sends all in one write, then
    /// shuts the inner transport's writing side.
    fn write_last(&mut self, last: &[u8]) -> io::Result<()> {
        let st = self.state.get_mut();
        if st.conn.is_none() {
            // No session yet: nothing can be sent in it.
            return st.io.shutdown(Shutdown::Write);
        }
        let mut rest = last;
        while !rest.is_empty() {
            let n = match st.conn.as_mut() {
                Some(conn) => conn.writer().write(rest)?,
                None => 0,
            };
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            rest = &rest[n..];
            if !rest.is_empty() {
                st.send_pending()?;
            }
        }
        if let Some(conn) = st.conn.as_mut() {
            conn.send_close_notify();
        }
        st.send_pending()?;
        st.io.shutdown(Shutdown::Write)
    }
}
