//! `bitcoin.conf`: Bitcoin Core's configuration file syntax (its
//! `common/config.cpp`), read into lines for [`super::file`] to add to the
//! settings.
//!
//! A line is `name=value`, `[section]`, blank, or a comment from `#` to the
//! end of the line; names and values are trimmed of spaces, tabs and line
//! ends. `[regtest]` makes the names after it `regtest.name`, which is also
//! how a single line can say it (`regtest.dbcache=100`). `noname=1` negates.

use std::path::{Path, PathBuf};

/// Bytes of a configuration file we read at most: real files are a few
/// hundred bytes; this keeps a wrong `-conf=/dev/zero` from eating memory.
pub const CONFIG_FILE_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// The file name Core looks for in the data directory.
pub const CONFIG_FILE_NAME: &str = "bitcoin.conf";

/// The sections Core knows (`ChainTypeToString` of its five chains).
pub const KNOWN_SECTIONS: [&str; 5] = ["main", "test", "testnet4", "signet", "regtest"];

/// An option name split the way Core's `InterpretKey` splits it:
/// `regtest.nodbcache` is section `regtest`, name `dbcache`, negated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// The section before the first `.`, empty when there is none.
    pub section: String,
    /// The option name without section and without a `no` prefix.
    pub name: String,
    /// The name started with `no`.
    pub negated: bool,
}

/// Splits `key` (no leading dash) into section, name and negation.
pub fn interpret_key(key: &str) -> KeyInfo {
    let (section, rest) = match key.split_once('.') {
        Some((section, rest)) => (section.to_owned(), rest),
        None => (String::new(), key),
    };
    match rest.strip_prefix("no") {
        Some(name) => KeyInfo { section, name: name.to_owned(), negated: true },
        None => KeyInfo { section, name: rest.to_owned(), negated: false },
    }
}

/// One `name=value` line of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFileEntry {
    /// The full name as written, with its section prefix (`regtest.dbcache`),
    /// the form Core's warnings quote.
    pub full_name: String,
    /// The name split into section, name and negation.
    pub key: KeyInfo,
    /// The trimmed value.
    pub value: String,
    /// The line number, from 1.
    pub line: usize,
}

/// A section a configuration file names, by `[name]` or a `name.` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSection {
    /// The section name.
    pub name: String,
    /// The line number, from 1.
    pub line: usize,
}

/// What a configuration file says, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigFileContents {
    /// Every `name=value` line.
    pub entries: Vec<ConfigFileEntry>,
    /// Every section named.
    pub sections: Vec<ConfigSection>,
}

/// A configuration file Core would refuse, with Core's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// A line starting with `-`.
    #[error("parse error on line {line}: {text}, options in configuration file must be specified without leading -")]
    LeadingDash {
        /// Line number.
        line: usize,
        /// The trimmed line.
        text: String,
    },
    /// A line that is neither a section nor `name=value`.
    #[error("parse error on line {line}: {text}{}", negation_hint(.text))]
    MissingEquals {
        /// Line number.
        line: usize,
        /// The trimmed line.
        text: String,
    },
    /// A `#` on an `rpcpassword` line: Core refuses it as ambiguous.
    #[error(
        "parse error on line {line}, using # in rpcpassword can be ambiguous and should be avoided"
    )]
    HashInPassword {
        /// Line number.
        line: usize,
    },
    /// `conf=` inside a configuration file.
    #[error("conf cannot be set in the configuration file; use includeconf= if you want to include additional config files")]
    ConfInConfigFile,
    /// The file is a directory.
    #[error("Config file \"{}\" is a directory.", .path.display())]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// A file named by `-conf` or `includeconf` could not be read.
    #[error("specified config file \"{}\" could not be opened.", .path.display())]
    Unreadable {
        /// The path.
        path: PathBuf,
    },
    /// The file is larger than [`CONFIG_FILE_BYTES_MAX`].
    #[error("config file \"{}\" is larger than {CONFIG_FILE_BYTES_MAX} bytes", .path.display())]
    TooLarge {
        /// The path.
        path: PathBuf,
    },
}

fn negation_hint(text: &str) -> String {
    if text.len() >= 2 && text.starts_with("no") {
        format!(", if you intended to specify a negated option, use {text}=1 instead")
    } else {
        String::new()
    }
}

/// Core's trim set for configuration lines.
const TRIMMED: &[char] = &[' ', '\t', '\r', '\n'];

