//! Damaged files met at start or import, on copies of Core's regtest chain
//! (`shared/chains/core-wallet-mix`): a coins database without `CURRENT`
//! and a block index table with a flipped byte refuse to open and name the
//! database to rebuild (never a silently empty database); block files
//! without a readable record import nothing and say so, file by file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ibex_chainstate::{
    import_blocks, ChainEvent, Chainstate, ChainstateError, ChainstateOptions, CoinsDatabase,
    DatabaseKind, DatabaseOptions, FileWithoutBlocks, FlushMode, FlushReason, ImportSource,
    NoBlocksCause,
};
use ibex_primitives::Params;

fn shared_blocks() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix/blocks")
}

/// `root/blocks` with a copy of Core's block file and `xor.dat`.
fn copy_blocks(root: &Path) -> PathBuf {
    let blocks = root.join("blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for name in ["blk00000.dat", "xor.dat"] {
        std::fs::copy(shared_blocks().join(name), blocks.join(name)).unwrap();
    }
    blocks
}

type Events = Arc<Mutex<Vec<ChainEvent>>>;

fn open(root: &Path, events: &Events) -> Result<Chainstate, ChainstateError> {
    let options = ChainstateOptions {
        params: Params::regtest(),
        blocks_directory: root.join("blocks"),
        chainstate_directory: root.join("chainstate"),
        memory: ibex_chainstate::MemoryBudget::for_coins_bytes(32 << 20, 1 << 20),
        script_threads: 2,
        assume_valid: None,
        periodic_flush_interval: Duration::from_secs(3600),
        stop_at_height: None,
        prune: ibex_chainstate::PruneMode::Disabled,
        fast_prune: false,
    };
    let events = events.clone();
    let observer = move |event: &ChainEvent| events.lock().unwrap().push(event.clone());
    Chainstate::open(options, Box::new(observer))
}

/// Reindexes Core's chain into `root` and closes it twice, so that both
/// databases hold their records in table files (a first close leaves them
/// in RocksDB's log; the next open writes the log to a table).
fn reindexed(root: &Path) -> Events {
    copy_blocks(root);
    let events = Events::default();
    let mut chainstate = open(root, &events).unwrap();
    import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false)).unwrap();
    chainstate.flush(FlushReason::Shutdown, FlushMode::EmptyCache).unwrap();
    drop(chainstate);
    drop(open(root, &events).unwrap());
    events
}

fn table_files(directory: &Path) -> Vec<PathBuf> {
    let mut tables: Vec<PathBuf> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "sst"))
        .collect();
    tables.sort();
    tables
}

fn open_error(root: &Path) -> ChainstateError {
    match open(root, &Events::default()) {
        Ok(_) => panic!("a damaged chainstate opened"),
        Err(error) => error,
    }
}

#[test]
fn coins_database_without_current_is_refused_not_recreated() {
    let root = tempfile::tempdir().unwrap();
    reindexed(root.path());
    let coins = root.path().join("chainstate");
    assert!(!table_files(&coins).is_empty());
    std::fs::remove_file(coins.join("CURRENT")).unwrap();
    // Every start refuses: RocksDB is never let to write an empty
    // database over the old tables.
    for _ in 0..2 {
        let error = open_error(root.path());
        assert!(
            matches!(
                &error,
                ChainstateError::DatabaseOpen { database: DatabaseKind::Coins, path, .. }
                    if *path == coins
            ),
            "{error}"
        );
        assert_eq!(error.database_to_rebuild(), Some(DatabaseKind::Coins));
        assert!(error.to_string().starts_with("Error opening coins database "), "{error}");
        assert!(!coins.join("CURRENT").exists());
    }
    let direct = CoinsDatabase::open(&coins, &DatabaseOptions::default());
    assert!(direct.is_err(), "the coins database opened without CURRENT");
    // A fresh directory is still created.
    let fresh = root.path().join("fresh");
    drop(CoinsDatabase::open(&fresh, &DatabaseOptions::default()).unwrap());
    assert!(fresh.join("CURRENT").exists());
}

