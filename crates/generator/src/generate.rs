//! The whole run: keys, genesis, the valid chain, then the optional invalid
//! blocks and forks, and the manifest.

use std::path::PathBuf;
use std::time::Instant;

use secp256k1::Secp256k1;

use crate::chain::{BlockMaker, ChainState};
use crate::error::GeneratorError;
use crate::forks::{build_branch, ForkPlan, REORG_BRANCH_BLOCKS};
use crate::invalid::{build_invalid_block, InvalidClass};
use crate::keys::KeyPool;
use crate::manifest::{
    utxo_count_step_blocks, ForkBlockRecord, InvalidBlockRecord, Manifest, GENERATOR_VERSION,
};
use crate::nonce_pool::NoncePool;
use crate::options::{GeneratorOptions, RecordedOptions};
use crate::output::{write_manifest, ChainWriter};
use crate::random::DeterministicRng;
use crate::regtest::Regtest;
use crate::siblings::Sibling;
use crate::signer::Signer;
use crate::statistics::ChainStatistics;

/// Random stream of the key pool.
const STREAM_KEYS: u64 = 1;
/// Random stream of the chain's shape.
const STREAM_CHAIN: u64 = 2;
/// Random stream of the obfuscation key.
const STREAM_OBFUSCATION: u64 = 3;
/// Random stream of the nonce pool.
const STREAM_NONCES: u64 = 5;

/// What a run produced and how long it took (the timing is not in the manifest,
/// which must not change from run to run).
#[derive(Debug, Clone)]
pub struct GenerationReport {
    /// The manifest as written.
    pub manifest: Manifest,
    /// Where it was written.
    pub manifest_path: PathBuf,
    /// Wall-clock seconds of the run.
    pub elapsed_seconds: f64,
}

impl GenerationReport {
    /// Block file bytes per second, in MB (10^6 bytes).
    pub fn megabytes_per_second(&self) -> f64 {
        self.manifest.file_bytes as f64 / 1e6 / self.elapsed_seconds.max(1e-9)
    }
}

/// Generates the chain `options` describe.
pub fn generate(options: &GeneratorOptions) -> Result<GenerationReport, GeneratorError> {
    match options.threads {
        Some(threads) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads.max(1))
                .build()
                .map_err(|_| GeneratorError::InvalidOption("could not start signing threads"))?;
            pool.install(|| generate_in_pool(options))
        }
        None => generate_in_pool(options),
    }
}

fn obfuscation_key(options: &GeneratorOptions) -> [u8; 8] {
    if options.xor_zero {
        return [0; 8];
    }
    DeterministicRng::new(options.seed, STREAM_OBFUSCATION).next_u64().to_le_bytes()
}

/// The pieces of one run.
struct Run<'a> {
    maker: BlockMaker<'a>,
    writer: ChainWriter,
    state: ChainState,
    statistics: ChainStatistics,
    fork_blocks: Vec<ForkBlockRecord>,
    invalid_blocks: Vec<InvalidBlockRecord>,
    /// The manifest's `utxo_count_by_height` so far.
    utxo_counts: Vec<(u32, u64)>,
}

impl Run<'_> {
    /// Records the UTXO set's size at the tip if `height_step` says so, or
    /// `always` (genesis and the last block).
    fn record_utxo_count(&mut self, height_step: u32, always: bool) {
        let height = self.state.height;
        let recorded = self.utxo_counts.last().is_some_and(|&(last, _)| last == height);
        if !recorded && (always || height % height_step == 0) {
            self.utxo_counts.push((height, self.state.wallet.coin_count() as u64));
        }
    }

    fn write_branch(
        &mut self,
        base: &ChainState,
        length: u32,
        branch: &str,
        seed: u64,
    ) -> Result<(), GeneratorError> {
        for built in build_branch(&self.maker, base, length, seed)? {
            self.writer.append(&built.bytes)?;
            self.fork_blocks.push(ForkBlockRecord {
                branch: branch.to_owned(),
                height: built.height(),
                hash: built.block.block_hash().to_hex(),
            });
        }
        Ok(())
    }

    /// The valid chain, with the fork branches in their places.
    fn write_valid_chain(&mut self, options: &GeneratorOptions) -> Result<(), GeneratorError> {
        let fork_plan =
            if options.forks { Some(ForkPlan::for_blocks(options.block_count())?) } else { None };
        let mut stale_base = None;
        let utxo_count_step = utxo_count_step_blocks(options.block_count());
        self.record_utxo_count(utxo_count_step, true);
        for _ in 0..options.block_count() {
            let next_height = self.state.height + 1;
            if fork_plan.is_some_and(|plan| plan.stale_height == next_height) {
                stale_base = Some(self.state.clone());
            }
            let tail = options
                .siblings
                .as_ref()
                .filter(|tail| next_height + tail.valid_blocks() == options.block_count() + 1);
            let siblings = match tail {
                Some(tail) => tail.build(&self.maker, &self.state, options.seed)?,
                None => Vec::new(),
            };
            let valid_position = tail.map_or(0, |tail| tail.valid_position);
            let built = self.maker.next_block(&mut self.state)?;
            self.write_invalid_siblings(&siblings[..valid_position], next_height)?;
            self.writer.append(&built.bytes)?;
            self.statistics.add(&built);
            self.record_utxo_count(utxo_count_step, false);
            self.write_invalid_siblings(&siblings[valid_position..], next_height)?;
            let Some(plan) = fork_plan else { continue };
            if self.state.height == plan.reorg_base_height {
                let base = self.state.clone();
                self.write_branch(&base, REORG_BRANCH_BLOCKS, "reorged", options.seed)?;
            }
            if let Some(base) = stale_base.take_if(|_| self.state.height == plan.stale_height) {
                self.write_branch(&base, 1, "stale", options.seed)?;
            }
        }
        self.record_utxo_count(utxo_count_step, true);
        Ok(())
    }

    /// Invalid siblings at `height` (see [`crate::siblings`]), recorded as
    /// the manifest's invalid blocks.
    fn write_invalid_siblings(
        &mut self,
        siblings: &[Sibling],
        height: u32,
    ) -> Result<(), GeneratorError> {
        for sibling in siblings {
            self.writer.append(&sibling.bytes)?;
            let class = sibling.class;
            self.invalid_blocks.push(InvalidBlockRecord {
                class: class.name().to_owned(),
                reject_reason: class.reject_reason().to_owned(),
                description: class.description().to_owned(),
                height,
                hash: sibling.hash.to_hex(),
            });
        }
        Ok(())
    }

    /// One block per invalid class, each on the valid tip.
    fn write_invalid_blocks(&mut self) -> Result<(), GeneratorError> {
        for class in InvalidClass::ALL {
            let block = build_invalid_block(&self.maker, &self.state, class)?;
            self.writer.append(&block.encode())?;
            self.invalid_blocks.push(InvalidBlockRecord {
                class: class.name().to_owned(),
                reject_reason: class.reject_reason().to_owned(),
                description: class.description().to_owned(),
                height: self.state.height + 1,
                hash: block.block_hash().to_hex(),
            });
        }
        Ok(())
    }
}

