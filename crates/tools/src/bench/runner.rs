//! Running the benchmark's node processes: the untimed preparations, the
//! interleaved warm-up and measured rounds, one fresh data directory per
//! run, each run's log saved and checked.

use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::arguments::{CheckedRoles, IbdArguments, Mode};
use super::chain_input::ChainInput;
use super::datadir;
use super::disk_use::{DiskUsePeaks, DiskUseSampler, SAMPLE_INTERVAL_MS};
use super::measure::{drop_page_cache, niced_command, run_measured, Measurement};
use super::node_kind::{detect, run_options, serving_options, BenchNode, RunPurpose};
use super::node_option::run_label;
use super::serve::{free_loopback_port, ServingNode};
use super::{io_error, BenchError};

/// The most of a failed run's error output quoted in the error, in bytes.
pub const STDERR_TAIL_BYTES_MAX: u64 = 2 * 1024;

/// One run of one node.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// The node's name.
    pub node: String,
    /// The run's number among the node's warm-ups or measured runs, from 1.
    pub run_index: u32,
    /// A warm-up run (not in the statistics).
    pub warmup: bool,
    /// What it measured and left.
    pub outcome: NodeRun,
}

/// What one run of one node left: its measurement, the log's last
/// height, the saved log and its coins database's size on disk.
#[derive(Debug, Clone)]
pub struct NodeRun {
    /// What was measured.
    pub measurement: Measurement,
    /// The height of the log's last `UpdateTip`.
    pub final_height: Option<u32>,
    /// The saved log.
    pub log: PathBuf,
    /// Bytes of the node's `chainstate/` directory once it stopped.
    pub chainstate_bytes: u64,
    /// The largest disk use of its block files and coins database while
    /// it ran (see [`super::disk_use`]).
    pub disk_use: DiskUsePeaks,
}

/// One scheduled run: the node's index, warm-up or not, its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduledRun {
    /// Index of the node.
    pub node: usize,
    /// A warm-up run.
    pub warmup: bool,
    /// Its number among the node's runs of its kind, from 1.
    pub run_index: u32,
}

/// The order of the runs: the warm-up rounds, then the measured ones; each
/// round runs every node once, in the nodes' order in even rounds and the
/// reverse in odd ones (a, b, b, a, a, b, ...).
pub fn schedule(node_count: usize, warmup: u32, runs: u32) -> Vec<ScheduledRun> {
    let rounds = (1..=warmup).map(|index| (true, index)).chain((1..=runs).map(|i| (false, i)));
    let mut order = Vec::new();
    for (round, (warmup, run_index)) in rounds.enumerate() {
        let nodes: Vec<usize> = if round % 2 == 0 {
            (0..node_count).collect()
        } else {
            (0..node_count).rev().collect()
        };
        order.extend(nodes.into_iter().map(|node| ScheduledRun { node, warmup, run_index }));
    }
    order
}

/// A benchmark's fixed facts and directories.
#[derive(Debug)]
pub struct Bench<'a> {
    /// The arguments, checked.
    pub arguments: &'a IbdArguments,
    /// The baseline and serving nodes.
    pub roles: CheckedRoles,
    /// The chain.
    pub chain: ChainInput,
    /// The nodes, with their kinds.
    pub nodes: Vec<BenchNode>,
    /// Every run's `-stopatheight`.
    pub stop_height: u32,
    /// `OUT/work`: data directories.
    pub work: PathBuf,
    /// `OUT/logs`: the saved logs.
    pub logs: PathBuf,
    /// The serving node's port (p2p mode).
    pub server_port: u16,
}

fn create_directory(path: &Path) -> Result<(), BenchError> {
    std::fs::create_dir_all(path).map_err(io_error(path))
}

/// The end of a run's error output, for an error message.
fn stderr_tail(path: &Path) -> String {
    let Ok(mut file) = std::fs::File::open(path) else { return String::new() };
    let length = file.metadata().map(|metadata| metadata.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(length.saturating_sub(STDERR_TAIL_BYTES_MAX)));
    let mut tail = Vec::new();
    let _ = file.take(STDERR_TAIL_BYTES_MAX).read_to_end(&mut tail);
    let text = String::from_utf8_lossy(&tail).trim().to_owned();
    if text.is_empty() {
        text
    } else {
        format!(" (error output: {text})")
    }
}

