//! Core's rules for one option's value, shared by the command line
//! ([`super::node`]) and the configuration file ([`super::file`]): which
//! names exist, how a negation reads, which options may not be negated,
//! how a path is taken, and which chain the chain options select.

use std::path::PathBuf;

use ibex_primitives::params::Network;

use super::error::{ConfigError, ConfigWarning};
use super::settings::{interpret_bool, SettingValue, Settings};
use super::table::OPTIONS;

/// Options whose negation Core refuses (`ArgsManager::DISALLOW_NEGATION`).
const NEGATION_FORBIDDEN: [&str; 2] = ["signetchallenge", "signetseednode"];

/// Where an option was read, as Core's error prefixes say it.
pub(crate) const COMMAND_LINE_CONTEXT: &str = "Error parsing command line arguments";
/// See [`COMMAND_LINE_CONTEXT`].
pub(crate) const CONFIG_FILE_CONTEXT: &str = "Error reading configuration file";

/// Core's `CheckValid`: `-nosignetchallenge` (a value that reads as false)
/// is an error for an option that forbids negation; `context` says where
/// it was read.
pub(crate) fn check_negation_allowed(
    name: &str,
    value: &SettingValue,
    context: &'static str,
) -> Result<(), ConfigError> {
    match NEGATION_FORBIDDEN.iter().find(|forbidden| **forbidden == name) {
        Some(name) if *value == SettingValue::Bool(false) => {
            Err(ConfigError::NegationForbidden { context, name })
        }
        _ => Ok(()),
    }
}

/// Whether `name` is an option `ibexd` knows ([`OPTIONS`]).
pub(crate) fn is_known_option(name: &str) -> bool {
    OPTIONS.iter().any(|(known, _, _)| *known == name)
}

/// Core's `InterpretValue`: a negation is `false`, or `true` for the double
/// negative `-nofoo=0`; anything else is its text (empty when elided).
pub(crate) fn interpret_value(
    name: &str,
    negated: bool,
    value: Option<&str>,
    warnings: &mut Vec<ConfigWarning>,
) -> SettingValue {
    match (negated, value) {
        (true, Some(value)) if !interpret_bool(value) => {
            warnings.push(ConfigWarning::DoubleNegative {
                name: name.to_owned(),
                value: value.to_owned(),
            });
            SettingValue::Bool(true)
        }
        (true, _) => SettingValue::Bool(false),
        (false, value) => SettingValue::Text(value.unwrap_or_default().to_owned()),
    }
}

/// Core's `GetPathArg`: `None` when negated or empty.
pub(crate) fn path_setting(settings: &Settings, section: &str, name: &str) -> Option<PathBuf> {
    match settings.value(section, name, false)? {
        SettingValue::Text(text) if !text.is_empty() => Some(PathBuf::from(text)),
        _ => None,
    }
}

/// Core's `GetChainArg`: at most one of the chain options.
pub(crate) fn select_network(settings: &Settings) -> Result<Network, ConfigError> {
    let flag = |name: &str| settings.value("", name, true).is_some_and(|value| value.to_bool());
    let flags = [
        (flag("regtest"), Network::Regtest),
        (flag("signet"), Network::Signet),
        (flag("testnet"), Network::Testnet3),
        (flag("testnet4"), Network::Testnet4),
    ];
    let chain = settings.value("", "chain", false).map(|value| value.to_text());
    let given = flags.iter().filter(|(set, _)| *set).count() + usize::from(chain.is_some());
    if given > 1 {
        return Err(ConfigError::ConflictingChains);
    }
    if let Some(name) = chain {
        return name.parse().map_err(|_| ConfigError::UnknownChain { name });
    }
    Ok(flags.iter().find(|(set, _)| *set).map_or(Network::Main, |(_, network)| *network))
}

/// Reads an option's last value for the chain in use.
pub(crate) trait OptionSource {
    /// The value of `name`, if given.
    fn option(&self, name: &str) -> Option<SettingValue>;
    /// Every value of `name`, in order.
    fn options(&self, name: &str) -> Vec<SettingValue>;
}