/// Parses the text of a configuration file (Core's `GetConfigOptions`).
pub fn parse_config_text(text: &str) -> Result<ConfigFileContents, ConfigFileError> {
    let mut contents = ConfigFileContents::default();
    let mut prefix = String::new();
    // Core reads with std::getline: lines end at '\n' only.
    for (index, raw_line) in text.split('\n').enumerate() {
        let line = index + 1;
        let (uncommented, used_hash) = match raw_line.find('#') {
            Some(position) => (&raw_line[..position], true),
            None => (raw_line, false),
        };
        let trimmed = uncommented.trim_matches(TRIMMED);
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.len() >= 2 && trimmed.starts_with('[') && trimmed.ends_with(']') {
            let name = &trimmed[1..trimmed.len() - 1];
            contents.sections.push(ConfigSection { name: name.to_owned(), line });
            prefix = format!("{name}.");
        } else if trimmed.starts_with('-') {
            return Err(ConfigFileError::LeadingDash { line, text: trimmed.to_owned() });
        } else if let Some((name, value)) = trimmed.split_once('=') {
            let full_name = format!("{prefix}{}", name.trim_matches(TRIMMED));
            if used_hash && full_name.contains("rpcpassword") {
                return Err(ConfigFileError::HashInPassword { line });
            }
            if let Some(position) = full_name.rfind('.') {
                if prefix.len() <= position {
                    let name = full_name[..position].to_owned();
                    contents.sections.push(ConfigSection { name, line });
                }
            }
            let key = interpret_key(&full_name);
            if key.name == "conf" {
                return Err(ConfigFileError::ConfInConfigFile);
            }
            let value = value.trim_matches(TRIMMED).to_owned();
            contents.entries.push(ConfigFileEntry { full_name, key, value, line });
        } else {
            return Err(ConfigFileError::MissingEquals { line, text: trimmed.to_owned() });
        }
    }
    Ok(contents)
}

/// Reads and parses the file at `path`; `Ok(None)` when it does not exist
/// (Core's "not found, skipping").
pub fn read_config_file(path: &Path) -> Result<Option<ConfigFileContents>, ConfigFileError> {
    use std::io::Read;
    if path.is_dir() {
        return Err(ConfigFileError::IsDirectory { path: path.to_owned() });
    }
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(ConfigFileError::Unreadable { path: path.to_owned() }),
    };
    let mut bytes = Vec::new();
    file.take(CONFIG_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|_| ConfigFileError::Unreadable { path: path.to_owned() })?;
    if bytes.len() as u64 > CONFIG_FILE_BYTES_MAX {
        return Err(ConfigFileError::TooLarge { path: path.to_owned() });
    }
    // Core takes the bytes as they are; names are ASCII, and a stray byte in
    // a value is replaced rather than refused.
    parse_config_text(&String::from_utf8_lossy(&bytes)).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_like_interpret_key() {
        let key = interpret_key("regtest.nodbcache");
        assert_eq!(
            key,
            KeyInfo { section: "regtest".into(), name: "dbcache".into(), negated: true }
        );
        let key = interpret_key("dbcache");
        assert_eq!(key, KeyInfo { section: String::new(), name: "dbcache".into(), negated: false });
        // Only the first dot separates the section.
        assert_eq!(interpret_key("a.b.c").name, "b.c");
    }

    #[test]
    fn lines_sections_comments_and_prefixes() {
        let text = "# comment\n\n  dbcache = 100  # trailing\n[regtest]\npar=2\r\n\
                    main.stopatheight=5\n[test]\nnoreindex=1\n";
        let contents = parse_config_text(text).unwrap();
        let names: Vec<(&str, &str, usize)> = contents
            .entries
            .iter()
            .map(|entry| (entry.full_name.as_str(), entry.value.as_str(), entry.line))
            .collect();
        assert_eq!(
            names,
            [
                ("dbcache", "100", 3),
                ("regtest.par", "2", 5),
                ("regtest.main.stopatheight", "5", 6),
                ("test.noreindex", "1", 8)
            ]
        );
        assert!(contents.entries[3].key.negated);
        assert_eq!(contents.entries[3].key.section, "test");
        let sections: Vec<&str> = contents.sections.iter().map(|s| s.name.as_str()).collect();
        // "regtest.main" is recorded as a section, as Core records it.
        assert_eq!(sections, ["regtest", "regtest.main", "test"]);
    }

    #[test]
    fn core_refusals() {
        let error = parse_config_text("a=1\n-dbcache=5\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "parse error on line 2: -dbcache=5, options in configuration file must be specified without leading -"
        );
        let error = parse_config_text("noreindex\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "parse error on line 1: noreindex, if you intended to specify a negated option, use noreindex=1 instead"
        );
        let error = parse_config_text("\nfoo\n").unwrap_err();
        assert_eq!(error.to_string(), "parse error on line 2: foo");
        let error = parse_config_text("rpcpassword=a#b\n").unwrap_err();
        assert_eq!(error, ConfigFileError::HashInPassword { line: 1 });
        let error = parse_config_text("conf=other.conf\n").unwrap_err();
        assert_eq!(error, ConfigFileError::ConfInConfigFile);
    }

    #[test]
    fn missing_file_is_none_and_a_directory_is_an_error() {
        let directory = tempfile::tempdir().unwrap();
        assert_eq!(read_config_file(&directory.path().join("absent.conf")), Ok(None));
        assert!(matches!(
            read_config_file(directory.path()),
            Err(ConfigFileError::IsDirectory { .. })
        ));
        let path = directory.path().join("bitcoin.conf");
        std::fs::write(&path, "regtest=1\n").unwrap();
        let contents = read_config_file(&path).unwrap().unwrap();
        assert_eq!(contents.entries[0].key.name, "regtest");
    }
}
