//! The operator's input: `bitcoin.conf` and the command line, read as
//! Core's `ArgsManager` reads them (`ibex_daemon::options::file_syntax`,
//! `ibex_daemon::options::node`).

use std::path::PathBuf;
use std::sync::OnceLock;

use ibex_daemon::options::file_syntax::{interpret_key, parse_config_text, ConfigFileContents};
use ibex_daemon::options::CommandLine;

/// Core's trim set for configuration lines.
const TRIMMED: [char; 4] = [' ', '\t', '\r', '\n'];

/// Whether `name` can be written back as a `name=value` line that reads as
/// the same entry: a name holding `=` would split elsewhere, one starting
/// with `-` or `[` reads as an error or a section, and one starting with
/// spaces or line ends (a `[section]` name may) loses them to the trim.
fn writes_back(name: &str) -> bool {
    !name.contains('=')
        && !name.starts_with('-')
        && !name.starts_with('[')
        && name == name.trim_matches(TRIMMED)
}

/// Checks what every parsed file holds, and that its entries written back
/// one per line read again to the same names and values.
fn check_contents(contents: &ConfigFileContents) {
    let mut previous_line = 0;
    for entry in &contents.entries {
        assert!(entry.line > previous_line, "at most one entry per line, in order");
        previous_line = entry.line;
        assert_eq!(entry.key, interpret_key(&entry.full_name));
        assert_eq!(entry.value, entry.value.trim_matches(TRIMMED));
        assert!(!entry.value.contains('#') && !entry.full_name.contains('#'));
        assert!(!entry.value.contains('\n'));
    }
    if !contents.entries.iter().all(|entry| writes_back(&entry.full_name)) {
        return;
    }
    let written: String = contents
        .entries
        .iter()
        .map(|entry| format!("{}={}\n", entry.full_name, entry.value))
        .collect();
    let again = parse_config_text(&written).expect("written entries read back");
    let names = |contents: &ConfigFileContents| -> Vec<(String, String)> {
        let entries = contents.entries.iter();
        entries.map(|entry| (entry.full_name.clone(), entry.value.clone())).collect()
    };
    assert_eq!(names(&again), names(contents));
}

/// `config_file`: `bitcoin.conf`'s text (bytes that are not UTF-8
/// replaced, as the node reads a file). It parses or is refused with a
/// typed error; what parses has its entries in line order, trimmed and
/// without comments, and written back one per line they read the same.
pub fn config_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(contents) = parse_config_text(&text) {
        check_contents(&contents);
    }
}

/// A data directory for [`command_line`], made once per process.
fn data_directory() -> &'static PathBuf {
    static DIRECTORY: OnceLock<PathBuf> = OnceLock::new();
    DIRECTORY.get_or_init(|| {
        let directory = tempfile::Builder::new()
            .prefix("ibex-fuzz-command-line")
            .tempdir()
            .expect("a temporary directory");
        // Kept for the process's life: libFuzzer exits without dropping it.
        directory.keep().canonicalize().expect("the directory exists")
    })
}

/// Whether `text` could name a file for the node to read: the input must
/// not make the run read other files than the one it writes.
fn names_a_file(text: &str) -> bool {
    text.contains("conf") || text.contains("datadir")
}

/// `command_line`: the whole of option handling. Input: arguments, one per
/// line, up to the first zero byte; after it, `bitcoin.conf`'s text. The
/// file is written to a data directory given with `-datadir`, then the
/// arguments are parsed and resolved with it, as `ibexd` does on start.
/// Any input gives options or a typed error; options keep that data
/// directory. Arguments and files that could name another file to read
/// (`conf`, `includeconf`, `datadir`) are left out.
pub fn command_line(data: &[u8]) {
    let (arguments, file) = match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let file = String::from_utf8_lossy(file);
    config_file(file.as_bytes());
    let directory = data_directory();
    let file = if names_a_file(&file) { "" } else { &file };
    std::fs::write(directory.join("bitcoin.conf"), file).expect("the file is written");
    let mut arguments: Vec<String> = String::from_utf8_lossy(arguments)
        .split('\n')
        .filter(|argument| !names_a_file(argument))
        .map(str::to_owned)
        .collect();
    arguments.insert(0, format!("-datadir={}", directory.display()));
    let Ok(command_line) = CommandLine::parse(&arguments) else {
        return;
    };
    let _ = (command_line.help_requested(), command_line.version_requested());
    let Ok(options) = command_line.resolve() else {
        return;
    };
    assert_eq!(&options.data_directory, directory);
    assert!(options.chain_directory.starts_with(directory));
}
