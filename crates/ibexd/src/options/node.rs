//! `ibexd`'s options in Bitcoin Core's syntax, parsed by hand: the command
//! line (`-name=value`, `--name=value`, `-name`, `-noname`), then
//! `bitcoin.conf` in the data directory ([`super::file`]), merged by
//! Core's rules ([`super::settings`]) into a typed [`NodeOptions`].
//!
//! The order follows Core's `bitcoind`: parse the command line (an unknown
//! option is an error), check `-datadir`, read the configuration file (an
//! unknown name there is only a warning), select the chain, then read each
//! option for that chain.

use std::path::{Path, PathBuf};

use ibex_chainstate::FLUSH_BATCH_BYTES_DEFAULT;
use ibex_primitives::params::{Network, Params};

use super::defaults::{
    DATA_DIRECTORY_DEFAULT_NAME, DBCACHE_MEBIBYTES_DEFAULT, DEBUG_LOG_FILE_DEFAULT,
    FLUSH_TABLE_COUNT_OPTION_MAX,
};
use super::error::{ConfigError, ConfigWarning};
use super::file::{load_configuration, ConfigFileStatus};
use super::file_syntax::{interpret_key, CONFIG_FILE_NAME};
use super::given::GivenValue;
use super::metrics::{metrics_options, MetricsOptions};
use super::network::{
    network_options, rpc_options, NetworkOptions, RpcOptions, DISCOURAGE_LOOPBACK,
    EVICTION_LOOPBACK_GROUPS, FAST_FEELERS,
};
use super::numeric::{self, BlockCheckDepth};
use super::rules::{
    check_negation_allowed, interpret_value, is_known_option, path_setting, select_network,
    OptionSource, COMMAND_LINE_CONTEXT,
};
use super::settings::{SettingValue, Settings};
use super::values::{
    parse_assume_valid, parse_hex_like_core, parse_minimum_chain_work, AssumeValid,
};

/// Core's regtest `nPruneAfterHeight` with `-fastprune`.
pub const FAST_PRUNE_AFTER_HEIGHT_REGTEST: u32 = 100;