#[test]
fn block_index_table_with_a_flipped_byte_is_refused() {
    let root = tempfile::tempdir().unwrap();
    reindexed(root.path());
    let index = root.path().join("blocks/index");
    let tables = table_files(&index);
    let table = tables.first().expect("the block index has a table file");
    let mut bytes = std::fs::read(table).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(table, bytes).unwrap();
    let error = open_error(root.path());
    assert!(
        matches!(&error, ChainstateError::DatabaseOpen { database: DatabaseKind::BlockIndex, .. }),
        "{error}"
    );
    assert_eq!(error.database_to_rebuild(), Some(DatabaseKind::BlockIndex));
    assert!(error.to_string().contains("Corruption"), "{error}");
    assert_eq!(DatabaseKind::BlockIndex.rebuild_option(), "-reindex");
    assert_eq!(DatabaseKind::Coins.rebuild_option(), "-reindex-chainstate");
}

fn files_without_blocks(events: &Events) -> Vec<FileWithoutBlocks> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            ChainEvent::BlockFileWithoutBlocks(file) => Some(file.clone()),
            _ => None,
        })
        .collect()
}

/// Imports `root`'s own block files into a new chainstate.
fn import_own_files(root: &Path) -> (Events, u64) {
    let events = Events::default();
    let mut chainstate = open(root, &events).unwrap();
    let summary =
        import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false))
            .unwrap();
    (events, summary.blocks_read)
}

#[test]
fn block_files_without_a_record_are_reported() {
    // A wrong xor.dat key: no record, and the first bytes say why.
    let root = tempfile::tempdir().unwrap();
    let blocks = copy_blocks(root.path());
    let key = std::fs::read(blocks.join("xor.dat")).unwrap();
    let wrong: Vec<u8> = key.iter().map(|byte| byte ^ 0x5a).collect();
    std::fs::write(blocks.join("xor.dat"), wrong).unwrap();
    let (events, blocks_read) = import_own_files(root.path());
    assert_eq!(blocks_read, 0);
    let reported = files_without_blocks(&events);
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0].path, blocks.join("blk00000.dat"));
    assert_eq!(reported[0].length_bytes, 16 << 20);
    assert!(
        matches!(reported[0].cause, NoBlocksCause::NoMagic { obfuscated: true, .. }),
        "{:?}",
        reported[0].cause
    );
    assert!(reported[0].cause.to_string().contains("wrong xor.dat key"));

    // A second file of random bytes after a good one: the good one imports,
    // the other is named.
    let root = tempfile::tempdir().unwrap();
    let blocks = copy_blocks(root.path());
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let random: Vec<u8> = (0..1 << 16)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(blocks.join("blk00001.dat"), &random).unwrap();
    let (events, blocks_read) = import_own_files(root.path());
    assert!(blocks_read > 1000, "{blocks_read}");
    let reported = files_without_blocks(&events);
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0].path, blocks.join("blk00001.dat"));
    assert_eq!(reported[0].length_bytes, 1 << 16);

    // An external file is read unobfuscated: Core's obfuscated file given
    // to -loadblock is reported with that hint.
    let root = tempfile::tempdir().unwrap();
    let events = Events::default();
    let mut chainstate = open(root.path(), &events).unwrap();
    let external = shared_blocks().join("blk00000.dat");
    let source = ImportSource::ExternalFile(external.clone());
    let summary = import_blocks(&mut chainstate, &source, &AtomicBool::new(false)).unwrap();
    assert_eq!(summary.blocks_read, 0);
    let reported = files_without_blocks(&events);
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0].path, external);
    assert!(matches!(reported[0].cause, NoBlocksCause::NoMagic { obfuscated: false, .. }));
    // A good import says nothing.
    let root = tempfile::tempdir().unwrap();
    copy_blocks(root.path());
    let (events, _) = import_own_files(root.path());
    assert!(files_without_blocks(&events).is_empty());
}
