//! The in-memory transport every connection-level fuzz target feeds (`#[path]`-included by
//! each): the client's bytes handed out a piece at a time, what the server writes collected.
//! A target turns on the behaviours it exercises with the builder methods (each uses some).
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fibra::fiber::Wait;
use fibra::sync::Notify;
use fibra_http::transport::{NoCapabilities, ShutdownHandle};
use fibra_http::Transport;

/// See the module docs.
pub struct Mock {
    input: Vec<u8>,
    pos: usize,
    /// Bytes handed out per read, at most.
    piece: usize,
    reads: u32,
    /// Bit i set: read number i (of the first 8) times out instead.
    timeouts: u8,
    /// Reads at the end of the input before the target calls it a loop (`None`: any).
    max_eof_reads: Option<u32>,
    eof_reads: u32,
    /// What the server wrote.
    pub out: Arc<Mutex<Vec<u8>>>,
    /// Bytes accepted per write, at most: short writes exercise the callers' loops.
    write_piece: usize,
    /// Past this many bytes written in all, writes fail with `BrokenPipe`.
    write_limit: Option<usize>,
    /// Set when a write failed at the limit.
    pub write_failed: Arc<Mutex<bool>>,
    peer: Option<SocketAddr>,
}

impl Mock {
    /// Hands out `input` at most `piece` bytes per read (0 counts as 1); takes every write
    /// whole; no peer address.
    pub fn new(input: &[u8], piece: usize) -> Mock {
        Mock {
            input: input.to_vec(),
            pos: 0,
            piece: piece.max(1),
            reads: 0,
            timeouts: 0,
            max_eof_reads: None,
            eof_reads: 0,
            out: Arc::default(),
            write_piece: usize::MAX,
            write_limit: None,
            write_failed: Arc::default(),
            peer: None,
        }
    }

    /// Read number i (of the first 8) times out where bit i of `mask` is set.
    pub fn timeouts(mut self, mask: u8) -> Mock {
        self.timeouts = mask;
        self
    }

    /// Panics if the server reads at the end of the input more than `n` times.
    pub fn max_eof_reads(mut self, n: u32) -> Mock {
        self.max_eof_reads = Some(n);
        self
    }

    /// Accepts at most `n` bytes per write.
    pub fn write_piece(mut self, n: usize) -> Mock {
        self.write_piece = n.max(1);
        self
    }

    /// Fails writes past `limit` bytes in all (`None`: never).
    pub fn write_limit(mut self, limit: Option<usize>) -> Mock {
        self.write_limit = limit;
        self
    }

    /// The peer address the transport reports.
    pub fn peer(mut self, peer: SocketAddr) -> Mock {
        self.peer = Some(peer);
        self
    }
}

impl Read for Mock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let i = self.reads;
        self.reads += 1;
        if i < 8 && self.timeouts & (1 << i) != 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
        if self.pos == self.input.len() && !buf.is_empty() {
            self.eof_reads += 1;
            if let Some(max) = self.max_eof_reads {
                assert!(
                    self.eof_reads <= max,
                    "the connection loop keeps reading after the end of the input"
                );
            }
        }
        let n = buf.len().min(self.piece).min(self.input.len() - self.pos);
        buf[..n].copy_from_slice(&self.input[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Write for Mock {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut out = self.out.lock().unwrap();
        if let Some(limit) = self.write_limit {
            if out.len() + data.len() > limit {
                *self.write_failed.lock().unwrap() = true;
                return Err(io::ErrorKind::BrokenPipe.into());
            }
        }
        let n = data.len().min(self.write_piece);
        out.extend_from_slice(&data[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Transport for Mock {
    fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn set_write_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Ok(())
    }
    fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }
    fn shutdown(&self, _: Shutdown) -> io::Result<()> {
        Ok(())
    }
    fn shutdown_handle(&self) -> Option<Arc<dyn ShutdownHandle>> {
        None
    }
    fn alpn(&self) -> Option<&[u8]> {
        None
    }
    fn server_name(&self) -> Option<&str> {
        None
    }
    // Input is always at hand: reads never wait, and there is nothing to wait for.
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read(buf)
    }
    fn wait_readable(&self) -> io::Result<()> {
        Ok(())
    }
    fn wait_readable_or(&self, _: &Notify) -> io::Result<bool> {
        Err(io::ErrorKind::Unsupported.into())
    }
    fn when_readable(&self) -> Option<Wait> {
        None
    }
    type Caps = NoCapabilities;
    fn capabilities(&mut self) -> Option<&mut NoCapabilities> {
        None
    }
}
