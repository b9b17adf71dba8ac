//! The crate's one error type, and the reasons its variants carry (kept
//! here, beside it, so that every module can return it without importing
//! the modules that fail).

use ibex_primitives::{BlockHash, DecodeError, OutPoint};

/// Everything that can go wrong in the chainstate crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChainstateError {
    /// A coin record in the database could not be decoded.
    #[error("corrupt coin record for {outpoint:?}: {source}")]
    CorruptCoin {
        /// The outpoint whose record is corrupt.
        outpoint: OutPoint,
        /// The decoding failure.
        source: CoinDecodeError,
    },
    /// A database key could not be decoded.
    #[error("corrupt coin key: {source}")]
    CorruptKey {
        /// The decoding failure.
        source: CoinDecodeError,
    },
    /// The best-block or head-blocks record could not be decoded.
    #[error("corrupt {record} record: {length_bytes} bytes")]
    CorruptRecord {
        /// Which record: "best block" or "head blocks".
        record: &'static str,
        /// Its length.
        length_bytes: usize,
    },
    /// A flush was started for a block other than the one an interrupted flush covered.
    #[error(
        "interrupted flush to {interrupted} but new flush to {requested}: reindex the chainstate"
    )]
    InconsistentHeadBlocks {
        /// The block the interrupted flush was writing.
        interrupted: BlockHash,
        /// The block the new flush writes.
        requested: BlockHash,
    },
    /// Spending a coin that is neither in the cache nor in the database.
    #[error("spending missing coin {outpoint:?}")]
    MissingCoin {
        /// The outpoint spent.
        outpoint: OutPoint,
    },
    /// Adding a coin over an unspent one without `possible_overwrite` (Core's logic error).
    #[error("adding coin {outpoint:?} over an unspent coin")]
    OverwriteUnspentCoin {
        /// The outpoint added.
        outpoint: OutPoint,
    },
    /// A coin height does not fit Core's 31-bit height field.
    #[error("coin height {height} above the 31-bit maximum")]
    HeightOutOfRange {
        /// The height given.
        height: u32,
    },
    /// A block's parent is not in the block index.
    #[error("block {hash} has unknown parent {parent}")]
    UnknownParent {
        /// The block.
        hash: BlockHash,
        /// Its parent.
        parent: BlockHash,
    },
    /// A block index record could not be decoded or linked.
    #[error("corrupt block index record for {hash}")]
    CorruptIndexEntry {
        /// The block.
        hash: BlockHash,
    },
    /// A block index record's header does not hash to the key it is stored
    /// under.
    #[error("block index record for {hash} holds another block's header")]
    IndexHeaderMismatch {
        /// The key it is stored under.
        hash: BlockHash,
    },
    /// A block's undo data does not fit the block.
    #[error("undo data of block {hash} does not match its transactions")]
    UndoMismatch {
        /// The block.
        hash: BlockHash,
    },
    /// Undo data could not be decoded.
    #[error("undo data of block {hash} is corrupt: {reason}")]
    CorruptUndo {
        /// The block.
        hash: BlockHash,
        /// What is wrong.
        reason: UndoDecodeError,
    },
    /// A stored block could not be decoded.
    #[error("stored block {hash} is corrupt: {reason}")]
    CorruptBlock {
        /// The block.
        hash: BlockHash,
        /// What is wrong.
        reason: ibex_primitives::BlockDecodeError,
    },
    /// A block file holds another block than the index says is there.
    #[error("block file holds block {found} where the index has {expected}")]
    WrongBlockInFile {
        /// The block the index names.
        expected: BlockHash,
        /// The block read.
        found: BlockHash,
    },
    /// Pruning was asked of a node that does not prune.
    #[error("Cannot prune blocks because node is not in prune mode.")]
    NotPruning,
    /// A block needed to connect, disconnect or replay is not stored.
    #[error("block {hash} data is missing (no block or undo position)")]
    MissingBlockData {
        /// The block.
        hash: BlockHash,
    },
    /// The coins database names a block the index does not have.
    #[error("the chainstate's best block {hash} is not in the block index: restart with -reindex-chainstate")]
    UnknownBestBlock {
        /// The block.
        hash: BlockHash,
    },
    /// A disconnect during replay failed.
    #[error("replaying blocks after an interrupted flush failed at {hash}")]
    ReplayFailed {
        /// The block.
        hash: BlockHash,
    },
    /// Activation left a block with more work than the tip untried even
    /// after the candidates were rebuilt from the index (a broken
    /// invariant: fail closed rather than end short of the best chain).
    #[error("block {hash} at height {height} has more work than the tip and was left: {reason}")]
    ActivationIncomplete {
        /// The block left.
        hash: BlockHash,
        /// Its height.
        height: u32,
        /// Why.
        reason: CandidateLeft,
    },
    /// A block's scripts could not be judged (a broken invariant; the
    /// block is left neither valid nor invalid).
    #[error("the scripts of block {hash} could not be checked: {reason}")]
    ScriptCheckBroken {
        /// The block.
        hash: BlockHash,
        /// What broke.
        reason: ScriptCheckBroken,
    },
    /// The script thread pool could not be started.
    #[error("cannot start script threads: {source}")]
    ThreadPool {
        /// Rayon's reason.
        source: rayon::ThreadPoolBuildError,
    },
    /// Block or undo files failed.
    #[error("block store: {source}")]
    BlockStore {
        /// The block store error.
        #[from]
        source: ibex_blockstore::BlockStoreError,
    },
    /// The database gave coins out of Core's order.
    #[error("coins out of order: {source}")]
    CoinOrder {
        /// Which coins.
        source: ibex_primitives::txoutset::CoinOrderError,
    },
    /// A worker of a whole-set walk stopped without the chunk it owed (it
    /// panicked).
    #[error("the coin walk's worker stopped before chunk {chunk}")]
    CoinWalkWorkerStopped {
        /// The chunk the walk waited for.
        chunk: u32,
    },
    /// The block read-ahead thread could not be started.
    #[error("cannot start the block read-ahead thread: {source}")]
    ReadAheadThread {
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A SwiftSync pass's worker thread could not be started.
    #[error("cannot start SwiftSync worker {worker}: {source}")]
    SwiftSyncThread {
        /// The worker's number.
        worker: usize,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The background flush thread could not be started.
    #[error("cannot start the flush thread: {source}")]
    FlushThread {
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A table of a background flush could not be written (RocksDB's
    /// message: a full disk, a key out of order).
    #[error("cannot write the table {}: {reason}", .path.display())]
    TableWrite {
        /// The table's file.
        path: std::path::PathBuf,
        /// What RocksDB said.
        reason: String,
    },
    /// The directory of tables waiting to be ingested could not be made or
    /// emptied.
    #[error("cannot prepare the table directory {}: {source}", .path.display())]
    TableDirectory {
        /// The directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A flush in tables was handed more parts than it has tables.
    #[error("a flush of {table_count} tables was given another part")]
    FlushTablesExceeded {
        /// The tables the flush was begun with.
        table_count: usize,
    },
    /// A flush in tables ended before all its parts were ingested.
    #[error("a flush of {table_count} tables ended after {parts_ingested} of them")]
    FlushTablesMissing {
        /// The tables the flush was begun with.
        table_count: usize,
        /// The parts ingested.
        parts_ingested: usize,
    },
    /// The background flush thread panicked.
    #[error("the flush thread panicked")]
    FlushThreadPanicked,
    /// A database opened read-only is not there (RocksDB would create
    /// its directory; a read-only open creates nothing).
    #[error("no database at {}", .path.display())]
    NoDatabase {
        /// The directory.
        path: std::path::PathBuf,
    },
    /// RocksDB failed.
    #[error("database: {source}")]
    Database {
        /// The RocksDB error.
        #[from]
        source: rocksdb::Error,
    },
    /// The block index or the coins database could not be opened or read
    /// as the chainstate opened (a missing `CURRENT`, a table failing its
    /// checksum). Worded as Core's "Error opening block database" / "Error
    /// opening coins database" (`src/node/chainstate.cpp`).
    #[error("Error opening {database} database {}: {source}", .path.display())]
    DatabaseOpen {
        /// Which database.
        database: DatabaseKind,
        /// Its directory.
        path: std::path::PathBuf,
        /// The RocksDB error.
        source: rocksdb::Error,
    },
    /// A snapshot's rollback would hold more coin changes in memory than
    /// its bound.
    #[error(
        "rolling back that far changes more than {coin_changes_max} coins: dump a later block"
    )]
    RollbackTooDeep {
        /// The bound.
        coin_changes_max: usize,
    },
    /// A UTXO snapshot could not be read or written.
    #[error(transparent)]
    Snapshot(#[from] crate::snapshot::SnapshotError),
    /// A file or directory of the chainstate could not be read, written,
    /// renamed or removed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The snapshot directory's `base_blockhash` file is not 32 bytes.
    #[error("{} is not a block hash: remove the snapshot directory to sync without it", .path.display())]
    CorruptSnapshotBase {
        /// The file.
        path: std::path::PathBuf,
    },
    /// The snapshot chainstate names a base block the AssumeUTXO table or
    /// the block index does not have.
    #[error("the snapshot chainstate's base block {hash} is not in the AssumeUTXO table or the block index")]
    UnknownSnapshotBase {
        /// The base block.
        hash: ibex_primitives::BlockHash,
    },
    /// A chainstate the engine was holding is gone (a broken invariant).
    #[error("the engine lost a chainstate it was validating")]
    SnapshotStateLost,
    /// The background chainstate reached the snapshot's base block and its
    /// coins do not hash to the AssumeUTXO entry's (Core's words).
    #[error("Ibex failed to validate the -assumeutxo snapshot state. This indicates a hardware problem, or a bug in the software, or a bad software modification that allowed an invalid snapshot to be loaded. As a result of this, the node will shut down and stop using any state that was built on the snapshot, resetting the chain height from {snapshot_height} to {base_height}. On the next restart, the node will resume syncing from {base_height} without using any snapshot data. Please report this incident to the Ibex developers, including how you obtained the snapshot. The invalid snapshot chainstate will be left on disk in case it is helpful in diagnosing the issue that caused this error.")]
    SnapshotValidationFailed {
        /// The snapshot chainstate's height.
        snapshot_height: u32,
        /// The base block's height, where the node resumes.
        base_height: u32,
    },
}

/// The [`ChainstateError::CorruptRecord`] name of a block index key.
pub const BLOCK_INDEX_KEY_RECORD: &str = "block index key";
/// The [`ChainstateError::CorruptRecord`] name of a block index flag.
pub const BLOCK_INDEX_FLAG_RECORD: &str = "block index flag";

impl ChainstateError {
    /// The database to rebuild when this error is one a rebuild cures: a
    /// database that opened as corrupt or incomplete, or corruption met
    /// while reading coins (a record that does not decode, a table failing
    /// its checksum). Not for an I/O error (a held lock, a permission, a
    /// failing disk), which a rebuild does not fix.
    pub fn database_to_rebuild(&self) -> Option<DatabaseKind> {
        use rocksdb::ErrorKind;
        match self {
            ChainstateError::DatabaseOpen { database, source, .. } => match source.kind() {
                ErrorKind::Corruption | ErrorKind::InvalidArgument | ErrorKind::NotFound => {
                    Some(*database)
                }
                _ => None,
            },
            ChainstateError::CorruptCoin { .. } | ChainstateError::CorruptKey { .. } => {
                Some(DatabaseKind::Coins)
            }
            ChainstateError::CorruptRecord { record, .. }
                if *record == BLOCK_INDEX_KEY_RECORD || *record == BLOCK_INDEX_FLAG_RECORD =>
            {
                Some(DatabaseKind::BlockIndex)
            }
            ChainstateError::CorruptIndexEntry { .. }
            | ChainstateError::IndexHeaderMismatch { .. } => Some(DatabaseKind::BlockIndex),
            ChainstateError::CorruptRecord { .. } => Some(DatabaseKind::Coins),
            // Once open, the block index is only written (it is read whole
            // as it opens): a table failing its checksum now is the coins'.
            ChainstateError::Database { source } if source.kind() == ErrorKind::Corruption => {
                Some(DatabaseKind::Coins)
            }
            _ => None,
        }
    }
}

/// The chainstate's two databases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DatabaseKind {
    /// The block index, `<blocks>/index` (Core's block tree database).
    BlockIndex,
    /// The coins, `<chain>/chainstate` (Core's chainstate database).
    Coins,
}

impl DatabaseKind {
    /// The `ibexd` option that rebuilds this database from the block files.
    pub fn rebuild_option(self) -> &'static str {
        match self {
            DatabaseKind::BlockIndex => "-reindex",
            DatabaseKind::Coins => "-reindex-chainstate",
        }
    }
}

impl std::fmt::Display for DatabaseKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            DatabaseKind::BlockIndex => "block index",
            DatabaseKind::Coins => "coins",
        })
    }
}

