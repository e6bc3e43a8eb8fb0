//! A command's output to stdout (`serve --print-config`, `bench`'s report).

use std::io::{self, Write};

/// Writes `text` to stdout. A reader that stopped early (`| head`) ends the output, as it ends
/// `cat`'s: a broken pipe is not an error (`print!` panicked on it). Any other failure is.
pub fn write_output(text: &str) -> io::Result<()> {
    match io::stdout().write_all(text.as_bytes()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        done => done,
    }
}
