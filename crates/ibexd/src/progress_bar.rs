//! The bar [`crate::progress`] draws when standard error is a terminal: one
//! line, `HH:MM:SS [=========>          ] height/target message`, redrawn in
//! place (a carriage return, the line, an erase to its end) and cut to the
//! terminal's width, since a line that wrapped could not be redrawn in
//! place. [`TerminalBar::finish`] ends the line, leaving the last figures
//! on screen.
//!
//! The caller limits redraws (at most every 100 ms), so a redraw, one
//! `write` of ~150 bytes and one `ioctl` for the width, costs nothing that
//! matters.
#![allow(unsafe_code)]

use std::io::{IsTerminal, Write};
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Columns of the bar between its brackets.
pub const BAR_WIDTH_COLUMNS: usize = 30;
/// The width taken when the terminal does not give its own.
const TERMINAL_WIDTH_COLUMNS_DEFAULT: usize = 80;
/// Seconds in an hour and in a minute, for the elapsed time.
const SECONDS_PER_HOUR: u64 = 3_600;
const SECONDS_PER_MINUTE: u64 = 60;

/// The figures the bar shows.
#[derive(Debug, Clone, Default)]
struct BarFigures {
    position: u64,
    length: Option<u64>,
    message: String,
    finished: bool,
}

/// A progress bar on standard error. Its figures are kept whether or not
/// it draws: when standard error is not a terminal it draws nothing.
pub struct TerminalBar {
    started: Instant,
    figures: Mutex<BarFigures>,
    output: Option<Mutex<Box<dyn Write + Send>>>,
}

impl std::fmt::Debug for TerminalBar {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("TerminalBar").field("figures", &*self.figures()).finish()
    }
}

/// Takes a lock even if a panic poisoned it: the figures stay usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl TerminalBar {
    /// A bar drawn on standard error if it is a terminal.
    pub fn stderr() -> TerminalBar {
        let stderr = std::io::stderr();
        let output: Option<Box<dyn Write + Send>> =
            stderr.is_terminal().then(|| Box::new(stderr) as Box<dyn Write + Send>);
        TerminalBar {
            started: Instant::now(),
            figures: Mutex::new(BarFigures::default()),
            output: output.map(Mutex::new),
        }
    }

    fn figures(&self) -> MutexGuard<'_, BarFigures> {
        lock(&self.figures)
    }

    /// Shows `position` of `length` with `message`, and redraws.
    pub fn update(&self, position: u64, length: u64, message: String) {
        let mut figures = self.figures();
        figures.position = position;
        figures.length = Some(length);
        figures.message = message;
        self.draw(&figures, "");
    }

    /// Redraws the last figures and ends the line.
    pub fn finish(&self) {
        let mut figures = self.figures();
        figures.finished = true;
        self.draw(&figures, "\n");
    }

    /// The position shown.
    pub fn position(&self) -> u64 {
        self.figures().position
    }

    /// The length shown, once one was given.
    pub fn length(&self) -> Option<u64> {
        self.figures().length
    }

    /// The message shown.
    pub fn message(&self) -> String {
        self.figures().message.clone()
    }

    /// Whether [`TerminalBar::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.figures().finished
    }

    fn draw(&self, figures: &BarFigures, end: &str) {
        let Some(output) = &self.output else { return };
        let line = bar_line(
            self.started.elapsed(),
            figures.position,
            figures.length.unwrap_or(0),
            &figures.message,
            terminal_width_columns(),
        );
        let mut output = lock(output);
        // A display that cannot be written is not worth stopping the node.
        let _ = write!(output, "\r{line}\x1b[K{end}");
        let _ = output.flush();
    }
}

/// The bar's line: elapsed time, bar, `position/length`, message; at most
/// `width_columns - 1` characters, so that the cursor stays on the line.
pub fn bar_line(
    elapsed: Duration,
    position: u64,
    length: u64,
    message: &str,
    width_columns: usize,
) -> String {
    let seconds = elapsed.as_secs();
    let filled_columns = match length {
        0 => 0,
        _ => {
            (u128::from(position.min(length)) * BAR_WIDTH_COLUMNS as u128 / u128::from(length))
                as usize
        }
    };
    let mut bar = "=".repeat(filled_columns);
    if filled_columns < BAR_WIDTH_COLUMNS {
        bar.push('>');
        bar.push_str(&" ".repeat(BAR_WIDTH_COLUMNS - filled_columns - 1));
    }
    let line = format!(
        "{:02}:{:02}:{:02} [{bar}] {position}/{length} {message}",
        seconds / SECONDS_PER_HOUR,
        seconds % SECONDS_PER_HOUR / SECONDS_PER_MINUTE,
        seconds % SECONDS_PER_MINUTE,
    );
    line.chars().take(width_columns.saturating_sub(1)).collect()
}

/// The columns of the terminal on standard error, or
/// [`TERMINAL_WIDTH_COLUMNS_DEFAULT`] if it does not say.
fn terminal_width_columns() -> usize {
    // SAFETY: `TIOCGWINSZ` writes one `winsize` into the zeroed struct
    // whose address it is given, and nothing else; a descriptor that is not
    // a terminal makes it fail, leaving the struct zeroed.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let result = unsafe { libc::ioctl(std::io::stderr().as_raw_fd(), libc::TIOCGWINSZ, &mut size) };
    match (result, size.ws_col) {
        (0, columns) if columns > 0 => usize::from(columns),
        _ => TERMINAL_WIDTH_COLUMNS_DEFAULT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_time_bar_figures_and_message() {
        let elapsed = Duration::from_secs(2 * 3_600 + 3 * 60 + 4);
        let line = bar_line(elapsed, 5, 10, "10 blk/s", 200);
        assert_eq!(line, format!("02:03:04 [{}>{}] 5/10 10 blk/s", "=".repeat(15), " ".repeat(14)));
        let done = bar_line(Duration::ZERO, 10, 10, "", 200);
        assert_eq!(done, format!("00:00:00 [{}] 10/10 ", "=".repeat(30)));
        let empty = bar_line(Duration::ZERO, 0, 0, "", 200);
        assert_eq!(empty, format!("00:00:00 [>{}] 0/0 ", " ".repeat(29)));
        // Past the end is a full bar, not an overflow.
        assert!(bar_line(Duration::ZERO, 12, 10, "", 200).contains(&"=".repeat(30)));
    }

    #[test]
    fn the_line_never_reaches_the_last_column() {
        let line = bar_line(Duration::ZERO, 1, 2, &"x".repeat(500), 80);
        assert_eq!(line.chars().count(), 79);
        assert_eq!(bar_line(Duration::ZERO, 1, 2, "", 0), "");
    }

    #[test]
    fn figures_are_kept_when_nothing_is_drawn() {
        let bar = TerminalBar {
            started: Instant::now(),
            figures: Mutex::new(BarFigures::default()),
            output: None,
        };
        assert_eq!(bar.length(), None);
        bar.update(3, 9, "m".to_owned());
        assert_eq!((bar.position(), bar.length(), bar.message()), (3, Some(9), "m".to_owned()));
        assert!(!bar.is_finished());
        bar.finish();
        assert!(bar.is_finished());
    }
}