/// Everything `ibexd` was told, typed.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// The chain.
    pub network: Network,
    /// `-datadir`, absolute (default `~/.ibex`).
    pub data_directory: PathBuf,
    /// The data directory, or its chain subdirectory (`regtest`, ...).
    pub chain_directory: PathBuf,
    /// Where the block files are: `<-blocksdir or datadir>/<chain>/blocks`.
    pub blocks_directory: PathBuf,
    /// `-dbcache`, MiB, clamped to
    /// [`DBCACHE_MEBIBYTES_MIN`](super::defaults::DBCACHE_MEBIBYTES_MIN) to
    /// [`DBCACHE_MEBIBYTES_MAX`](super::defaults::DBCACHE_MEBIBYTES_MAX).
    pub dbcache_mebibytes: u64,
    /// `-dbbatchsize`, bytes.
    pub database_batch_bytes: usize,
    /// `-dbflushtables` (Ibex): tables a background flush is written as;
    /// `None` chooses from `-dbcache` ([`ibex_chainstate::budget`]).
    pub flush_table_count: Option<usize>,
    /// `-dbcrashratio` (testing only; 0 = never).
    pub database_crash_ratio: u64,
    /// Script-check threads including the main thread, 1 to 16 (Core's
    /// `-par`: its `worker_threads_num` is this minus one).
    pub script_threads: usize,
    /// `-assumevalid`.
    pub assume_valid: AssumeValid,
    /// `-stopatheight`; `None` for 0. A negative value is `Some(0)`: every
    /// height reaches it, so the node stops as soon as the chain has a tip
    /// (Core stops at its first new block).
    pub stop_at_height: Option<u32>,
    /// `-checkblocks` and `-checklevel`: what a start checks of the last
    /// blocks (Core's `VerifyDB`).
    pub block_check: BlockCheckDepth,
    /// `-mocktime` (regtest only): the Unix time the P2P side takes for
    /// now; `None` for the real time.
    pub mock_time: Option<i64>,
    /// `-reindex`.
    pub reindex: bool,
    /// `-reindex-chainstate`.
    pub reindex_chainstate: bool,
    /// `-prune`.
    pub prune: ibex_chainstate::PruneMode,
    /// `-fastprune` (testing): 64 KiB block files, and on regtest pruning
    /// from height 100.
    pub fast_prune: bool,
    /// `-loadblock` files, as given (relative to the working directory).
    pub load_blocks: Vec<PathBuf>,
    /// `-swiftsync`: the hints file, as given (relative to the working
    /// directory).
    pub swiftsync_file: Option<PathBuf>,
    /// `-printtoconsole` (default true).
    pub print_to_console: bool,
    /// `-progressinterval`: milliseconds between plain progress lines
    /// (when stderr is not a terminal), at least 100.
    pub progress_interval_ms: u64,
    /// `-debuglogfile`, absolute; `None` for `-nodebuglogfile`.
    pub debug_log_file: Option<PathBuf>,
    /// `-shrinkdebugfile` (default true).
    pub shrink_debug_log: bool,
    /// `-logtimemicros` (default false).
    pub log_time_micros: bool,
    /// The chain's parameters, with `-testactivationheight` and `-test=bip94`.
    pub params: Params,
    /// Command-line values by name in name order, each as Core's startup log
    /// writes it: a JSON string (`"0"`) or `false` for a negation.
    pub command_line: Vec<(String, String)>,
    /// The P2P options.
    pub network_options: NetworkOptions,
    /// The RPC server's options.
    pub rpc: RpcOptions,
    /// The metrics endpoint's options (`-metrics`).
    pub metrics: MetricsOptions,
    /// Configuration file values: section (empty for the top level), name,
    /// value written as in `command_line`.
    pub config_file_arguments: Vec<(String, String, String)>,
    /// The configuration file.
    pub config_file: ConfigFileStatus,
    /// Warnings to log once the log is open.
    pub warnings: Vec<ConfigWarning>,
}

/// The parsed command line, before the configuration file is read.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    settings: Settings,
    warnings: Vec<ConfigWarning>,
    /// The first argument not starting with `-`, refused after `-help`.
    unexpected_token: Option<String>,
}

/// Parses `arguments` (without the program name) and reads the
/// configuration file: the whole of Core's option handling.
pub fn parse_options(arguments: &[String]) -> Result<NodeOptions, ConfigError> {
    CommandLine::parse(arguments)?.resolve()
}

impl CommandLine {
    /// Parses the arguments after the program name as Core's
    /// `ParseParameters` does: options up to the first argument that is not
    /// one (or a lone `-`); an unknown option is an error. An argument not
    /// starting with `-` anywhere is refused by [`CommandLine::resolve`], as
    /// `bitcoind` refuses it after handling `-help`.
    pub fn parse(arguments: &[String]) -> Result<CommandLine, ConfigError> {
        let mut command_line = CommandLine {
            unexpected_token: arguments.iter().find(|argument| !argument.starts_with('-')).cloned(),
            ..CommandLine::default()
        };
        for argument in arguments {
            if argument == "-" {
                break;
            }
            let (key, value) = match argument.split_once('=') {
                Some((key, value)) => (key, Some(value)),
                None => (argument.as_str(), None),
            };
            let Some(key) = key.strip_prefix('-') else {
                break;
            };
            // `--name` is `-name`.
            let key = key.strip_prefix('-').unwrap_or(key);
            let key_info = interpret_key(key);
            if !key_info.section.is_empty() || !is_known_option(&key_info.name) {
                return Err(ConfigError::InvalidParameter { argument: argument.clone() });
            }
            let value = interpret_value(
                &key_info.name,
                key_info.negated,
                value,
                &mut command_line.warnings,
            );
            check_negation_allowed(&key_info.name, &value, COMMAND_LINE_CONTEXT)?;
            command_line.settings.command_line.entry(key_info.name).or_default().push(value);
        }
        let includes = command_line.settings.values("", "includeconf");
        if let Some(first) = includes.first() {
            return Err(ConfigError::IncludeOnCommandLine { value: first.to_json() });
        }
        Ok(command_line)
    }

