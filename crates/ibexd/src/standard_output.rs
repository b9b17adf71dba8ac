//! Writing a tool's answer to standard output without a panic when nobody
//! reads it: `ibexd -help | head -1` closes the pipe early, and Rust's
//! `print!` would panic on the `EPIPE` that follows (the process ignores
//! `SIGPIPE`). A closed reader ends the output quietly, as `SIGPIPE` ends a
//! C program such as `bitcoind`; other errors are returned.

use std::io::{ErrorKind, Write};

/// Writes `text` to standard output and flushes it; a reader that has gone
/// away (`EPIPE`) is not an error.
pub fn print_text(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(()),
        result => result,
    }
}