/// Why a coin record or key could not be decoded (untrusted bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoinDecodeError {
    /// The bytes ended early or a VARINT overflowed.
    #[error("{0}")]
    Bytes(#[from] DecodeError),
    /// The height-and-coinbase code does not fit 32 bits.
    #[error("height code {code} above 32 bits")]
    HeightCodeOutOfRange {
        /// The decoded code.
        code: u64,
    },
    /// The compressed amount decompresses above `MAX_MONEY` or overflows.
    #[error("compressed amount {compressed} out of range")]
    AmountOutOfRange {
        /// The compressed value read.
        compressed: u64,
    },
    /// The script size code does not fit 32 bits.
    #[error("script size code {code} above 32 bits")]
    ScriptSizeOutOfRange {
        /// The decoded code.
        code: u64,
    },
    /// A compressed uncompressed-P2PK key is not on the curve.
    #[error("compressed public key x coordinate not on the curve")]
    InvalidPublicKey,
    /// A key does not start with the coin prefix or has the wrong length.
    #[error("key is not a coin key")]
    NotCoinKey,
    /// A key's output index does not fit 32 bits.
    #[error("output index {vout} above 32 bits")]
    VoutOutOfRange {
        /// The decoded index.
        vout: u64,
    },
}

/// Why a block undo payload could not be decoded (untrusted bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UndoDecodeError {
    /// The transaction count is malformed or more than the bytes can hold.
    #[error("block undo transaction count: {0}")]
    TransactionCount(DecodeError),
    /// A transaction's coin count is malformed or more than the bytes can hold.
    #[error("transaction undo {transaction_index}: coin count: {source}")]
    CoinCount {
        /// Position of the transaction undo (0 is the block's second transaction).
        transaction_index: usize,
        /// What is wrong with the count.
        source: DecodeError,
    },
    /// A spent coin is malformed.
    #[error("transaction undo {transaction_index}, coin {input_index}: {source}")]
    Coin {
        /// Position of the transaction undo.
        transaction_index: usize,
        /// Position of the coin (the spending input's index).
        input_index: usize,
        /// What is wrong with the coin.
        source: CoinDecodeError,
    },
    /// A spent coin's dummy version does not fit 32 bits (Core reads it as `unsigned int`).
    #[error(
        "transaction undo {transaction_index}, coin {input_index}: version {value} above 32 bits"
    )]
    VersionDummyOutOfRange {
        /// Position of the transaction undo.
        transaction_index: usize,
        /// Position of the coin.
        input_index: usize,
        /// The value read.
        value: u64,
    },
    /// Bytes were left after the last transaction undo.
    #[error("{count} trailing bytes after the block undo at byte {offset}")]
    TrailingBytes {
        /// Where the trailing bytes start.
        offset: usize,
        /// How many bytes are left.
        count: usize,
    },
}

