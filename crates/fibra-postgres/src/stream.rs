//! The byte stream to the server: a fibra TCP or Unix-domain socket, so every wait parks the
//! fiber, never the worker thread.

use crate::config::Config;
use crate::error::{Error, ErrorKind};
use fibra::net::{TcpStream, UnixStream};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// A connected socket to the server.
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Connects to the config's host and port within its connect timeout. A host name other
    /// than an address is resolved on a helper thread (`getaddrinfo` blocks).
    pub(crate) fn connect(config: &Config) -> Result<Stream, Error> {
        let host = config.get_host();
        let port = config.get_port();
        let timeout = config.get_connect_timeout();
        let fail =
            |e: io::Error| Error::io(ErrorKind::Connect, &format!("connect to {host}:{port}"), e);
        if host.starts_with('/') {
            let path = format!("{host}/.s.PGSQL.{port}");
            return UnixStream::connect(&path).map(Stream::Unix).map_err(fail);
        }
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => {
                let h = host.to_string();
                fibra::task::spawn_blocking(move || {
                    (h.as_str(), port).to_socket_addrs().map(|a| a.collect())
                })
                .map_err(fail)?
            }
        };
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    s.set_nodelay(true).map_err(fail)?;
                    return Ok(Stream::Tcp(s));
                }
                Err(e) => last = e,
            }
        }
        Err(fail(last))
    }

    /// Sets the timeout of reads (None: wait forever).
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }

    /// Sets the timeout of writes (None: wait forever).
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
        }
    }

    /// Closes both directions, waking a fiber blocked reading it.
    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }

    /// Reads into `buf` (a fiber parks until bytes arrive or the read timeout passes).
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).read(buf),
            Stream::Unix(s) => (&*s).read(buf),
        }
    }

    /// Asks the kernel not to report the socket readable until `bytes` have arrived
    /// (`SO_RCVLOWAT`; end of stream and errors are still reported at once). Reads that find
    /// fewer bytes still return them. TCP only: a Unix-domain socket ignores the mark for
    /// readiness, so it is left alone there.
    pub(crate) fn set_recv_low_water(&self, bytes: usize) -> io::Result<()> {
        let Stream::Tcp(s) = self else {
            return Ok(());
        };
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: `s` owns an open socket for the duration of the call, and the option value
        // is a valid `c_int` whose size is passed with it.
        let r = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(s),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Writes all of `buf`.
    pub(crate) fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => (&*s).write_all(buf),
            Stream::Unix(s) => (&*s).write_all(buf),
        }
    }
}
