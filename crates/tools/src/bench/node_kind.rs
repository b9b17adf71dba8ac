//! Which node a binary is (Core's `bitcoind` or Ibex's `ibexd`, from its
//! `-version`) and the options each run passes it.
//!
//! `ibexd` takes Core's option syntax and the options used here, so the
//! runs of both kinds get the same options; only a serving `bitcoind` gets
//! two more (see [`serving_options`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ibex_primitives::Network;

use super::arguments::{IbdArguments, Mode, NodeSpecification};
use super::BenchError;

/// The most of `-version`'s output read, in bytes.
pub const VERSION_OUTPUT_BYTES_MAX: u64 = 64 * 1024;

/// The kinds of node the benchmark knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Bitcoin Core's `bitcoind`.
    Core,
    /// Ibex's `ibexd`.
    Ibex,
}

impl NodeKind {
    /// The kind's name in the results.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Core => "core",
            NodeKind::Ibex => "ibex",
        }
    }
}

/// A node to benchmark, with its kind known.
#[derive(Debug, Clone)]
pub struct BenchNode {
    /// Its name.
    pub name: String,
    /// Its binary.
    pub path: PathBuf,
    /// What it is.
    pub kind: NodeKind,
    /// The first line of its `-version`.
    pub version: String,
}

/// The kind a `-version` text (or, failing that, the file name) names.
pub fn kind_from_version(version: &str, path: &Path) -> Option<NodeKind> {
    let file_name = path.file_name().map(|name| name.to_string_lossy().into_owned());
    if version.contains("Bitcoin Core") {
        Some(NodeKind::Core)
    } else if version.contains("Ibex") {
        Some(NodeKind::Ibex)
    } else if file_name.as_deref().is_some_and(|name| name.contains("bitcoind")) {
        Some(NodeKind::Core)
    } else if file_name.as_deref().is_some_and(|name| name.contains("ibexd")) {
        Some(NodeKind::Ibex)
    } else {
        None
    }
}

/// Runs `PATH -version` and tells the node's kind.
pub fn detect(specification: &NodeSpecification) -> Result<BenchNode, BenchError> {
    let path = &specification.path;
    let unknown = |reason: String| BenchError::UnknownNodeKind { path: path.clone(), reason };
    let mut child = Command::new(path)
        .arg("-version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| unknown(error.to_string()))?;
    let mut output = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        stdout
            .take(VERSION_OUTPUT_BYTES_MAX)
            .read_to_end(&mut output)
            .map_err(|error| unknown(error.to_string()))?;
    }
    // Whatever its exit status: the text is what tells.
    let _ = child.wait();
    let text = String::from_utf8_lossy(&output);
    let version = text.lines().next().unwrap_or_default().trim().to_owned();
    let kind = kind_from_version(&text, path)
        .ok_or_else(|| unknown(format!("-version printed {version:?}")))?;
    Ok(BenchNode { name: specification.name.clone(), path: path.clone(), kind, version })
}

/// What one run of a node is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPurpose {
    /// `-reindex` from the chain's files (a run in reindex mode, or the
    /// preparation of a serving or reindex-chainstate data directory).
    Reindex,
    /// `-reindex-chainstate` from a prepared block index.
    ReindexChainstate,
    /// Sync from the serving node on this loopback port.
    SyncFrom(u16),
}

impl RunPurpose {
    /// A measured run's purpose in `mode` (`port`: the serving node's).
    pub fn for_mode(mode: Mode, port: u16) -> RunPurpose {
        match mode {
            Mode::Reindex => RunPurpose::Reindex,
            Mode::ReindexChainstate => RunPurpose::ReindexChainstate,
            Mode::P2p => RunPurpose::SyncFrom(port),
        }
    }
}

/// The options every run shares: data directory, chain, cache, stop
/// height, assumed-valid block, no RPC server, no peers found by the node
/// itself, the log to the file only.
pub fn common_options(
    arguments: &IbdArguments,
    network: Network,
    datadir: &Path,
    stop_height: u32,
) -> Vec<String> {
    let mut options = vec![
        format!("-datadir={}", datadir.display()),
        format!("-chain={}", network.name()),
        "-printtoconsole=0".to_owned(),
        // Microsecond timestamps: short runs plot as curves, not steps of
        // a second.
        "-logtimemicros".to_owned(),
        format!("-dbcache={}", arguments.dbcache_mebibytes),
        format!("-stopatheight={stop_height}"),
        "-server=0".to_owned(),
        "-dnsseed=0".to_owned(),
        "-fixedseeds=0".to_owned(),
    ];
    if let Some(block) = &arguments.assumevalid {
        options.push(format!("-assumevalid={block}"));
    }
    options
}

/// [`common_options`], those of `purpose`, `-listen=0`, and node
/// `node_name`'s extra options last (so that they can override): the
/// `--node-option`s, then its `--node-option-for`s.
pub fn run_options(
    arguments: &IbdArguments,
    node_name: &str,
    network: Network,
    datadir: &Path,
    stop_height: u32,
    purpose: RunPurpose,
) -> Vec<String> {
    let mut options = common_options(arguments, network, datadir, stop_height);
    match purpose {
        RunPurpose::Reindex => options.extend(["-reindex".into(), "-connect=0".into()]),
        RunPurpose::ReindexChainstate => {
            options.extend(["-reindex-chainstate".into(), "-connect=0".into()]);
        }
        RunPurpose::SyncFrom(port) => options.push(format!("-connect=127.0.0.1:{port}")),
    }
    options.push("-listen=0".to_owned());
    options.extend(arguments.options_for(node_name));
    options
}

