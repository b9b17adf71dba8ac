//! `ibex bench ibd`: an IBD benchmark run end to end, the way hyperfine
//! times a command.
//!
//! ```text
//! ibex bench ibd CHAIN_BLOCKS_DIR --node NAME=PATH [--node NAME=PATH ...]
//!     [--mode reindex|reindex-chainstate|p2p] [--runs N] [--warmup N]
//!     [--stop-at-height H] [--dbcache MIB] [--assumevalid HASH|0]
//!     [--baseline NAME] [--serve NAME] [--out DIR] [--drop-caches]
//!     [--nice N] [--node-option OPTION ...] [--node-option-for NAME=OPTION ...]
//!     [--flamegraph]
//! ```
//!
//! Given a chain (the `blocks/` directory `ibex gen` writes, or any Core
//! `blocks/` directory: `blk?????.dat` and maybe `xor.dat`) and one or more
//! node binaries (`ibexd`, Core's `bitcoind`, another Ibex build; the kind
//! is read from `PATH -version`), each run gets a fresh data directory and
//! the same options (`-chain`, `-dbcache`, `-assumevalid`, `-stopatheight`,
//! no peers but the one asked for, no RPC server) plus those given to
//! every node (`--node-option`) and to it alone (`--node-option-for`, so
//! that `ibexd` and `ibexd-prune` with `-prune=550` run in the same
//! rounds), in one of three modes:
//! - `reindex`: `-reindex` from the chain's files;
//! - `reindex-chainstate`: `-reindex-chainstate` from a block index each
//!   node built once, untimed, by a `-reindex` of the chain;
//! - `p2p`: an empty node syncs with `-connect=127.0.0.1:PORT` from one
//!   serving node (`--serve NAME`, else the first), whose data directory is
//!   built once by a `-reindex` and which runs for the whole benchmark.
//!
//! Runs stop at `-stopatheight`: `--stop-at-height`, else the chain's tip
//! (`manifest.json`'s `block_count` for an `ibex gen` chain, else the
//! height of the longest header chain in the files). Warm-up runs come
//! first, then the measured ones, in rounds that take every node once, the
//! order reversed every other round (a, b, b, a, ...), so drifting machine
//! noise (page cache, thermal state, other jobs) falls on all nodes alike.
//! Each run records its wall time, its user and system CPU time and its
//! peak resident memory (`wait4`'s resource usage of the node process),
//! the peak disk use of its block and undo files and coins database
//! (sampled on a thread, [`disk_use`]), its exit status and the final
//! height its `debug.log` reports; a run that
//! fails or stops short of the height ends the benchmark.
//!
//! The statistics follow hyperfine ([`statistics`]): mean, standard
//! deviation, median, minimum and maximum per node, and each node's ratio
//! of mean wall times to the baseline's (`--baseline`, else the first
//! node) with its propagated uncertainty. Warnings name the nodes whose
//! runs vary too much to trust (see [`statistics::spread_warnings`]).
//! The output directory (`--out`) gets `results.json`, `results.md`, each
//! run's log as `logs/NAME-RUN.log` (`NAME-warmup-RUN.log` for warm-ups),
//! and `ibex plot`'s charts of the measured runs in `plot/`. From the logs'
//! `UpdateTip` times, both results files also give each node's time by
//! quarter of the heights and its ratio to the baseline per quarter
//! ([`quarters`]), and, on a chain whose `manifest.json` records the UTXO
//! set's size by height (`ibex gen`), the cost of a block against that
//! size: a line per run, and `ibex plot --utxo-counts` draws it
//! ([`progress`]). Beside the quarters they say what each quarter's blocks
//! hold (transactions per block, the UTXO set's size and growth) and how
//! each node's UTXO cache filled: what its log says it may use (Core's
//! includes the unused mempool's space), the largest it logged and how
//! often a flush emptied it ([`run_context`]).
//!
//! `--flamegraph` adds one untimed run per node under `perf record` (when
//! `perf` is installed and allowed to record; otherwise it says why and
//! carries on), folds the stacks with `inferno` and writes
//! `flame-NAME.svg` per node and `flame-diff-BASELINE-NAME.svg` for every
//! other node: red where the node spends more of its time than the
//! baseline, blue where less (see [`flamegraph`]).
//!
//! # The chain's files are never written
//! The chain directory is shared by every run and may be precious (a
//! mainnet copy) or read-only. A run's `<datadir>/<chain>/blocks/` gets:
//! 1. `xor.dat` copied *first*: a node that finds block files without an
//!    `xor.dat` assumes unobfuscated files and writes an all-zero key,
//!    which would misread obfuscated files;
//! 2. symbolic links to every block file but the last: on `-reindex` and
//!    `-reindex-chainstate` both Core (`LoadExternalBlockFile`, `ReadBlock`)
//!    and Ibex (`import_reader`) only read stored blocks, and the files
//!    they delete on `-reindex` (Core's `CleanupBlockRevFiles`: undo files
//!    and block files after a gap) are only links in the run's directory;
//! 3. a *copy* of the last block file: the only file a node appends new
//!    blocks to (the genesis block, should the files lack it), re-opens for
//!    writing to flush it (Core's `FlushBlockFile`), or could truncate.
//!
//! No `rev?????.dat` file of the chain is linked: undo data is written
//! afresh in the run's directory (`reindex-chainstate` copies the undo
//! files its prepared directory wrote). And the benchmark checks it: the
//! length and modification time of every chain file are taken before the
//! first run and compared after each run, which ends the benchmark
//! ([`BenchError::ChainFilesChanged`]) should a node ever write to one.

