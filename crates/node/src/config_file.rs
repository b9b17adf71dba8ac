//! `bitcoin.conf`: Bitcoin Core's configuration file syntax (its
//! `common/config.cpp`), read into raw settings for [`crate::config`] to merge.
//!
//! A line is `name=value`, `[section]`, blank, or a comment from `#` to the
//! end of the line; names and values are trimmed of spaces, tabs and line
//! ends. `[regtest]` makes the names after it `regtest.name`, which is also
//! how a single line can say it (`regtest.dbcache=100`). `noname=1` negates.

use std::path::{Path, PathBuf};

use crate::config::{
    check_negation_allowed, interpret_value, is_known_option, path_setting, select_network,
    ConfigError, ConfigFileStatus, ConfigWarning, CONFIG_FILE_CONTEXT,
};
use crate::settings::Settings;

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

/// Reads `bitcoin.conf` (or `-conf`) and the files it includes into
/// `settings`, as Core's `ReadConfigFiles` does: a missing default file is
/// fine, a missing `-conf` file is not; unknown names and sections are
/// warnings; `includeconf` works one level deep, from the chain's section
/// first, then the top level.
pub(crate) fn load_configuration(
    settings: &mut Settings,
    data_directory: &Path,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<ConfigFileStatus, ConfigError> {
    if settings.is_negated("", "conf") {
        return Ok(ConfigFileStatus::Disabled);
    }
    let explicit = settings.value("", "conf", false).is_some();
    let name = path_setting(settings, "", "conf").unwrap_or_else(|| CONFIG_FILE_NAME.into());
    // Joining an absolute path replaces the directory, as Core's
    // `AbsPathJoin` does.
    let path = data_directory.join(name);
    let wrap = |source| ConfigError::ConfigFile { path: path.clone(), source };
    let Some(contents) = read_config_file(&path).map_err(wrap)? else {
        if explicit {
            return Err(wrap(ConfigFileError::Unreadable { path: path.clone() }));
        }
        return Ok(ConfigFileStatus::NotFound(path));
    };
    add_contents(settings, &path, contents, warnings)?;

    let section = select_network(settings)?.name();
    let chain_includes = include_names(settings, section);
    let top_includes = include_names(settings, "");
    for name in chain_includes.iter().chain(&top_includes) {
        let include_path = data_directory.join(name);
        let contents = match read_config_file(&include_path) {
            Ok(Some(contents)) => contents,
            Err(source @ ConfigFileError::IsDirectory { .. }) => {
                return Err(ConfigError::ConfigFile { path: include_path, source });
            }
            Err(source @ ConfigFileError::TooLarge { .. }) => {
                return Err(ConfigError::ConfigFile { path: include_path, source });
            }
            Ok(None) | Err(_) => return Err(ConfigError::IncludeMissing { name: name.clone() }),
        };
        add_contents(settings, &include_path, contents, warnings)?;
    }
    // Includes named by included files are not followed.
    let nested = include_names(settings, section)
        .into_iter()
        .skip(chain_includes.len())
        .chain(include_names(settings, "").into_iter().skip(top_includes.len()));
    warnings.extend(nested.map(|name| ConfigWarning::NestedInclude { name }));
    Ok(ConfigFileStatus::Found(path))
}

/// The `includeconf` values of one section after its last negation.
fn include_names(settings: &Settings, section: &str) -> Vec<String> {
    let Some(values) = settings.config_file.get(section).and_then(|map| map.get("includeconf"))
    else {
        return Vec::new();
    };
    let start = values
        .iter()
        .rposition(|value| *value == crate::settings::SettingValue::Bool(false))
        .map_or(0, |position| position + 1);
    values[start..].iter().map(|value| value.to_text()).collect()
}

/// Adds one file's values to `settings` (Core's `ReadConfigStream` with
/// unknown names ignored) and notes the sections no chain has. A negated
/// option that forbids negation is an error, as in Core.
fn add_contents(
    settings: &mut Settings,
    path: &Path,
    contents: ConfigFileContents,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<(), ConfigError> {
    for entry in contents.entries {
        if !is_known_option(&entry.key.name) {
            warnings.push(ConfigWarning::UnknownConfigValue { name: entry.full_name });
            continue;
        }
        let value =
            interpret_value(&entry.key.name, entry.key.negated, Some(&entry.value), warnings);
        check_negation_allowed(&entry.key.name, &value, CONFIG_FILE_CONTEXT)?;
        settings.add_config_value(&entry.key.section, &entry.key.name, value);
    }
    for section in contents.sections {
        if !KNOWN_SECTIONS.contains(&section.name.as_str()) {
            warnings.push(ConfigWarning::UnrecognizedSection {
                path: path.to_owned(),
                line: section.line,
                section: section.name,
            });
        }
    }
    Ok(())
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
