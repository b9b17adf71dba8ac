//! Bitcoin Core's validation (libbitcoinkernel's `ChainstateManager`,
//! regtest) and Ibex's chainstate fed the same blocks in the same order
//! must agree on every block: whether it is taken (new, already known) or
//! refused, which blocks each step connects, disconnects and finds invalid,
//! in order, and at the end the same tip.
//!
//! Chains: generated `tiny` chains (with the generator's invalid blocks of
//! every class, with forks and a reorganisation, and both), and the
//! Core-made `shared/chains/core-wallet-mix`. Each generated chain is also
//! imported from its block files by Core (its `-reindex`: every file
//! indexed, then one `ActivateBestChain`) and by Ibex (`-reindex`,
//! [`import_blocks`], connecting as it reads), which must both reach the
//! block-by-block tip, Ibex finding the same blocks invalid.
//!
//! Builds Core with cmake and boost, so it is behind a feature:
//! `cargo test -p ibex-chainstate --features kernel-differential --test kernel_differential`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bitcoinkernel::prelude::*;
use bitcoinkernel::{
    Block, BlockTreeEntry, BlockValidationStateRef, ChainType, ChainstateManager, Context,
    ContextBuilder, ProcessBlockResult, ValidationMode,
};
use ibex_chainstate::{
    import_blocks, AcceptOutcome, ChainEvent, Chainstate, ChainstateOptions, ImportSource,
    PreparedBlock,
};
use ibex_generator::invalid::InvalidClass;
use ibex_generator::regtest::REGTEST_MESSAGE_START;
use ibex_generator::replay::read_blocks;
use ibex_generator::siblings::{SiblingTail, MIXED_SIBLING_CLASSES};
use ibex_generator::{generate, GeneratorOptions, Manifest, Profile};
use ibex_primitives::{BlockBuffers, Params};

/// What happened to the chain during one step, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// The tip became this block (a block connected, or the one above it
    /// disconnected).
    TipMoved(String),
    /// This block was found invalid.
    Invalid(String),
}

/// What became of the offered block itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Taken and stored for the first time.
    New,
    /// Taken, already stored.
    Duplicate,
    /// Refused.
    Rejected,
}

/// One offered block as one implementation saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    verdict: Verdict,
    changes: Vec<Change>,
}

impl Step {
    /// Whether the offered block (hash `hash`) came out valid: taken and
    /// not found invalid when connected.
    fn is_valid(&self, hash: &str) -> bool {
        self.verdict != Verdict::Rejected && !self.changes.contains(&Change::Invalid(hash.into()))
    }
}

type ChangeLog = Arc<Mutex<Vec<Change>>>;

/// Core's side: a regtest `ChainstateManager` logging its validation
/// signals.
struct CoreSide {
    chainman: ChainstateManager,
    log: ChangeLog,
    _context: Context,
}

fn regtest_context(log: &ChangeLog) -> Context {
    let (checked, connected, disconnected) = (log.clone(), log.clone(), log.clone());
    ContextBuilder::new()
        .chain_type(ChainType::Regtest)
        .validation(move |registry| {
            registry.register_block_checked(
                move |block: Block, state: BlockValidationStateRef<'_>| {
                    if state.mode() != ValidationMode::Valid {
                        checked.lock().unwrap().push(Change::Invalid(block.hash().to_string()));
                    }
                },
            );
            registry.register_block_connected(move |block: Block, _: BlockTreeEntry<'_>| {
                connected.lock().unwrap().push(Change::TipMoved(block.hash().to_string()));
            });
            registry.register_block_disconnected(move |block: Block, _: BlockTreeEntry<'_>| {
                let parent = block.header().prev_hash().to_string();
                disconnected.lock().unwrap().push(Change::TipMoved(parent));
            });
        })
        .build()
        .unwrap()
}

impl CoreSide {
    fn new(root: &Path) -> CoreSide {
        let log = ChangeLog::default();
        let context = regtest_context(&log);
        let data = root.join("core-data");
        let blocks = root.join("core-blocks");
        let chainman =
            ChainstateManager::new(&context, data.to_str().unwrap(), blocks.to_str().unwrap())
                .unwrap();
        log.lock().unwrap().clear();
        CoreSide { chainman, log, _context: context }
    }

    fn offer(&self, bytes: &[u8]) -> Step {
        let verdict = match Block::new(bytes) {
            Err(_) => Verdict::Rejected,
            Ok(block) => match self.chainman.process_block(&block) {
                ProcessBlockResult::NewBlock => Verdict::New,
                ProcessBlockResult::Duplicate => Verdict::Duplicate,
                ProcessBlockResult::Rejected => Verdict::Rejected,
            },
        };
        Step { verdict, changes: std::mem::take(&mut *self.log.lock().unwrap()) }
    }