fn generate_in_pool(options: &GeneratorOptions) -> Result<GenerationReport, GeneratorError> {
    let start = Instant::now();
    let params = Regtest::new()?;
    let keys = KeyPool::derive(
        &mut DeterministicRng::new(options.seed, STREAM_KEYS),
        options.profile.key_count(),
    )?;
    let secp = Secp256k1::new();
    let nonces = NoncePool::new(&secp, &mut DeterministicRng::new(options.seed, STREAM_NONCES));
    let mix = options.profile.traffic_mix();
    let key = obfuscation_key(options);
    let mut writer = ChainWriter::create(&options.out, params.message_start, key)?;
    writer.append(&params.genesis.encode())?;
    if let Some(tail) = &options.siblings {
        tail.validate(options.block_count())?;
    }
    let mut run = Run {
        maker: BlockMaker {
            params: &params,
            signer: Signer { keys: &keys, secp: &secp, nonces: &nonces },
            mix: &mix,
            target_weight: options.weight_target(),
        },
        writer,
        state: ChainState::from_genesis(
            &params,
            DeterministicRng::new(options.seed, STREAM_CHAIN),
            &mix,
        ),
        statistics: ChainStatistics::default(),
        fork_blocks: Vec::new(),
        invalid_blocks: Vec::new(),
        utxo_counts: Vec::new(),
    };
    run.write_valid_chain(options)?;
    if options.invalid {
        run.write_invalid_blocks()?;
    }
    let manifest = finish_run(run, options, &params, key)?;
    let text = manifest.to_json_text()?;
    let manifest_path = write_manifest(&options.out, &text)?;
    Ok(GenerationReport { manifest, manifest_path, elapsed_seconds: start.elapsed().as_secs_f64() })
}

fn finish_run(
    run: Run<'_>,
    options: &GeneratorOptions,
    params: &Regtest,
    key: [u8; 8],
) -> Result<Manifest, GeneratorError> {
    let file_bytes = run.writer.file_bytes;
    let records = run.writer.records;
    let block_files = run.writer.finish()?;
    let mut manifest = Manifest {
        generator_version: GENERATOR_VERSION.to_owned(),
        network: "regtest".to_owned(),
        seed: options.seed,
        options: RecordedOptions::from(options),
        genesis_hash: params.genesis_hash.to_hex(),
        block_count: run.state.height,
        tip_hash: run.state.tip_hash.to_hex(),
        transactions: 0,
        inputs_by_script_type: run.statistics.inputs_named(),
        outputs_by_script_type: run.statistics.outputs_named(),
        total_bytes: 0,
        total_weight: 0,
        file_bytes,
        block_files,
        records,
        utxo_count: run.state.wallet.coin_count() as u64,
        utxo_count_by_height: run.utxo_counts,
        lock_time_transactions: 0,
        relative_lock_inputs: 0,
        spend_age_blocks: run.statistics.spend_ages_named(),
        spend_age_histogram: run.statistics.spend_age_ranges.named(),
        shapes: run.statistics.shapes_named(),
        obfuscation_key: ibex_primitives::hex::encode(&key),
        invalid_blocks: run.invalid_blocks,
        fork_blocks: run.fork_blocks,
    };
    manifest.set_statistics(&run.statistics);
    Ok(manifest)
}
