//! Outputs that fail: what a child process writes when its reader has gone.

use std::process::Stdio;

/// The writing end of a pipe whose reading end is closed already, for a child's stdout or
/// stderr: every write to it meets a broken pipe (`EPIPE`), as under `fibra hello | head -1`
/// once `head` has exited, or a log pipe whose reader died.
///
/// # Panics
/// When no pipe can be made.
pub fn broken_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}