/// Why a block's scripts could not be judged: a broken invariant of the
/// engine (the block, its transaction ids and its undo data do not fit
/// together), never a verdict on the block. The check fails closed: the
/// block is neither valid nor invalid, and the caller stops with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScriptCheckBroken {
    /// The undo data has another number of records than the block has
    /// transactions after the coinbase.
    #[error("{records} undo records for {transactions} transactions after the coinbase")]
    UndoRecordCount {
        /// Undo records.
        records: usize,
        /// Transactions after the coinbase.
        transactions: usize,
    },
    /// Another number of transaction ids than transactions.
    #[error("{txids} transaction ids for {transactions} transactions")]
    TxidCount {
        /// Transaction ids.
        txids: usize,
        /// Transactions.
        transactions: usize,
    },
    /// A transaction could not be read from the block.
    #[error("transaction {index} cannot be read")]
    MissingTransaction {
        /// Its index in the block.
        index: usize,
    },
    /// A transaction's undo record has another number of spent coins than
    /// it has inputs.
    #[error("transaction {index} has {inputs} inputs but {spent} spent coins")]
    SpentCoinCount {
        /// Its index in the block.
        index: usize,
        /// Its inputs.
        inputs: usize,
        /// Spent coins in its undo record.
        spent: usize,
    },
    /// The verdict never came back from the script threads (the job was
    /// dropped or its thread died).
    #[error("the script verdict was lost")]
    VerdictLost,
}

/// Why a block with more work than the tip was left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateLeft {
    /// `-stopatheight` was reached first.
    StopHeight {
        /// The stop height.
        stop_height: u32,
    },
    /// An ancestor's block data is missing (its header is known).
    MissingAncestorData {
        /// The lowest ancestor above the active chain without data.
        hash: BlockHash,
        /// Its height.
        height: u32,
    },
    /// Blocks are connected but their scripts are not settled yet.
    ScriptsPending,
    /// Nothing stopped it: it was never tried (a broken invariant).
    NotTried,
}

impl std::fmt::Display for CandidateLeft {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CandidateLeft::StopHeight { stop_height } => {
                write!(formatter, "-stopatheight={stop_height} reached")
            }
            CandidateLeft::MissingAncestorData { hash, height } => {
                write!(formatter, "block data of its ancestor {hash} at height {height} is missing")
            }
            CandidateLeft::ScriptsPending => {
                write!(formatter, "the scripts of the last blocks are still being checked")
            }
            CandidateLeft::NotTried => write!(formatter, "it was not tried"),
        }
    }
}
