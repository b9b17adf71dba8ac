//! `ibexd [options]`: the Ibex node, with Bitcoin Core's options.
//!
//! Errors go to stderr as `Error: ...` with exit status 1, as `bitcoind`
//! reports them; `-help` and `-version` print to stdout and exit 0. A data
//! directory another process has locked is such an error, found before
//! anything is written (see `ibex_daemon::directory_lock`).

use std::process::ExitCode;

use ibex_daemon::daemon::{log_startup, run_node};
use ibex_daemon::directory_lock::lock_node_directories;
use ibex_daemon::logging::Logger;
use ibex_daemon::options::{CommandLine, OPTIONS};
use ibex_daemon::private_files::set_private_umask;
use ibex_daemon::signals::{register_log_reopen, register_shutdown_signals};
use ibex_daemon::standard_output::print_text;
use ibex_daemon::version::{version_string, CLIENT_NAME};

/// Help paragraphs wrap at this column, indented like Core's.
const HELP_WIDTH_COLUMNS: usize = 79;
const HELP_INDENT_COLUMNS: usize = 7;

fn wrap(text: &str) -> String {
    let indent = " ".repeat(HELP_INDENT_COLUMNS);
    let mut output = String::new();
    let mut line = indent.clone();
    for word in text.split(' ') {
        if line.len() > HELP_INDENT_COLUMNS && line.len() + 1 + word.len() > HELP_WIDTH_COLUMNS {
            output.push_str(&line);
            output.push('\n');
            line = indent.clone();
        }
        if line.len() > HELP_INDENT_COLUMNS {
            line.push(' ');
        }
        line.push_str(word);
    }
    output.push_str(&line);
    output.push('\n');
    output
}

fn help_text() -> String {
    let mut text = format!(
        "{CLIENT_NAME} daemon version {}\n\n\
         ibexd validates the Bitcoin block chain as fast as the hardware allows,\n\
         accepting exactly the blocks Bitcoin Core accepts.\n\n\
         Usage: ibexd [options]\n\nOptions:\n\n",
        version_string()
    );
    for (name, argument, help) in OPTIONS {
        text.push_str(&format!("  -{name}{argument}\n"));
        text.push_str(&wrap(help));
        text.push('\n');
    }
    text
}

fn fail(message: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("Error: {message}");
    ExitCode::FAILURE
}

/// Prints `text` (`-help`, `-version`); a closed standard output ends it
/// quietly ([`print_text`]).
fn print_and_exit(text: &str) -> ExitCode {
    match print_text(text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

fn main() -> ExitCode {
    // Core's `SetupEnvironment`: files private to the user, before any is
    // created (the lock file, the log, the cookie, `ibex_peers.dat`).
    set_private_umask();
    let arguments: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|argument| argument.to_string_lossy().into_owned())
        .collect();
    let command_line = match CommandLine::parse(&arguments) {
        Ok(command_line) => command_line,
        Err(error) => return fail(&error),
    };
    if command_line.help_requested() {
        return print_and_exit(&help_text());
    }
    if command_line.version_requested() {
        return print_and_exit(&format!(
            "{CLIENT_NAME} daemon version {}\nDistributed under the MIT software license.\n",
            version_string()
        ));
    }
    let options = match command_line.resolve() {
        Ok(options) => options,
        Err(error) => return fail(&error),
    };
    // Core's `LockDirectories`: one process per data directory, decided
    // before the log is opened or any file is touched. Held until `main`
    // returns (the kernel releases it however the process ends).
    let _directory_locks = match lock_node_directories(&options) {
        Ok(locks) => locks,
        Err(error) => return fail(&error),
    };
    let logger = match Logger::open(&options) {
        Ok(logger) => logger,
        Err(error) => return fail(&error),
    };
    log_startup(&options, &logger);
    let shutdown = match register_shutdown_signals() {
        Ok(shutdown) => shutdown,
        Err(error) => return fail(&error),
    };
    if let Err(error) = register_log_reopen(&logger.reopen_flag()) {
        return fail(&error);
    }
    let result = run_node(options, logger.clone(), shutdown);
    logger.log("Shutdown: In progress...");
    match result {
        Ok(_) => {
            logger.log("Shutdown: done");
            ExitCode::SUCCESS
        }
        Err(error) => {
            // Core's caption: `Error: `, or `: ` for a failed chainstate
            // load it would offer to rebuild.
            let caption = error.caption();
            logger.log(&format!("{caption}{error}"));
            eprintln!("{caption}{error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_wraps_at_79_columns() {
        let text = help_text();
        assert!(text.lines().all(|line| line.len() <= HELP_WIDTH_COLUMNS), "{text}");
        assert!(text.contains("\n  -dbcache=<n>\n       Database cache in MiB"));
        assert_eq!(wrap("a b"), "       a b\n");
    }
}
