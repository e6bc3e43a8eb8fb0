//! What fibra's integration tests share (a dev-dependency only).
//!
//! - [`spare_port`]: a loopback port for a server a test starts later (a child process, a
//!   configuration file that names the port), which nothing else on the machine takes in
//!   the meantime.
//! - [`broken_pipe`]: a child's output whose reader has gone.

mod pipe;
mod port;

pub use pipe::broken_pipe;
pub use port::{spare_addr, spare_port};