    /// Whether `-?`, `-h` or `-help` was given (Core's `HelpRequested`:
    /// given at all, even negated).
    pub fn help_requested(&self) -> bool {
        ["?", "h", "help"].iter().any(|name| self.settings.command_line.contains_key(*name))
    }

    /// Whether `-version` was given and true.
    pub fn version_requested(&self) -> bool {
        self.settings.value("", "version", false).is_some_and(|value| value.to_bool())
    }

    /// Reads the configuration file and types every option.
    pub fn resolve(self) -> Result<NodeOptions, ConfigError> {
        let CommandLine { mut settings, mut warnings, unexpected_token } = self;
        if let Some(token) = unexpected_token {
            return Err(ConfigError::UnexpectedToken { token });
        }
        let initial_data_directory = data_directory(&settings, "")?;
        let config_file =
            load_configuration(&mut settings, &initial_data_directory, &mut warnings)?;
        let network = select_network(&settings)?;
        let section = network.name();
        let data_directory = data_directory(&settings, section)?;
        if let ConfigFileStatus::Found(path) = &config_file {
            check_ignored_config_file(&data_directory, &initial_data_directory, path)?;
        }
        if network == Network::Testnet3 {
            warnings.push(ConfigWarning::Testnet3Deprecated);
        }
        let typed = Typed { settings: &settings, section };
        let numbers = typed.numbers(&mut warnings);
        let chain_directory = match network.data_dir_name() {
            "" => data_directory.clone(),
            name => data_directory.join(name),
        };
        let mut params = typed.params(network, &mut warnings)?;
        let fast_prune = typed.boolean("fastprune", false);
        if fast_prune && network == Network::Regtest {
            // Core's `ReadRegTestArgs`: `nPruneAfterHeight` 100, not 1,000.
            params.prune_after_height = FAST_PRUNE_AFTER_HEIGHT_REGTEST;
        }
        let reindex_chainstate = typed.boolean("reindex-chainstate", false);
        let prune =
            numeric::prune_mode(typed.given("prune").as_ref(), reindex_chainstate, &mut warnings)?;
        let options = NodeOptions {
            network,
            blocks_directory: typed.blocks_directory(&data_directory, network)?,
            debug_log_file: typed.debug_log_file(&chain_directory),
            chain_directory,
            data_directory,
            dbcache_mebibytes: numbers.dbcache_mebibytes,
            database_batch_bytes: typed.database_batch_bytes(&mut warnings)?,
            flush_table_count: typed.flush_table_count(&mut warnings)?,
            database_crash_ratio: numbers.database_crash_ratio,
            script_threads: numbers.script_threads,
            assume_valid: typed.assume_valid()?,
            stop_at_height: numbers.stop_at_height,
            block_check: numeric::block_check_depth(
                typed.given("checkblocks").as_ref(),
                typed.given("checklevel").as_ref(),
                &mut warnings,
            ),
            mock_time: typed.mock_time(network, &mut warnings)?,
            reindex: typed.boolean("reindex", false),
            reindex_chainstate,
            prune,
            fast_prune,
            load_blocks: typed.list("loadblock").into_iter().map(PathBuf::from).collect(),
            swiftsync_file: typed
                .value("swiftsync")
                .filter(|value| !matches!(value, SettingValue::Bool(false)))
                .map(|value| PathBuf::from(value.to_text())),
            print_to_console: typed.boolean("printtoconsole", true),
            progress_interval_ms: numbers.progress_interval_ms,
            shrink_debug_log: typed.boolean("shrinkdebugfile", true),
            log_time_micros: typed.boolean("logtimemicros", false),
            network_options: network_options(&typed, &params)?,
            rpc: rpc_options(&typed, network)?,
            metrics: metrics_options(&typed, network)?,
            params,
            command_line: log_entries(&settings.command_line)
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
            config_file_arguments: settings
                .config_file
                .iter()
                .flat_map(|(section, values)| {
                    log_entries(values)
                        .map(|(name, value)| (section.clone(), name.to_owned(), value))
                })
                .collect(),
            config_file,
            warnings,
        };
        Ok(options)
    }
}

