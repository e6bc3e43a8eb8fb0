//! Driving the `h2` crate's client from a fiber without an async runtime: the transport as
//! `AsyncRead + AsyncWrite` (`wire`) and a waker that notifies a fiber (`park`).

pub mod park;
pub mod wire;
