//! `ibex bench`'s command line: the `ibd` subcommand and its options.

use std::path::PathBuf;

use super::node_option::{
    check_node_name, colliding_names, options_for, parse_node_option, NodeOption,
};
use super::BenchError;

/// The most nodes one benchmark compares.
pub const NODES_MAX: usize = 16;
/// The most measured (or warm-up) runs per node.
pub const RUNS_MAX: u32 = 1_000;
/// The longest node name (it is part of file names).
pub const NODE_NAME_BYTES_MAX: usize = 64;
/// The default limit on one run, in seconds: two days, more than a mainnet
/// IBD takes on a slow machine.
pub const RUN_TIMEOUT_SECONDS_DEFAULT: u64 = 2 * 24 * 3_600;

/// `ibex bench`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArguments {
    /// The benchmark to run.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmarks.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum BenchCommand {
    /// Time an initial block download of a chain by each node, hyperfine style.
    Ibd(IbdArguments),
}

/// How a run gets its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// `-reindex` from the chain's block files.
    Reindex,
    /// `-reindex-chainstate` from a block index built once per node.
    ReindexChainstate,
    /// Sync over P2P on loopback from a serving node.
    P2p,
}

impl Mode {
    /// The name `--mode` takes.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Reindex => "reindex",
            Mode::ReindexChainstate => "reindex-chainstate",
            Mode::P2p => "p2p",
        }
    }
}

/// A node to benchmark: `NAME=PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpecification {
    /// Its name in the results and file names.
    pub name: String,
    /// The binary.
    pub path: PathBuf,
}

/// Parses `NAME=PATH`; a bare `PATH` is named after its file.
pub fn parse_node_specification(text: &str) -> Result<NodeSpecification, String> {
    let (name, path) = match text.split_once('=') {
        Some((name, path)) => (name.to_owned(), PathBuf::from(path)),
        None => {
            let path = PathBuf::from(text);
            let name = path.file_name().map(|name| name.to_string_lossy().into_owned());
            (name.unwrap_or_default(), path)
        }
    };
    check_node_name(&name)?;
    if path.as_os_str().is_empty() {
        return Err(format!("node {name}: no path"));
    }
    Ok(NodeSpecification { name, path })
}

// The help below states the disk sampling interval in words.
const _: () = assert!(super::disk_use::SAMPLE_INTERVAL_MS == 100);