fn log_entries(
    values: &std::collections::BTreeMap<String, Vec<SettingValue>>,
) -> impl Iterator<Item = (&str, String)> {
    values.iter().flat_map(|(name, list)| list.iter().map(|value| (name.as_str(), value.to_json())))
}

/// The data directory (Core's `GetDataDirBase` with `CheckDataDirOption`).
fn data_directory(settings: &Settings, section: &str) -> Result<PathBuf, ConfigError> {
    let Some(path) = path_setting(settings, section, "datadir") else {
        let home = std::env::var_os("HOME").filter(|home| !home.is_empty());
        return Ok(
            PathBuf::from(home.unwrap_or_else(|| "/".into())).join(DATA_DIRECTORY_DEFAULT_NAME)
        );
    };
    match std::path::absolute(&path) {
        Ok(absolute) if absolute.is_dir() => Ok(absolute),
        _ => Err(ConfigError::DataDirectoryMissing { path: path.display().to_string() }),
    }
}

/// Core refuses a `datadir=` in the configuration file that moves to a
/// directory holding another configuration file, which would go unread.
fn check_ignored_config_file(
    data_directory: &Path,
    initial_data_directory: &Path,
    config_file: &Path,
) -> Result<(), ConfigError> {
    if data_directory == initial_data_directory {
        return Ok(());
    }
    let other = data_directory.join(CONFIG_FILE_NAME);
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if other.exists() && !same(&other, config_file) {
        return Err(ConfigError::IgnoredConfigFile {
            data_directory: data_directory.to_owned(),
            config_file: config_file.to_owned(),
        });
    }
    Ok(())
}

/// The number of cores (Core's `GetNumCores`).
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |cores| cores.get())
}

/// The numeric options, as used.
struct Numbers {
    dbcache_mebibytes: u64,
    database_crash_ratio: u64,
    script_threads: usize,
    stop_at_height: Option<u32>,
    progress_interval_ms: u64,
}

/// Typed reads of the merged settings for one chain.
struct Typed<'a> {
    settings: &'a Settings,
    section: &'a str,
}

impl OptionSource for Typed<'_> {
    fn option(&self, name: &str) -> Option<SettingValue> {
        self.value(name)
    }

    fn options(&self, name: &str) -> Vec<SettingValue> {
        self.settings.values(self.section, name)
    }
}