pub mod arguments;
pub mod chain_input;
pub mod command;
pub mod datadir;
pub mod disk_use;
pub mod flamegraph;
pub mod measure;
pub mod node_kind;
pub mod node_option;
pub mod progress;
pub mod quarter_profile;
pub mod quarters;
pub mod report;
pub mod run_context;
pub mod runner;
pub mod serve;
pub mod statistics;

use std::path::PathBuf;

/// What can end a benchmark.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The arguments do not make a benchmark.
    #[error("{message}")]
    Arguments {
        /// What is wrong with them.
        message: String,
    },
    /// A file or directory could not be read, written or made.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The chain directory holds no usable block files.
    #[error("{}: {reason}", directory.display())]
    Chain {
        /// The chain directory.
        directory: PathBuf,
        /// What is missing or wrong.
        reason: String,
    },
    /// A block file could not be read.
    #[error(transparent)]
    BlockFile(#[from] ibex_blockstore::BlockStoreError),
    /// `PATH -version` did not say which node it is.
    #[error("{}: cannot tell whether it is bitcoind or ibexd: {reason}", path.display())]
    UnknownNodeKind {
        /// The node binary.
        path: PathBuf,
        /// What `-version` printed or why it did not run.
        reason: String,
    },
    /// A node could not be started.
    #[error("{}: cannot start: {source}", path.display())]
    Spawn {
        /// The program.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A run failed (an exit status other than 0, a signal, a timeout) or
    /// stopped short of the height asked.
    #[error("run {run} failed: {reason}; its log: {}", log.display())]
    RunFailed {
        /// The run's label (`NAME-RUN`).
        run: String,
        /// What went wrong.
        reason: String,
        /// The run's log.
        log: PathBuf,
    },
    /// A node wrote to the shared chain files (see the module docs).
    #[error("{}: the chain file changed during run {run} (a node wrote to it)", path.display())]
    ChainFilesChanged {
        /// The file.
        path: PathBuf,
        /// The run after which it was found changed.
        run: String,
    },
    /// The serving node did not come up.
    #[error("serving node {name}: {reason}")]
    Server {
        /// The node's name.
        name: String,
        /// What went wrong.
        reason: String,
    },
    /// `--drop-caches` could not drop the page cache.
    #[error("--drop-caches: cannot write /proc/sys/vm/drop_caches (it needs root): {source}")]
    DropCaches {
        /// The cause.
        source: std::io::Error,
    },
    /// The results could not be encoded.
    #[error("results.json: {source}")]
    Json {
        /// The cause.
        source: serde_json::Error,
    },
    /// `ibex plot` failed on the logs.
    #[error("plotting the logs: {source}")]
    Plot {
        /// The cause.
        source: crate::plot::PlotError,
    },
}

/// `BenchError::Io` for `path`, for `map_err`.
pub(crate) fn io_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Io { path: path.to_path_buf(), source }
}