/// `ibex bench ibd`'s arguments.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Each run starts the node on a fresh data directory under DIR/work with \
-chain, -dbcache, -stopatheight, -assumevalid (when given), -server=0, \
-listen=0, -dnsseed=0, -fixedseeds=0, -printtoconsole=0 and -logtimemicros, plus -reindex \
-connect=0, -reindex-chainstate -connect=0, or -connect=127.0.0.1:PORT, \
then the --node-option options and the node's own --node-option-for ones \
(the serving node of --mode p2p serves with its own --node-option-for options \
only, never another node's). \
The chain's block files are linked (the last one copied) and never written: \
their lengths and times are checked after every run. Warm-up runs come \
first; rounds take each node once, the order reversed every other round. \
Writes DIR/results.json (every run: node, run_index, warmup, wall_s, \
user_s, system_s, peak_rss_kib, chainstate_bytes (the coins database's size \
on disk once the node stopped), peak_blocks_bytes, peak_chainstate_bytes and \
peak_total_bytes (the largest size of the run's blocks/ blk?????.dat and \
rev?????.dat files, of its chainstate/ directory, and of their sum at one \
sample, sampled every 100 ms while the node ran), disk_samples, \
exit_status, final_height, log; per node mean, standard_deviation, median, \
min, max of each; ratios to the baseline with \
their uncertainty), DIR/results.md, DIR/logs/NAME-RUN.log and ibex plot's \
charts of the measured runs (DIR/plot/ibd-*.svg). A node is warned about \
when its wall times have a coefficient of variation above 5 % or an outlier \
(modified z-score above 3.5). --flamegraph adds one untimed run per node \
under perf record and writes DIR/flame-NAME.svg, \
DIR/flame-diff-BASELINE-NAME.svg and DIR/profile-quarters-NAME.md (CPU time \
by thread and function in each quarter of the heights; it says so and \
carries on without perf).")]
pub struct IbdArguments {
    /// The chain: a directory of Core block files (blk?????.dat, maybe
    /// xor.dat), such as `ibex gen --out`.
    #[arg(value_name = "CHAIN_BLOCKS_DIR")]
    pub chain_blocks: PathBuf,
    /// A node to run, `NAME=PATH` (ibexd, bitcoind or another Ibex build;
    /// repeat for each).
    #[arg(long = "node", value_name = "NAME=PATH", required = true,
          value_parser = parse_node_specification)]
    pub nodes: Vec<NodeSpecification>,
    /// How each run gets its blocks.
    #[arg(long, value_enum, default_value = "reindex")]
    pub mode: Mode,
    /// Measured runs per node.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Warm-up runs per node before the measured ones (not in the statistics).
    #[arg(long, default_value_t = 0)]
    pub warmup: u32,
    /// The chain: main, test, testnet4, signet or regtest (default: read
    /// from the first block file's network magic).
    #[arg(long = "chain", value_name = "NAME")]
    pub chain_name: Option<String>,
    /// -stopatheight for every run (default: the chain's tip).
    #[arg(long, value_name = "H")]
    pub stop_at_height: Option<u32>,
    /// -dbcache for every node, in MiB.
    #[arg(long = "dbcache", value_name = "MIB", default_value_t = 450)]
    pub dbcache_mebibytes: u32,
    /// -assumevalid for every node (a block hash, or 0 to check every
    /// script; default: each node's own default for the chain).
    #[arg(long, value_name = "HASH")]
    pub assumevalid: Option<String>,
    /// The node the others are compared with (default: the first).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// In p2p mode, the node that serves the chain (default: the first).
    #[arg(long, value_name = "NAME")]
    pub serve: Option<String>,
    /// Output directory.
    #[arg(long, value_name = "DIR", default_value = "ibex-bench-ibd")]
    pub out: PathBuf,
    /// Drop the page cache before every run (needs root).
    #[arg(long)]
    pub drop_caches: bool,
    /// Run the nodes at this niceness (`nice -n N`; below 0 needs root).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub nice: Option<i32>,
    /// An extra option for every node, such as -par=2 (repeatable).
    #[arg(long = "node-option", value_name = "OPTION", allow_hyphen_values = true)]
    pub node_options: Vec<String>,
    /// An extra option for node NAME only, such as ibexd-prune=-prune=550
    /// (repeatable; after the --node-option ones).
    #[arg(long = "node-option-for", value_name = "NAME=OPTION", allow_hyphen_values = true,
          value_parser = parse_node_option)]
    pub node_options_for: Vec<NodeOption>,
    /// A run still going after this many seconds is killed and ends the benchmark.
    #[arg(long = "timeout-s", value_name = "SECONDS",
          default_value_t = RUN_TIMEOUT_SECONDS_DEFAULT)]
    pub run_timeout_seconds: u64,
    /// Record each node once more under perf, draw flame graphs and cut the
    /// samples by quarter of the heights.
    #[arg(long)]
    pub flamegraph: bool,
    /// perf record's sampling frequency, in Hz.
    #[arg(long = "perf-frequency-hz", value_name = "HZ", default_value_t = 99)]
    pub perf_frequency_hertz: u32,
    /// How perf unwinds stacks (`perf record --call-graph`): `fp` needs
    /// frame pointers (a release build has none, so stacks are shallow);
    /// `dwarf` unwinds a build with debug information, such as Ibex's
    /// `--profile profiling`, at a larger recording.
    #[arg(long = "perf-call-graph", value_name = "MODE", default_value = "fp",
          value_parser = ["fp", "dwarf", "lbr"])]
    pub perf_call_graph: String,
    /// Keep the runs' data directories (DIR/work); by default each is
    /// removed once its log is saved.
    #[arg(long)]
    pub keep_datadirs: bool,
}

fn invalid(message: String) -> BenchError {
    BenchError::Arguments { message }
}