    fn tip(&self) -> (String, u32) {
        let tip = self.chainman.active_chain().tip();
        (tip.block_hash().to_string(), u32::try_from(tip.height()).unwrap())
    }
}

/// The invalid blocks Ibex reported, with Core's reject reason.
type Reasons = Arc<Mutex<HashMap<String, String>>>;

/// Ibex's side: a chainstate on an empty directory, fed block by block.
struct IbexSide {
    chainstate: Chainstate,
    log: ChangeLog,
    reasons: Reasons,
    buffers: BlockBuffers,
}

fn ibex_options(root: &Path, blocks: PathBuf) -> ChainstateOptions {
    ChainstateOptions {
        params: Params::regtest(),
        blocks_directory: blocks,
        chainstate_directory: root.join("ibex-chainstate"),
        memory: ibex_chainstate::MemoryBudget::for_coins_bytes(32 << 20, 1 << 20),
        script_threads: 2,
        assume_valid: None,
        periodic_flush_interval: Duration::from_secs(3600),
        stop_at_height: None,
        prune: ibex_chainstate::PruneMode::Disabled,
        fast_prune: false,
    }
}

fn open_ibex(options: ChainstateOptions, log: &ChangeLog, reasons: &Reasons) -> Chainstate {
    let (log, reasons) = (log.clone(), reasons.clone());
    let observer = move |event: &ChainEvent| match event {
        ChainEvent::TipUpdated(update) => {
            log.lock().unwrap().push(Change::TipMoved(update.hash.to_hex()));
        }
        ChainEvent::BlockInvalid { hash, reason, .. } => {
            log.lock().unwrap().push(Change::Invalid(hash.to_hex()));
            reasons.lock().unwrap().insert(hash.to_hex(), reason.clone());
        }
        _ => {}
    };
    Chainstate::open(options, Box::new(observer)).unwrap()
}

impl IbexSide {
    fn new(root: &Path) -> IbexSide {
        let (log, reasons) = (ChangeLog::default(), Reasons::default());
        let options = ibex_options(root, root.join("ibex-blocks"));
        let mut chainstate = open_ibex(options, &log, &reasons);
        chainstate.ensure_genesis().unwrap();
        log.lock().unwrap().clear();
        IbexSide { chainstate, log, reasons, buffers: BlockBuffers::default() }
    }

    /// Offers a block as Core's `ProcessNewBlock` does: accept, then
    /// activate the best chain unless the block was refused. Core checks a
    /// block's scripts before connecting the next; Ibex overlaps them with
    /// the next block, so the last block connected is settled here (and if
    /// its scripts failed, the best chain is activated again, as Core's
    /// `ActivateBestChain` goes on to the next candidate).
    fn offer(&mut self, bytes: &[u8]) -> Step {
        let params = self.chainstate.params().clone();
        let verdict = match PreparedBlock::prepare(bytes.to_vec(), None, &params, &mut self.buffers)
        {
            Err(_) => Verdict::Rejected,
            Ok(block) => match self.chainstate.accept_block(block).unwrap() {
                AcceptOutcome::Accepted(_) => Verdict::New,
                AcceptOutcome::AlreadyKnown(_) => Verdict::Duplicate,
                AcceptOutcome::UnknownParent(_) | AcceptOutcome::Invalid(_) => Verdict::Rejected,
            },
        };
        if verdict != Verdict::Rejected {
            loop {
                self.chainstate.activate_best_chain().unwrap();
                if self.chainstate.settle().unwrap() {
                    break;
                }
            }
        }
        Step { verdict, changes: std::mem::take(&mut *self.log.lock().unwrap()) }
    }

    fn tip(&self) -> (String, u32) {
        let (hash, height) = self.chainstate.tip().unwrap();
        (hash.to_hex(), height)
    }
}

/// What a differential run found.
struct Outcome {
    tip: (String, u32),
    /// Every block found invalid (refused or failed to connect).
    invalid: BTreeSet<String>,
    /// Blocks offered that came out valid.
    valid_count: usize,
    /// Steps that moved the tip to another block than the one offered (a
    /// disconnection: a reorganisation).
    reorganisations: usize,
    /// Ibex's reject reason per invalid block.
    reasons: HashMap<String, String>,
}