impl<'a> Bench<'a> {
    /// Checks the arguments, reads the chain, tells the nodes' kinds and
    /// makes the output directories; `OUT/work` must not exist yet.
    pub fn new(arguments: &'a IbdArguments) -> Result<Bench<'a>, BenchError> {
        let roles = arguments.check()?;
        let chain = ChainInput::open(&arguments.chain_blocks, arguments.chain_name.as_deref())?;
        let stop_height = arguments.stop_at_height.unwrap_or(chain.tip_height);
        if stop_height > chain.tip_height {
            let message = format!(
                "--stop-at-height {stop_height} is above the chain's tip {}",
                chain.tip_height
            );
            return Err(BenchError::Arguments { message });
        }
        let nodes = arguments.nodes.iter().map(detect).collect::<Result<Vec<_>, _>>()?;
        let work = arguments.out.join("work");
        if work.exists() {
            let message = format!(
                "{} exists (left by an earlier benchmark?): remove it or choose another --out",
                work.display()
            );
            return Err(BenchError::Arguments { message });
        }
        let logs = arguments.out.join("logs");
        create_directory(&work)?;
        create_directory(&logs)?;
        let server_port = if arguments.mode == Mode::P2p { free_loopback_port()? } else { 0 };
        Ok(Bench { arguments, roles, chain, nodes, stop_height, work, logs, server_port })
    }

    /// The prepared data directory of node `index` (reindex-chainstate
    /// mode) or of the serving node (p2p mode).
    pub fn prepared_datadir(&self, index: usize) -> PathBuf {
        self.work.join(format!("prepared-{}", self.nodes[index].name))
    }

    /// Runs `node` once with `options`, prefixed by `wrapper` (a profiler's
    /// command line) if given, its error output into `label.stderr`.
    fn execute(
        &self,
        node: &BenchNode,
        options: &[String],
        label: &str,
        wrapper: &[OsString],
    ) -> Result<Measurement, BenchError> {
        if self.arguments.drop_caches {
            drop_page_cache()?;
        }
        let stderr_path = self.work.join(format!("{label}.stderr"));
        let stderr = std::fs::File::create(&stderr_path).map_err(io_error(&stderr_path))?;
        let mut command = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut command = niced_command(Path::new(program), self.arguments.nice);
                command.args(rest).arg(&node.path);
                command
            }
            None => niced_command(&node.path, self.arguments.nice),
        };
        command.args(options).stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
        let timeout = Duration::from_secs(self.arguments.run_timeout_seconds);
        let program = wrapper.first().map_or(node.path.clone(), PathBuf::from);
        run_measured(&mut command, timeout)
            .map_err(|source| BenchError::Spawn { path: program, source })
    }

    /// Checks a finished run: success, the height reached, the chain's
    /// files untouched. Returns the final height.
    fn check_run(
        &self,
        label: &str,
        measurement: &Measurement,
        log: &Path,
    ) -> Result<Option<u32>, BenchError> {
        self.chain.check_unchanged(label)?;
        let final_height = datadir::final_height(log)?;
        let failed = |reason: String| BenchError::RunFailed {
            run: label.to_owned(),
            reason: format!("{reason}{}", stderr_tail(&self.work.join(format!("{label}.stderr")))),
            log: log.to_path_buf(),
        };
        if !measurement.end.is_success() {
            return Err(failed(measurement.end.describe()));
        }
        match final_height {
            Some(height) if height >= self.stop_height => Ok(final_height),
            _ => Err(failed(format!(
                "it stopped at height {} before the height asked, {}",
                final_height.map_or("none".to_owned(), |height| height.to_string()),
                self.stop_height
            ))),
        }
    }

    /// Builds a prepared data directory for `node` by an untimed
    /// `-reindex` of the chain to the stop height.
    fn prepare_datadir(&self, node: &BenchNode, prepared: &Path) -> Result<(), BenchError> {
        let label = format!("prepare-{}", node.name);
        eprintln!("bench: preparing {} with -reindex (untimed)", prepared.display());
        datadir::prepare_from_chain(prepared, &self.chain)?;
        let options = run_options(
            self.arguments,
            &node.name,
            self.chain.network,
            prepared,
            self.stop_height,
            RunPurpose::Reindex,
        );
        let measurement = self.execute(node, &options, &label, &[])?;
        let log = self.logs.join(format!("{label}.log"));
        datadir::save_log(prepared, self.chain.network, &log)?;
        self.check_run(&label, &measurement, &log).map(drop)
    }

    /// reindex-chainstate mode: each node's block index, built once.
    pub fn prepare_block_indexes(&self) -> Result<(), BenchError> {
        if self.arguments.mode != Mode::ReindexChainstate {
            return Ok(());
        }
        for (index, node) in self.nodes.iter().enumerate() {
            self.prepare_datadir(node, &self.prepared_datadir(index))?;
        }
        Ok(())
    }

    /// p2p mode: prepares the serving node's data directory and starts it.
    pub fn start_server(&self) -> Result<Option<ServingNode>, BenchError> {
        if self.arguments.mode != Mode::P2p {
            return Ok(None);
        }
        let node = &self.nodes[self.roles.serving];
        let prepared = self.prepared_datadir(self.roles.serving);
        self.prepare_datadir(node, &prepared)?;
        let options =
            serving_options(self.arguments, node, self.chain.network, &prepared, self.server_port);
        let stderr = self.work.join(format!("serve-{}.stderr", node.name));
        eprintln!("bench: {} serves the chain on 127.0.0.1:{}", node.name, self.server_port);
        ServingNode::start(node, &options, self.arguments.nice, self.server_port, &stderr).map(Some)
    }

    /// Saves the serving node's log as `logs/serve-NAME.log`.
    pub fn save_server_log(&self) -> Result<(), BenchError> {
        let name = &self.nodes[self.roles.serving].name;
        let log = self.logs.join(format!("serve-{name}.log"));
        datadir::save_log(&self.prepared_datadir(self.roles.serving), self.chain.network, &log)
    }

    /// Makes the fresh data directory of a run of node `index`.
    fn make_run_datadir(&self, index: usize, datadir: &Path) -> Result<(), BenchError> {
        datadir::remove(datadir)?;
        match self.arguments.mode {
            Mode::Reindex => datadir::prepare_from_chain(datadir, &self.chain),
            Mode::ReindexChainstate => datadir::prepare_from_prepared(
                datadir,
                &self.prepared_datadir(index),
                self.chain.network,
            ),
            Mode::P2p => create_directory(datadir),
        }
    }

    /// One run of node `index` as the mode says, on a fresh data directory,
    /// its log saved as `logs/LABEL.log`; `wrapper` as in `execute`.
    pub fn run_node(
        &self,
        index: usize,
        label: &str,
        wrapper: &[OsString],
    ) -> Result<NodeRun, BenchError> {
        let node = &self.nodes[index];
        let datadir = self.work.join(label);
        self.make_run_datadir(index, &datadir)?;
        let purpose = RunPurpose::for_mode(self.arguments.mode, self.server_port);
        let network = self.chain.network;
        let options =
            run_options(self.arguments, &node.name, network, &datadir, self.stop_height, purpose);
        let blocks = datadir::blocks_directory(&datadir, network);
        let chainstate = datadir::chainstate_directory(&datadir, network);
        let interval = Duration::from_millis(SAMPLE_INTERVAL_MS);
        let sampler = DiskUseSampler::start(blocks.clone(), chainstate.clone(), interval)
            .map_err(io_error(&blocks))?;
        let measured = self.execute(node, &options, label, wrapper);
        let disk_use = sampler.finish();
        let measurement = measured?;
        let log = self.logs.join(format!("{label}.log"));
        datadir::save_log(&datadir, network, &log)?;
        let final_height = self.check_run(label, &measurement, &log)?;
        let chainstate_bytes = datadir::directory_bytes(&chainstate)?;
        if !self.arguments.keep_datadirs {
            datadir::remove(&datadir)?;
        }
        Ok(NodeRun { measurement, final_height, log, chainstate_bytes, disk_use })
    }

    /// Every scheduled run, in order; the serving node must stay up.
    pub fn run_rounds(
        &self,
        mut server: Option<&mut ServingNode>,
    ) -> Result<Vec<RunRecord>, BenchError> {
        let order = schedule(self.nodes.len(), self.arguments.warmup, self.arguments.runs);
        let mut records = Vec::with_capacity(order.len());
        for (position, run) in order.iter().enumerate() {
            if let Some(server) = server.as_deref_mut() {
                server.check_running()?;
            }
            let name = &self.nodes[run.node].name;
            let label = run_label(name, run.warmup, run.run_index);
            let outcome = self.run_node(run.node, &label, &[])?;
            let measurement = &outcome.measurement;
            eprintln!(
                "bench: [{}/{}] {label}: {:.3} s wall, {:.3} s user, {:.3} s system, {} KiB peak, \
                 chainstate {} bytes; peak disk: blocks {} bytes, chainstate {} bytes, \
                 both {} bytes",
                position + 1,
                order.len(),
                measurement.wall.as_secs_f64(),
                measurement.user.as_secs_f64(),
                measurement.system.as_secs_f64(),
                measurement.peak_rss_kibibytes,
                outcome.chainstate_bytes,
                outcome.disk_use.peak_blocks_bytes,
                outcome.disk_use.peak_chainstate_bytes,
                outcome.disk_use.peak_total_bytes
            );
            let (node, run_index, warmup) = (name.clone(), run.run_index, run.warmup);
            records.push(RunRecord { node, run_index, warmup, outcome });
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaves_nodes_reversing_every_other_round() {
        let order = schedule(2, 1, 2);
        let names: Vec<String> = order
            .iter()
            .map(|run| {
                format!("{}{}{}", run.node, if run.warmup { "w" } else { "-" }, run.run_index)
            })
            .collect();
        assert_eq!(names, ["0w1", "1w1", "1-1", "0-1", "0-2", "1-2"]);
        assert_eq!(schedule(3, 0, 1).len(), 3);
        assert!(schedule(1, 0, 3).iter().all(|run| run.node == 0 && !run.warmup));
    }
}
