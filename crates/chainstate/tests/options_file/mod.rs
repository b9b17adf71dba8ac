//! Reading back the newest `OPTIONS-*` file RocksDB writes with the
//! settings it applied (shared by the options tests).

use std::path::Path;

/// The sections of the newest `OPTIONS-*` file in `path` whose header line
/// (`[...]`) `header_matches`, as one text of trimmed lines.
pub fn sections(path: &Path, header_matches: impl Fn(&str) -> bool) -> String {
    let mut files: Vec<_> = std::fs::read_dir(path)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|file| file.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
        .collect();
    files.sort();
    let newest = files.last().expect("RocksDB writes an OPTIONS file");
    let text = std::fs::read_to_string(newest).unwrap();
    let mut kept = String::new();
    let mut keep = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            keep = header_matches(line);
        }
        if keep {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// The value of `name` in `options` (a text from [`sections`]).
pub fn setting<'a>(options: &'a str, name: &str) -> &'a str {
    options
        .lines()
        .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')))
        .unwrap_or_else(|| panic!("{name} not in these options:\n{options}"))
}