/// Feeds `blocks` to both sides and asserts they agree step by step.
fn run_both(root: &Path, blocks: &[Vec<u8>]) -> Outcome {
    let core = CoreSide::new(root);
    let mut ibex = IbexSide::new(root);
    let mut invalid = BTreeSet::new();
    let mut valid_count = 0;
    let mut reorganisations = 0;
    for (number, bytes) in blocks.iter().enumerate() {
        let hash = Block::new(bytes).map(|block| block.hash().to_string()).unwrap_or_default();
        let core_step = core.offer(bytes);
        let ibex_step = ibex.offer(bytes);
        assert_eq!(
            ibex_step, core_step,
            "block {number} ({hash}): Ibex (left) and Core (right) disagree"
        );
        if core_step.is_valid(&hash) {
            valid_count += 1;
        }
        let elsewhere = |change: &Change| matches!(change, Change::TipMoved(to) if *to != hash);
        if core_step.changes.iter().any(elsewhere) {
            reorganisations += 1;
        }
        for change in core_step.changes {
            if let Change::Invalid(invalid_hash) = change {
                invalid.insert(invalid_hash);
            }
        }
        if core_step.verdict == Verdict::Rejected {
            invalid.insert(hash);
        }
    }
    let tip = core.tip();
    assert_eq!(ibex.tip(), tip, "tips differ (Ibex left, Core right)");
    let reasons = ibex.reasons.lock().unwrap().clone();
    Outcome { tip, invalid, valid_count, reorganisations, reasons }
}

fn generated(
    directory: &Path,
    seed: u64,
    configure: impl FnOnce(&mut GeneratorOptions),
) -> Manifest {
    let mut options = GeneratorOptions::new(Profile::Tiny, seed, directory.to_path_buf());
    configure(&mut options);
    generate(&options).unwrap().manifest
}

/// Core's own `-reindex` of the block files in `blocks` (a copy: Core
/// writes its undo files there): every file indexed with `AcceptBlock`,
/// then `ActivateBestChain` once. Its tip.
fn core_reindex(root: &Path, blocks: &Path) -> (String, u32) {
    let log = ChangeLog::default();
    let context = regtest_context(&log);
    let data = root.join("core-reindex-data");
    let chainman =
        ChainstateManager::builder(&context, data.to_str().unwrap(), blocks.to_str().unwrap())
            .unwrap()
            .wipe_db(true, true)
            .unwrap()
            .build()
            .unwrap();
    chainman.import_blocks().unwrap();
    let tip = chainman.active_chain().tip();
    (tip.block_hash().to_string(), u32::try_from(tip.height()).unwrap())
}

fn copy_directory(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

/// What an Ibex `-reindex` must find invalid, against the blocks Core found
/// invalid block by block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ImportInvalid {
    /// The same blocks.
    Same,
    /// Some of them: a block with more work arrived while an invalid one
    /// was still being checked, so the siblings between were never tried
    /// (Core's own `-reindex`, which activates once all files are indexed,
    /// tries none of them either).
    Subset,
}

/// Ibex's `-reindex` of the generated files: Core's tip, and the blocks
/// Core found invalid.
fn check_import(root: &Path, generated_blocks: &Path, outcome: &Outcome, expect: ImportInvalid) {
    let core_blocks = root.join("core-reindex-blocks");
    copy_directory(generated_blocks, &core_blocks);
    assert_eq!(core_reindex(root, &core_blocks), outcome.tip, "Core's -reindex tip");
    let blocks = root.join("import-blocks");
    copy_directory(generated_blocks, &blocks);
    let (log, reasons) = (ChangeLog::default(), Reasons::default());
    let mut options = ibex_options(root, blocks);
    options.chainstate_directory = root.join("import-chainstate");
    let mut chainstate = open_ibex(options, &log, &reasons);
    let summary =
        import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false))
            .unwrap();
    assert_eq!(summary.orphans_left, 0);
    let (hash, height) = chainstate.tip().unwrap();
    assert_eq!((hash.to_hex(), height), outcome.tip, "reindex tip differs from Core's");
    let found: BTreeSet<String> = reasons.lock().unwrap().keys().cloned().collect();
    match expect {
        ImportInvalid::Same => {
            assert_eq!(found, outcome.invalid, "reindex found other blocks invalid than Core")
        }
        ImportInvalid::Subset => assert!(
            found.is_subset(&outcome.invalid),
            "reindex found blocks invalid that Core did not: {found:?}"
        ),
    }
    assert!(
        chainstate.check_best_candidate().is_fixed_point(),
        "reindex left a candidate: {}",
        chainstate.check_best_candidate()
    );
}

/// A generated chain through both sides; returns what Core found.
fn differential_on_generated(seed: u64, invalid: bool, forks: bool) -> (Manifest, Outcome) {
    let configure = |options: &mut GeneratorOptions| {
        options.invalid = invalid;
        options.forks = forks;
    };
    differential_on(seed, configure, ImportInvalid::Same)
}

/// A generated chain (options set by `configure`) through both sides.
fn differential_on(
    seed: u64,
    configure: impl FnOnce(&mut GeneratorOptions),
    expect: ImportInvalid,
) -> (Manifest, Outcome) {
    let root = tempfile::tempdir().unwrap();
    let generated_blocks = root.path().join("generated");
    let manifest = generated(&generated_blocks, seed, configure);
    let blocks = read_blocks(&generated_blocks, REGTEST_MESSAGE_START).unwrap();
    let outcome = run_both(root.path(), &blocks);
    assert_eq!(outcome.tip, (manifest.tip_hash.clone(), manifest.block_count));
    check_import(root.path(), &generated_blocks, &outcome, expect);
    (manifest, outcome)
}

