//! The errors and warnings of option parsing ([`super::node`]), with
//! Bitcoin Core's messages where Core has one.

use std::path::PathBuf;

use ibex_primitives::params::TestActivationHeightError;

use super::defaults::SCRIPT_CHECK_WORKER_THREADS_MAX;
use super::file_syntax::ConfigFileError;
use super::given::GivenValue;

/// Something worth a warning in the log, not worth stopping for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigWarning {
    /// A name in the configuration file that no option has.
    #[error("Ignoring unknown configuration value {name}")]
    UnknownConfigValue {
        /// The name as written, with its section prefix.
        name: String,
    },
    /// A section that is not a chain name.
    #[error("{}:{line} Section [{section}] is not recognized.", .path.display())]
    UnrecognizedSection {
        /// The configuration file.
        path: PathBuf,
        /// Its line.
        line: usize,
        /// The section name.
        section: String,
    },
    /// `-nofoo=0`, read as `-foo=1`.
    #[error("Warning: parsed potentially confusing double-negative -{name}={value}")]
    DoubleNegative {
        /// The option name.
        name: String,
        /// The value given.
        value: String,
    },
    /// An `includeconf` inside an included file.
    #[error("-includeconf cannot be used from included files; ignoring -includeconf={name}")]
    NestedInclude {
        /// The file it names.
        name: String,
    },
    /// A `-test` value we do not know.
    #[error("Unrecognised option \"{option}\" provided in -test=<option>.")]
    UnknownTestOption {
        /// The value.
        option: String,
    },
    /// `-testnet`: Core v30 warns that testnet3 goes away.
    #[error("Support for testnet3 is deprecated and will be removed in an upcoming release. Consider switching to testnet4.")]
    Testnet3Deprecated,
    /// A number option whose text is not a whole number: Core reads its
    /// leading digits, or 0 when there are none, without a word.
    #[error("-{name}={} is not a whole number; read as {}, as Bitcoin Core reads it", .value.text, .value.read)]
    NotANumber {
        /// The option.
        name: &'static str,
        /// The value given.
        value: GivenValue,
    },
    /// `-dbcache` below Core's 4 MiB floor (negative and non-numbers
    /// included), raised as Core raises it.
    #[error("-dbcache={value} is below the minimum of {used_mebibytes} MiB; using -dbcache={used_mebibytes}")]
    DbcacheBelowMinimum {
        /// The value given.
        value: GivenValue,
        /// The value used, MiB.
        used_mebibytes: u64,
    },
    /// `-dbcache` above Ibex's ceiling (Core has none on 64-bit machines).
    #[error("-dbcache={value} is above Ibex's maximum of {used_mebibytes} MiB; using -dbcache={used_mebibytes}")]
    DbcacheAboveMaximum {
        /// The value given.
        value: GivenValue,
        /// The value used, MiB.
        used_mebibytes: u64,
    },
    /// Core's `LogOversizedDbCache` warning: more cache than the machine
    /// can likely hold.
    #[error("A {dbcache_mebibytes} MiB dbcache may be too large for a system memory of only {memory_mebibytes} MiB.")]
    DbcacheOversized {
        /// The `-dbcache` used, MiB.
        dbcache_mebibytes: u64,
        /// The machine's memory, MiB.
        memory_mebibytes: u64,
    },
    /// A positive `-par` that is not the thread count used: above Core's
    /// cap of 16, or a number Core's `int` truncates.
    #[error("-par={value} is more script threads than the {} allowed; using -par={used_threads}", SCRIPT_CHECK_WORKER_THREADS_MAX + 1)]
    ParAdjusted {
        /// The value given.
        value: GivenValue,
        /// Script threads used, main thread included.
        used_threads: usize,
    },
    /// A `-par=-n` leaving every core free: Core checks scripts on the
    /// main thread alone.
    #[error(
        "-par={value} leaves no core for script checks on this {cores}-core machine; using -par=1"
    )]
    ParBelowOne {
        /// The value given.
        value: GivenValue,
        /// The machine's cores.
        cores: usize,
    },
    /// A negative `-stopatheight`, which every height reaches.
    #[error("-stopatheight={value} is negative, a height every block reaches: stopping as soon as the chain has a tip (Bitcoin Core stops at its first new block)")]
    StopAtHeightNegative {
        /// The value given.
        value: GivenValue,
    },
}