impl Typed<'_> {
    fn value(&self, name: &str) -> Option<SettingValue> {
        self.settings.value(self.section, name, false)
    }

    fn given(&self, name: &str) -> Option<GivenValue> {
        self.value(name).map(|value| GivenValue::from_setting(&value))
    }

    fn boolean(&self, name: &str, default: bool) -> bool {
        self.value(name).map_or(default, |value| value.to_bool())
    }

    fn list(&self, name: &str) -> Vec<String> {
        self.settings.values(self.section, name).iter().map(SettingValue::to_text).collect()
    }

    /// `-dbcache`, `-dbcrashratio`, `-par` and `-stopatheight` as Core
    /// reads them, with a warning for each value changed on the way
    /// ([`numeric`]), and Core's warning for a `-dbcache` too large
    /// for the machine.
    fn numbers(&self, warnings: &mut Vec<ConfigWarning>) -> Numbers {
        let dbcache_mebibytes = numeric::dbcache_mebibytes(
            self.given("dbcache").as_ref(),
            DBCACHE_MEBIBYTES_DEFAULT,
            warnings,
        );
        let memory_bytes = numeric::total_memory_bytes();
        warnings.extend(numeric::oversized_dbcache_warning(dbcache_mebibytes, memory_bytes));
        let crash_ratio = self.given("dbcrashratio");
        let crash_ratio = numeric::read_integer("dbcrashratio", crash_ratio.as_ref(), 0, warnings);
        let par = self.given("par");
        let stop_at_height = self.given("stopatheight");
        let interval = self.given("progressinterval");
        Numbers {
            dbcache_mebibytes,
            database_crash_ratio: u64::try_from(crash_ratio).unwrap_or(0),
            script_threads: numeric::script_threads(par.as_ref(), available_cores(), warnings),
            stop_at_height: numeric::stop_at_height(stop_at_height.as_ref(), warnings),
            progress_interval_ms: numeric::progress_interval_ms(interval.as_ref(), warnings),
        }
    }

    /// `-mocktime`: a Unix time, 0 (the default) for the real clock; only
    /// regtest may set it (Core's `IsMockableChain`).
    fn mock_time(
        &self,
        network: Network,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<Option<i64>, ConfigError> {
        let given = self.given("mocktime");
        let seconds = numeric::read_integer("mocktime", given.as_ref(), 0, warnings);
        if seconds == 0 {
            return Ok(None);
        }
        if network != Network::Regtest {
            return Err(ConfigError::MockTimeNotRegtest);
        }
        Ok(Some(seconds))
    }

    /// `-dbbatchsize`: Core takes any number; a batch of zero or fewer
    /// bytes would make no progress, so we refuse it.
    fn database_batch_bytes(
        &self,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<usize, ConfigError> {
        let Some(given) = self.given("dbbatchsize") else {
            return Ok(FLUSH_BATCH_BYTES_DEFAULT);
        };
        let read = numeric::read_integer("dbbatchsize", Some(&given), 0, warnings);
        match usize::try_from(read) {
            Ok(bytes) if bytes > 0 => Ok(bytes),
            _ => Err(ConfigError::InvalidValue { name: "dbbatchsize", value: given.text }),
        }
    }

    /// `-dbflushtables`: 1 to [`FLUSH_TABLE_COUNT_OPTION_MAX`]; anything
    /// else is refused rather than clamped (a benchmark must get the
    /// count it asked for).
    fn flush_table_count(
        &self,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<Option<usize>, ConfigError> {
        let Some(given) = self.given("dbflushtables") else { return Ok(None) };
        let read = numeric::read_integer("dbflushtables", Some(&given), 0, warnings);
        match usize::try_from(read) {
            Ok(count) if (1..=FLUSH_TABLE_COUNT_OPTION_MAX).contains(&count) => Ok(Some(count)),
            _ => Err(ConfigError::InvalidValue { name: "dbflushtables", value: given.text }),
        }
    }

    fn assume_valid(&self) -> Result<AssumeValid, ConfigError> {
        let Some(value) = self.value("assumevalid") else {
            return Ok(AssumeValid::Default);
        };
        let text = value.to_text();
        parse_assume_valid(&text).ok_or(ConfigError::InvalidAssumeValid { value: text })
    }

    fn blocks_directory(
        &self,
        data_directory: &Path,
        network: Network,
    ) -> Result<PathBuf, ConfigError> {
        let base = match path_setting(self.settings, self.section, "blocksdir") {
            None => data_directory.to_owned(),
            Some(path) => match std::path::absolute(&path) {
                Ok(absolute) if absolute.is_dir() => absolute,
                _ => {
                    let path = path.display().to_string();
                    return Err(ConfigError::BlocksDirectoryMissing { path });
                }
            },
        };
        let chain = network.data_dir_name();
        Ok(if chain.is_empty() { base.join("blocks") } else { base.join(chain).join("blocks") })
    }

    fn debug_log_file(&self, chain_directory: &Path) -> Option<PathBuf> {
        if self.settings.is_negated(self.section, "debuglogfile") {
            return None;
        }
        let path = path_setting(self.settings, self.section, "debuglogfile")
            .unwrap_or_else(|| PathBuf::from(DEBUG_LOG_FILE_DEFAULT));
        Some(chain_directory.join(path))
    }

    /// The chain's parameters; `-testactivationheight` and `-test` only on
    /// regtest (Core ignores the first elsewhere; we refuse it so that a
    /// mistaken chain choice cannot go unnoticed).
    fn params(
        &self,
        network: Network,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<Params, ConfigError> {
        let activation_heights = self.list("testactivationheight");
        let test_options = self.list("test");
        let assumeutxo_entries = self.list("testassumeutxo");
        if network != Network::Regtest && !assumeutxo_entries.is_empty() {
            return Err(ConfigError::RegtestOnly { name: "testassumeutxo" });
        }
        if network != Network::Regtest {
            if !activation_heights.is_empty() {
                return Err(ConfigError::RegtestOnly { name: "testactivationheight" });
            }
            if !test_options.is_empty() {
                return Err(ConfigError::RegtestOnly { name: "test=<option>" });
            }
            if network == Network::Signet {
                return self.with_minimum_chain_work(self.signet_params()?);
            }
            return self.with_minimum_chain_work(Params::for_network(network));
        }
        let mut regtest = ibex_primitives::params::RegtestOptions::new();
        for argument in &activation_heights {
            regtest = regtest.test_activation_height(argument)?;
        }
        for option in test_options {
            if option == "bip94" {
                regtest = regtest.enforce_bip94(true);
            } else if option == EVICTION_LOOPBACK_GROUPS
                || option == DISCOURAGE_LOOPBACK
                || option == FAST_FEELERS
            {
                // A P2P option: read by `network_options`.
            } else {
                warnings.push(ConfigWarning::UnknownTestOption { option });
            }
        }
        let mut params = regtest.build();
        for text in assumeutxo_entries {
            let entry = super::values::parse_assumeutxo_entry(&text)
                .ok_or(ConfigError::InvalidValue { name: "testassumeutxo", value: text })?;
            params.assumeutxo.retain(|known| known.height != entry.height);
            params.assumeutxo.push(entry);
        }
        self.with_minimum_chain_work(params)
    }

    /// Signet's parameters: the global default signet, or with
    /// `-signetchallenge` a signet of its own (Core's `ReadSigNetArgs`: one
    /// value, hex as `TryParseHex` reads it; the magic, minimum chain work
    /// and assumed-valid block follow from the challenge).
    fn signet_params(&self) -> Result<Params, ConfigError> {
        let challenges = self.list("signetchallenge");
        match challenges.as_slice() {
            [] => Ok(Params::signet()),
            [challenge] => {
                let script = parse_hex_like_core(challenge).ok_or_else(|| {
                    ConfigError::SignetChallengeNotHex { value: challenge.clone() }
                })?;
                Ok(Params::custom_signet(script))
            }
            _ => Err(ConfigError::SignetChallengeMultiple),
        }
    }

    /// `params` with `-minimumchainwork` in place of the chain's own
    /// (Core's `ChainstateManager::Options::minimum_chain_work`): headers
    /// sync, initial block download and `-assumevalid` all read it there.
    fn with_minimum_chain_work(&self, mut params: Params) -> Result<Params, ConfigError> {
        let Some(value) = self.value("minimumchainwork") else { return Ok(params) };
        let text = value.to_text();
        params.minimum_chain_work = parse_minimum_chain_work(&text)
            .ok_or(ConfigError::InvalidMinimumChainWork { value: text })?;
        Ok(params)
    }
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