#[test]
fn plain_chain_agrees_with_core() {
    let (manifest, outcome) = differential_on_generated(11, false, false);
    assert!(outcome.invalid.is_empty());
    assert_eq!(outcome.reorganisations, 0);
    // Every block but genesis (already known) is new and valid.
    assert_eq!(outcome.valid_count, manifest.block_count as usize + 1);
}

#[test]
fn invalid_blocks_agree_with_core() {
    let (manifest, outcome) = differential_on_generated(12, true, false);
    assert!(!manifest.invalid_blocks.is_empty());
    for record in &manifest.invalid_blocks {
        assert!(outcome.invalid.contains(&record.hash), "Core took the {} block", record.class);
        assert_eq!(
            outcome.reasons.get(&record.hash),
            Some(&record.reject_reason),
            "Ibex's reason for the {} block",
            record.class
        );
    }
}

#[test]
fn forks_and_reorganisation_agree_with_core() {
    let (manifest, outcome) = differential_on_generated(13, false, true);
    assert!(!manifest.fork_blocks.is_empty());
    assert!(outcome.invalid.is_empty());
    assert!(outcome.reorganisations > 0, "no step moved the tip off the offered block");
}

#[test]
fn forks_with_invalid_blocks_agree_with_core() {
    let (manifest, outcome) = differential_on_generated(14, true, true);
    let expected: BTreeSet<String> =
        manifest.invalid_blocks.iter().map(|record| record.hash.clone()).collect();
    assert!(expected.is_subset(&outcome.invalid));
    for record in &manifest.fork_blocks {
        assert!(!outcome.invalid.contains(&record.hash), "fork block {} refused", record.hash);
    }
}

#[test]
fn core_wallet_chain_agrees_with_core() {
    let shared = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix/blocks");
    let root = tempfile::tempdir().unwrap();
    let copy = root.path().join("shared-copy");
    std::fs::create_dir_all(&copy).unwrap();
    for name in ["blk00000.dat", "xor.dat"] {
        std::fs::copy(shared.join(name), copy.join(name)).unwrap();
    }
    let blocks = read_blocks(&copy, REGTEST_MESSAGE_START).unwrap();
    let outcome = run_both(root.path(), &blocks);
    assert!(outcome.invalid.is_empty());
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(shared.join("../expected.json")).unwrap())
            .unwrap();
    let tip = &expected["gettxoutsetinfo_tip_hash_serialized_3"];
    assert_eq!(outcome.tip.0, tip["bestblock"].as_str().unwrap());
    assert_eq!(u64::from(outcome.tip.1), tip["height"].as_u64().unwrap());
}

/// Competing siblings: k invalid siblings of the last valid block (script
/// failures, a coinbase paying too much, missing and double-spent inputs)
/// with the valid sibling last, first, in the middle, or under a valid
/// child. Block by block, each step agrees with Core; the `-reindex` of the
/// files (where scripts overlap the next blocks) must reach Core's tip with
/// the same blocks found invalid.
#[test]
fn competing_siblings_agree_with_core() {
    const CLASSES: [InvalidClass; 6] = MIXED_SIBLING_CLASSES;
    let shapes = [
        (1, 1, false),
        (2, 2, false),
        (4, 4, false),
        (6, 6, false),
        (3, 0, false),
        (4, 2, false),
        (3, 3, true),
        (5, 2, true),
    ];
    for (seed, (invalid_count, valid_position, valid_child)) in (20..).zip(shapes) {
        let configure = |options: &mut GeneratorOptions| {
            options.blocks = Some(130);
            options.siblings = Some(SiblingTail {
                invalid: CLASSES[..invalid_count].to_vec(),
                valid_position,
                valid_child,
            });
        };
        let expect = if valid_child { ImportInvalid::Subset } else { ImportInvalid::Same };
        let (manifest, outcome) = differential_on(seed, configure, expect);
        let context =
            format!("{invalid_count} invalid, valid at {valid_position}, child {valid_child}");
        // The valid sibling (or its child) is Core's tip.
        assert_eq!(outcome.tip, (manifest.tip_hash.clone(), manifest.block_count), "{context}");
        if !valid_child {
            let before: BTreeSet<String> = manifest.invalid_blocks[..valid_position]
                .iter()
                .map(|record| record.hash.clone())
                .collect();
            assert_eq!(
                outcome.invalid, before,
                "{context}: Core tried the siblings before the valid one"
            );
        }
    }
}
