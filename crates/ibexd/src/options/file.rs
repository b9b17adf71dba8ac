//! Reading `bitcoin.conf` (or `-conf`) and the files it includes into the
//! settings, as Core's `ReadConfigFiles` does; the syntax of one file is
//! [`super::file_syntax`]'s.

use std::path::{Path, PathBuf};

use super::error::{ConfigError, ConfigWarning};
use super::file_syntax::{
    read_config_file, ConfigFileContents, ConfigFileError, CONFIG_FILE_NAME, KNOWN_SECTIONS,
};
use super::rules::{
    check_negation_allowed, interpret_value, is_known_option, path_setting, select_network,
    CONFIG_FILE_CONTEXT,
};
use super::settings::{SettingValue, Settings};

/// What became of the configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFileStatus {
    /// `-noconf`.
    Disabled,
    /// Read from this path.
    Found(PathBuf),
    /// Not there; Core goes on without it.
    NotFound(PathBuf),
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
        .rposition(|value| *value == SettingValue::Bool(false))
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