/// The options of the serving node, on a prepared data directory: listen
/// on loopback `port` only and connect to nobody. A serving `bitcoind`
/// also lets loopback peers download while its own tip is old (Core
/// ignores `getheaders` in initial block download from peers without the
/// `download` permission) and opens no Tor listener. Its own
/// `--node-option-for`s come last, as in its preparation (a data
/// directory prepared with `-prune` must be served with it); another
/// node's never reach it.
pub fn serving_options(
    arguments: &IbdArguments,
    node: &BenchNode,
    network: Network,
    datadir: &Path,
    port: u16,
) -> Vec<String> {
    let mut options = vec![
        format!("-datadir={}", datadir.display()),
        format!("-chain={}", network.name()),
        "-printtoconsole=0".to_owned(),
        format!("-dbcache={}", arguments.dbcache_mebibytes),
        "-server=0".to_owned(),
        "-dnsseed=0".to_owned(),
        "-fixedseeds=0".to_owned(),
        "-connect=0".to_owned(),
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
    ];
    if node.kind == NodeKind::Core {
        options.push("-whitelist=download@127.0.0.1".to_owned());
        options.push("-listenonion=0".to_owned());
    }
    let own = arguments.node_options_for.iter().filter(|option| option.node == node.name);
    options.extend(own.map(|option| option.option.clone()));
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Line {
        #[command(flatten)]
        arguments: IbdArguments,
    }

    #[test]
    fn tells_kinds_from_version_or_name() {
        let path = Path::new("/opt/bin/node");
        let core = "Bitcoin Core daemon version v30.0.0\nCopyright";
        assert_eq!(kind_from_version(core, path), Some(NodeKind::Core));
        assert_eq!(kind_from_version("Ibex daemon version v0.1.0", path), Some(NodeKind::Ibex));
        assert_eq!(kind_from_version("", Path::new("/x/bitcoind-30")), Some(NodeKind::Core));
        assert_eq!(kind_from_version("", Path::new("/x/ibexd")), Some(NodeKind::Ibex));
        assert_eq!(kind_from_version("sleep (GNU coreutils)", path), None);
    }

    #[test]
    fn builds_the_same_options_for_every_node() {
        let line = Line::parse_from([
            "ibd",
            "chain",
            "--node",
            "a=/x",
            "--dbcache",
            "100",
            "--assumevalid",
            "0",
            "--node-option",
            "-par=2",
        ]);
        let datadir = Path::new("/tmp/run");
        let options = run_options(
            &line.arguments,
            "a",
            Network::Regtest,
            datadir,
            200,
            RunPurpose::SyncFrom(9),
        );
        let expected = [
            "-datadir=/tmp/run",
            "-chain=regtest",
            "-printtoconsole=0",
            "-logtimemicros",
            "-dbcache=100",
            "-stopatheight=200",
            "-server=0",
            "-dnsseed=0",
            "-fixedseeds=0",
            "-assumevalid=0",
            "-connect=127.0.0.1:9",
            "-listen=0",
            "-par=2",
        ];
        assert_eq!(options, expected);
        let reindex =
            run_options(&line.arguments, "a", Network::Main, datadir, 5, RunPurpose::Reindex);
        assert!(reindex.contains(&"-reindex".to_owned()) && reindex.contains(&"-connect=0".into()));
        assert_eq!(reindex.last().map(String::as_str), Some("-par=2"), "user options last");
    }

    #[test]
    fn gives_per_node_options_to_that_node_and_the_server_only_its_own() {
        let line = Line::parse_from([
            "ibd",
            "chain",
            "--node",
            "ibexd=/x",
            "--node",
            "ibexd-prune=/x",
            "--node-option",
            "-par=2",
            "--node-option-for",
            "ibexd-prune=-prune=550",
            "--serve",
            "ibexd",
        ]);
        let arguments = &line.arguments;
        let datadir = Path::new("/tmp/run");
        let sync = RunPurpose::SyncFrom(9);
        let pruned = run_options(arguments, "ibexd-prune", Network::Regtest, datadir, 9, sync);
        assert_eq!(pruned[pruned.len() - 2..], ["-par=2", "-prune=550"]);
        let plain = run_options(arguments, "ibexd", Network::Regtest, datadir, 9, sync);
        assert_eq!(plain.last().map(String::as_str), Some("-par=2"));
        assert!(!plain.iter().any(|option| option.starts_with("-prune")), "{plain:?}");
        let node = |name: &str| BenchNode {
            name: name.to_owned(),
            path: PathBuf::from("/x"),
            kind: NodeKind::Ibex,
            version: String::new(),
        };
        let serving = serving_options(arguments, &node("ibexd"), Network::Regtest, datadir, 9);
        assert!(!serving.iter().any(|option| option.starts_with("-prune")), "{serving:?}");
        let serving =
            serving_options(arguments, &node("ibexd-prune"), Network::Regtest, datadir, 9);
        assert_eq!(serving.last().map(String::as_str), Some("-prune=550"), "its own options");
    }
}
