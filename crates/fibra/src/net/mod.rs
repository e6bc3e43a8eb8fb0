//! Networking with `std::net`'s shape: [`TcpListener`], [`TcpStream`], [`UnixListener`],
//! [`UnixStream`].
//!
//! Sockets are non-blocking underneath. Inside a fiber, an operation that would block parks
//! the fiber until epoll reports readiness (or its timeout passes); on a plain thread the same
//! types block the thread, so they can be used from tests and set-up code too.

mod evented;
mod tcp;
mod unix;

pub use tcp::{ListenOptions, TcpListener, TcpStream};
pub use unix::{UnixListener, UnixStream};