/// An option Core would refuse, with Core's message where it has one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A command-line option no one knows, or one with a section prefix.
    #[error("Error parsing command line arguments: Invalid parameter {argument}")]
    InvalidParameter {
        /// The whole argument, as Core quotes it.
        argument: String,
    },
    /// A command-line argument that does not start with `-`.
    #[error(
        "Command line contains unexpected token '{token}', see ibexd -h for a list of options."
    )]
    UnexpectedToken {
        /// The argument.
        token: String,
    },
    /// `-includeconf` on the command line (only `-noincludeconf` is allowed).
    #[error("Error parsing command line arguments: -includeconf cannot be used from commandline; -includeconf={value}")]
    IncludeOnCommandLine {
        /// The value, JSON-quoted as Core writes it.
        value: String,
    },
    /// A value an option cannot take.
    #[error("Invalid value for -{name}: {value}")]
    InvalidValue {
        /// The option.
        name: &'static str,
        /// The value given.
        value: String,
    },
    /// `-assumevalid` that is not up to 64 hex digits.
    #[error("Invalid assumevalid block hash specified ({value}), must be up to 64 hex digits (or 0 to disable)")]
    InvalidAssumeValid {
        /// The value given.
        value: String,
    },
    /// `-minimumchainwork` that is not up to 64 hex digits.
    #[error("Invalid minimum work specified ({value}), must be up to 64 hex digits")]
    InvalidMinimumChainWork {
        /// The value given.
        value: String,
    },
    /// `-prune` below zero.
    #[error("Prune cannot be configured with a negative value.")]
    PruneNegative,
    /// `-prune` between 2 and 549 MiB.
    #[error("Prune configured below the minimum of {minimum_mebibytes} MiB.  Please use a higher number.")]
    PruneBelowMinimum {
        /// Core's minimum target, MiB.
        minimum_mebibytes: u64,
    },
    /// `-prune` with `-reindex-chainstate`.
    #[error("Prune mode is incompatible with -reindex-chainstate. Use full -reindex instead.")]
    PruneWithReindexChainstate,
    /// `-mocktime` on a chain other than regtest (Core: only a mockable
    /// chain may pretend the time).
    #[error("-mocktime is only allowed on regtest")]
    MockTimeNotRegtest,
    /// More than one of `-chain`, `-regtest`, `-testnet`, `-testnet4`, `-signet`.
    #[error("Invalid combination of -regtest, -signet, -testnet, -testnet4 and -chain. Can use at most one.")]
    ConflictingChains,
    /// `-chain=` with a name Core does not know.
    #[error("Unknown chain {name}.")]
    UnknownChain {
        /// The name given.
        name: String,
    },
    /// `-datadir` names no directory.
    #[error("Specified data directory \"{path}\" does not exist.")]
    DataDirectoryMissing {
        /// The value given.
        path: String,
    },
    /// `-blocksdir` names no directory.
    #[error("Specified blocks directory \"{path}\" does not exist.")]
    BlocksDirectoryMissing {
        /// The value given.
        path: String,
    },
    /// The configuration file cannot be read or is malformed.
    #[error("Error reading configuration file: {source}")]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line where there is one.
        source: ConfigFileError,
    },
    /// An `includeconf` file that cannot be read.
    #[error("Error reading configuration file: Failed to include configuration file {name}")]
    IncludeMissing {
        /// The name as written.
        name: String,
    },
    /// `datadir=` in the configuration file points at a directory with its
    /// own `bitcoin.conf`, which Core would silently not read; Core refuses.
    #[error("Data directory \"{}\" contains a \"bitcoin.conf\" file which is ignored, because a different configuration file \"{}\" is being used instead.", .data_directory.display(), .config_file.display())]
    IgnoredConfigFile {
        /// The data directory the file switched to.
        data_directory: PathBuf,
        /// The configuration file read.
        config_file: PathBuf,
    },
    /// `-signetchallenge` given more than once (Core's `ReadSigNetArgs`).
    #[error("-signetchallenge cannot be multiple values.")]
    SignetChallengeMultiple,
    /// `-signetchallenge` that is not hex (Core's `TryParseHex` refuses it).
    #[error("-signetchallenge must be hex, not '{value}'.")]
    SignetChallengeNotHex {
        /// The value given.
        value: String,
    },
    /// `-nosignetchallenge` or `-nosignetseednode` (Core's
    /// `DISALLOW_NEGATION`), on the command line or in a configuration file.
    #[error("{context}: Negating of -{name} is meaningless and therefore forbidden")]
    NegationForbidden {
        /// Where: Core's prefix for command-line or configuration-file errors.
        context: &'static str,
        /// The option.
        name: &'static str,
    },
    /// A regtest-only option on another chain.
    #[error("-{name} can only be used with regtest")]
    RegtestOnly {
        /// The option.
        name: &'static str,
    },
    /// A `-testactivationheight` value Core refuses.
    #[error(transparent)]
    TestActivationHeight(#[from] TestActivationHeightError),
    /// `-metrics` on an address other machines reach, without
    /// `-metricsallowremote=1` (as Core refuses a non-local `-rpcbind`
    /// without `-rpcallowip`).
    #[error("-metrics={address} is not a loopback address: refusing to serve metrics to other machines without -metricsallowremote=1")]
    MetricsNotLoopback {
        /// The address asked for.
        address: std::net::SocketAddr,
    },
}