/// Whether `text` is a valid `-assumevalid` value: `0` or 64 hex digits.
fn is_assumevalid_value(text: &str) -> bool {
    text == "0" || (text.len() == 64 && text.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

/// The node named `name`, or an error naming the option.
fn node_index(nodes: &[NodeSpecification], name: &str, option: &str) -> Result<usize, BenchError> {
    nodes
        .iter()
        .position(|node| node.name == name)
        .ok_or_else(|| invalid(format!("{option} {name} is not one of the --node names")))
}

/// The checked arguments: the indexes of the baseline and serving nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedRoles {
    /// Index of the baseline node.
    pub baseline: usize,
    /// Index of the serving node (p2p mode).
    pub serving: usize,
}

impl IbdArguments {
    /// Checks what clap cannot: counts, unique names, roles, values.
    pub fn check(&self) -> Result<CheckedRoles, BenchError> {
        if self.nodes.len() > NODES_MAX {
            return Err(invalid(format!("at most {NODES_MAX} nodes")));
        }
        for (index, node) in self.nodes.iter().enumerate() {
            if self.nodes[..index].iter().any(|earlier| earlier.name == node.name) {
                return Err(invalid(format!("two nodes are named {}", node.name)));
            }
        }
        if !(1..=RUNS_MAX).contains(&self.runs) || self.warmup > RUNS_MAX {
            return Err(invalid(format!(
                "--runs must be 1 to {RUNS_MAX}, --warmup 0 to {RUNS_MAX}"
            )));
        }
        if let Some(value) = self.assumevalid.as_deref().filter(|v| !is_assumevalid_value(v)) {
            return Err(invalid(format!("--assumevalid {value}: give 0 or a 64-digit block hash")));
        }
        if self.run_timeout_seconds == 0 || self.perf_frequency_hertz == 0 {
            return Err(invalid("--timeout-s and --perf-frequency-hz must be above 0".to_owned()));
        }
        let names: Vec<String> = self.nodes.iter().map(|node| node.name.clone()).collect();
        if let Some((first, second, stem)) = colliding_names(&names, self.runs.max(self.warmup)) {
            return Err(invalid(format!(
                "nodes {first} and {second} would both write files named {stem}: rename one"
            )));
        }
        for option in &self.node_options_for {
            node_index(&self.nodes, &option.node, "--node-option-for")?;
        }
        let baseline = match &self.baseline {
            Some(name) => node_index(&self.nodes, name, "--baseline")?,
            None => 0,
        };
        let serving = match &self.serve {
            Some(name) => node_index(&self.nodes, name, "--serve")?,
            None => 0,
        };
        Ok(CheckedRoles { baseline, serving })
    }
}

impl IbdArguments {
    /// The extra options of node `name`: the `--node-option`s, then its
    /// own `--node-option-for`s.
    pub fn options_for(&self, name: &str) -> Vec<String> {
        options_for(&self.node_options, &self.node_options_for, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Line {
        #[command(subcommand)]
        command: BenchCommand,
    }

    fn parse(arguments: &[&str]) -> Result<IbdArguments, clap::Error> {
        let line = Line::try_parse_from(["bench", "ibd"].iter().chain(arguments))?;
        let BenchCommand::Ibd(arguments) = line.command;
        Ok(arguments)
    }

    #[test]
    fn parses_nodes_and_defaults() {
        let arguments = parse(&["chain", "--node", "a=/bin/ibexd", "--node", "/x/bitcoind"])
            .expect("valid arguments");
        assert_eq!(arguments.nodes[0].name, "a");
        assert_eq!(arguments.nodes[0].path, PathBuf::from("/bin/ibexd"));
        assert_eq!(arguments.nodes[1].name, "bitcoind");
        assert_eq!((arguments.runs, arguments.warmup, arguments.mode), (3, 0, Mode::Reindex));
        assert_eq!(arguments.dbcache_mebibytes, 450);
        assert_eq!(arguments.check().expect("checked"), CheckedRoles { baseline: 0, serving: 0 });
    }

    #[test]
    fn refuses_bad_names_roles_and_values() {
        assert!(parse(&["chain", "--node", "-a=/bin/ibexd"]).is_err(), "an option's look");
        assert!(parse(&["chain", "--node", "a/b=/bin/ibexd"]).is_err(), "a path");
        assert!(parse(&["chain", "--node", "=/bin/ibexd"]).is_err());
        assert!(parse(&["chain"]).is_err(), "a node is required");
        let twice = parse(&["chain", "--node", "a=/x", "--node", "a=/y"]).expect("parsed");
        assert!(twice.check().is_err());
        let baseline = parse(&["chain", "--node", "a=/x", "--baseline", "b"]).expect("parsed");
        assert!(baseline.check().unwrap_err().to_string().contains("--baseline b"));
        let hash = parse(&["chain", "--node", "a=/x", "--assumevalid", "12ab"]).expect("parsed");
        assert!(hash.check().is_err());
        let zero_runs = parse(&["chain", "--node", "a=/x", "--runs", "0"]).expect("parsed");
        assert!(zero_runs.check().is_err());
        let roles =
            parse(&["c", "--node", "a=/x", "--node", "b=/y", "--baseline", "b", "--serve", "b"])
                .expect("parsed");
        assert_eq!(roles.check().expect("checked"), CheckedRoles { baseline: 1, serving: 1 });
        let options = parse(&["c", "--node", "a=/x", "--node-option", "-par=2", "--nice", "-5"])
            .expect("parsed");
        assert_eq!((options.node_options, options.nice), (vec!["-par=2".to_owned()], Some(-5)));
    }

    #[test]
    fn gives_per_node_options_to_their_node_only() {
        let arguments = parse(&[
            "chain",
            "--node",
            "ibexd=/x",
            "--node",
            "ibexd-prune=/x",
            "--node",
            "bitcoind=/y",
            "--node-option",
            "-par=2",
            "--node-option-for",
            "ibexd-prune=-prune=550",
            "--node-option-for",
            "bitcoind=-debug=prune",
        ])
        .expect("parsed");
        assert!(arguments.check().is_ok());
        assert_eq!(arguments.options_for("ibexd"), ["-par=2"]);
        assert_eq!(arguments.options_for("ibexd-prune"), ["-par=2", "-prune=550"]);
        assert_eq!(arguments.options_for("bitcoind"), ["-par=2", "-debug=prune"]);
    }

    #[test]
    fn refuses_per_node_options_for_unknown_nodes_and_colliding_names() {
        let unknown =
            parse(&["chain", "--node", "ibexd=/x", "--node-option-for", "ibexd-prune=-prune=550"])
                .expect("parsed");
        let message = unknown.check().expect_err("no such node").to_string();
        assert!(message.contains("--node-option-for ibexd-prune"), "{message}");
        assert!(parse(&["chain", "--node", "a=/x", "--node-option-for", "-prune=550"]).is_err());
        let colliding =
            parse(&["chain", "--node", "a=/x", "--node", "a-warmup=/y", "--warmup", "1"])
                .expect("parsed");
        let message = colliding.check().expect_err("same file names").to_string();
        assert!(message.contains("a-warmup-1"), "{message}");
    }
}
