//! What the node reads back from its own disk, which a bad disk, a bad copy
//! or another program may have changed: undo records (`rev?????.dat`
//! payloads), coins and their compressed amounts and scripts (the coins
//! database), and block index records (`blocks/index`); and UTXO snapshot
//! files, which come from strangers.

use std::collections::BTreeMap;

use ibex_chainstate::compress::{
    compress_amount, decompress_amount, read_script, script_encoded_bytes, write_script,
};
use ibex_chainstate::index_store::{build_index, decode_record, encode_entry, StoredEntry};
use ibex_chainstate::snapshot::{SnapshotReader, SnapshotWriter};
use ibex_chainstate::{BlockIndexEntry, BlockUndo, Coin};
use ibex_primitives::encode::Reader;
use ibex_primitives::hints::{HintsFile, HintsWriter};
use ibex_primitives::limits::SCRIPT_BYTES_MAX;
use ibex_primitives::ChainWork;
use ibex_primitives::{Height, Params};

/// The script a too-long compressed script reads as (Core's `OP_RETURN`).
const OP_RETURN_SCRIPT: [u8; 1] = [0x6a];
/// The block index database's key prefix.
const INDEX_KEY_PREFIX: u8 = b'b';

/// `undo_record`: `BlockUndo::decode` on a `rev` record's payload. What
/// decodes re-encodes to a canonical form that is no longer than the input
/// (the dummy version becomes 0, scripts take their special forms), whose
/// size `encoded_bytes` predicts, and which decodes to the same undo data;
/// each spent coin survives the coins database's encoding too.
pub fn undo_record(data: &[u8]) {
    let Ok(undo) = BlockUndo::decode(data) else {
        return;
    };
    let canonical = undo.encode();
    assert_eq!(canonical.len(), undo.encoded_bytes());
    assert!(canonical.len() <= data.len(), "the canonical form is never longer");
    assert_eq!(BlockUndo::decode(&canonical).as_ref(), Ok(&undo));
    for coin in undo.transactions.iter().flat_map(|transaction| &transaction.spent) {
        assert_eq!(Coin::decode(&coin.encode()).as_ref(), Ok(coin));
    }
}

/// `coin`: `Coin::decode` on a coins database value. What decodes
/// re-encodes canonically (no longer than the input) to a value that
/// decodes to the same coin, and reads the same in undo form (the same
/// bytes with the dummy version after the height code).
pub fn coin(data: &[u8]) {
    let Ok(coin) = Coin::decode(data) else {
        return;
    };
    let canonical = coin.encode();
    assert!(canonical.len() <= data.len(), "the canonical form is never longer");
    assert_eq!(Coin::decode(&canonical).as_ref(), Ok(&coin));
    assert!(coin.script_pubkey().len() <= SCRIPT_BYTES_MAX);
    // One transaction undo of one spent coin.
    let mut undo = vec![0x01, 0x01];
    let mut reader = Reader::new(data);
    reader.read_varint().expect("the coin's height code read once");
    let code_bytes = reader.position();
    undo.extend_from_slice(&data[..code_bytes]);
    if coin.height() > 0 {
        undo.push(0x00);
    }
    undo.extend_from_slice(&data[code_bytes..]);
    let read = BlockUndo::decode(&undo).expect("a coin reads in undo form");
    assert_eq!(read.transactions[0].spent, [coin]);
}

/// `compressed_script`: Core's script compression both ways. The input is
/// read as a compressed script (the rest ignored): what reads compresses
/// to bytes `script_encoded_bytes` predicts that read back to the same
/// script. The input is also taken as a script: decompressing its
/// compressed form gives it back (a script over 10,000 bytes reads as
/// `OP_RETURN`, as Core reads it).
pub fn compressed_script(data: &[u8]) {
    let mut reader = Reader::new(data);
    if let Ok(script) = read_script(&mut reader) {
        assert!(script.len() <= SCRIPT_BYTES_MAX);
        let mut compressed = Vec::new();
        write_script(&mut compressed, &script);
        assert_eq!(compressed.len(), script_encoded_bytes(&script));
        assert!(compressed.len() <= reader.position(), "the canonical form is never longer");
        assert_eq!(read_script(&mut Reader::new(&compressed)).as_ref(), Ok(&script));
    }
    let mut compressed = Vec::new();
    write_script(&mut compressed, data);
    assert_eq!(compressed.len(), script_encoded_bytes(data));
    let mut reader = Reader::new(&compressed);
    let script = read_script(&mut reader).expect("a compressed script reads back");
    assert_eq!(reader.remaining(), 0);
    if data.len() <= SCRIPT_BYTES_MAX {
        assert_eq!(script, data, "decompress(compress(script)) == script");
    } else {
        assert_eq!(script, OP_RETURN_SCRIPT);
    }
}

/// `compressed_amount`: Core's amount compression. The input's first 8
/// bytes (little-endian, zero-padded) are a compressed amount and, reduced
/// below the range where compression wraps, an amount:
/// `decompress(compress(amount)) == amount`; a compressed value that
/// decompresses within that range compresses back to itself.
pub fn compressed_amount(data: &[u8]) {
    let mut bytes = [0u8; 8];
    let length = data.len().min(8);
    bytes[..length].copy_from_slice(&data[..length]);
    let value = u64::from_le_bytes(bytes);
    // Compression multiplies by at most 9 and adds at most 10.
    let amount = value % (u64::MAX / 10);
    assert_eq!(decompress_amount(compress_amount(amount)), Some(amount));
    if let Some(decompressed) = decompress_amount(value) {
        if decompressed < u64::MAX / 10 {
            assert_eq!(compress_amount(decompressed), value, "one encoding per amount");
        }
    }
}

/// The index entry a stored record stands for (work and parent are not
/// stored: they are recomputed on load).
fn entry_of(stored: &StoredEntry) -> BlockIndexEntry {
    BlockIndexEntry {
        hash: stored.hash,
        header: stored.header,
        height: stored.height,
        chain_work: ChainWork::ZERO,
        parent: None,
        status: stored.status,
        transaction_count: stored.transaction_count,
        chain_transaction_count: 0,
        block_position: stored.block_position,
        undo_position: stored.undo_position,
        sequence: stored.sequence,
    }
}

/// `block_index_entry`: one block index record. Input: 32 bytes of block
/// hash (zero-padded), then the value. What decodes re-encodes to exactly
/// the value (every field is fixed-size or tagged).
pub fn block_index_entry(data: &[u8]) {
    let split = data.len().min(32);
    let mut key = vec![INDEX_KEY_PREFIX];
    key.extend_from_slice(&data[..split]);
    key.resize(33, 0);
    let value = &data[split..];
    let Ok(stored) = decode_record(&key, value) else {
        return;
    };
    assert_eq!(stored.hash.as_bytes(), &key[1..]);
    assert_eq!(encode_entry(&entry_of(&stored)), value, "the record re-encodes exactly");
}

/// Records as the database holds them: one value per hash (the last one
/// given wins, as a later write replaces an earlier one).
fn records_of(mut data: &[u8]) -> BTreeMap<[u8; 32], &[u8]> {
    let mut records = BTreeMap::new();
    while data.len() >= 33 {
        let (hash, rest) = data.split_at(32);
        let (length, rest) = rest.split_at(1);
        let (value, rest) = rest.split_at(usize::from(length[0]).min(rest.len()));
        records.insert(hash.try_into().expect("32 bytes"), value);
        data = rest;
    }
    records
}

/// `block_index_records`: the whole block index load from a set of
/// records. Input: records of 32 bytes of hash, a length byte and that
/// many bytes of value. The load fails with a typed error or builds a tree
/// of every record in which each block sits one above its parent, with the
/// parent's work plus its own, and re-encodes to the value it was read from.
pub fn block_index_records(data: &[u8]) {
    let records = records_of(data);
    let mut stored = Vec::with_capacity(records.len());
    for (hash, value) in &records {
        let key = [&[INDEX_KEY_PREFIX][..], hash].concat();
        let Ok(entry) = decode_record(&key, value) else {
            return;
        };
        stored.push(entry);
    }
    let Ok(mut index) = build_index(stored) else {
        return;
    };
    assert_eq!(index.len(), records.len());
    let ids: Vec<_> = index.ids().collect();
    let mut sequence_max = 0;
    for id in ids {
        let entry = index.entry(id);
        sequence_max = sequence_max.max(entry.sequence);
        assert_eq!(encode_entry(entry), records[entry.hash.as_bytes()]);
        let proof =
            ibex_primitives::pow::block_proof(ibex_primitives::CompactTarget(entry.header.bits));
        match entry.parent {
            None => assert_eq!(entry.height, 0),
            Some(parent) => {
                let parent = index.entry(parent);
                assert_eq!(parent.height + 1, entry.height);
                assert_eq!(parent.hash, entry.header.previous_block_hash);
                let work = parent.chain_work.wrapping_add(proof);
                assert_eq!(entry.chain_work, ChainWork::from_u256(work.to_u256()));
            }
        }
        assert_eq!(index.get(&entry.hash), Some(id));
    }
    assert!(index.next_sequence() > sequence_max, "new blocks come after stored ones");
}

/// Base height the `utxo_snapshot` target reads with: high enough that
/// the height check passes for most coins and fails for some.
pub const SNAPSHOT_BASE_HEIGHT: u32 = 1_000_000;
/// Coins the `utxo_snapshot` target reads at most from one input.
const SNAPSHOT_COINS_READ_MAX: usize = 100_000;

/// `utxo_snapshot`: `SnapshotReader` on a regtest snapshot file (what
/// `loadtxoutset` reads from strangers). Reading ends in a coin list or
/// an error, never a panic; a file read to its end writes back (through
/// `SnapshotWriter`) to a file that reads as the same coins, no longer
/// than the input.
pub fn utxo_snapshot(data: &[u8]) {
    let params = Params::regtest();
    let length = data.len() as u64;
    let base_height = Height::new(SNAPSHOT_BASE_HEIGHT);
    let Ok(mut reader) = SnapshotReader::new(data, &params, Some(length), base_height) else {
        return;
    };
    let metadata = *reader.metadata();
    let mut coins = Vec::new();
    loop {
        match reader.next_coin() {
            Ok(Some(coin)) => coins.push(coin),
            Ok(None) => break,
            Err(_) => return,
        }
        if coins.len() >= SNAPSHOT_COINS_READ_MAX {
            return;
        }
    }
    assert_eq!(coins.len() as u64, metadata.coin_count);
    let mut writer = SnapshotWriter::new(Vec::new(), &metadata).expect("a header writes");
    for (outpoint, coin) in &coins {
        writer.add(outpoint, coin).expect("coins read in key order write in key order");
    }
    let (rewritten, written) = writer.finish().expect("writing to memory");
    assert_eq!(written, metadata.coin_count);
    assert!(rewritten.len() <= data.len(), "the canonical form is never longer");
    let mut again = SnapshotReader::new(rewritten.as_slice(), &params, None, base_height)
        .expect("a written header reads");
    for expected in &coins {
        assert_eq!(again.next_coin().expect("a written coin reads").as_ref(), Some(expected));
    }
    assert!(again.next_coin().expect("a written file ends cleanly").is_none());
}

/// `hints_file`: `HintsFile::parse` on a SwiftSync hints file (from
/// strangers). Reading ends in a file or an error, never a panic; a file
/// that reads writes back, record by record, to the same bytes (every
/// record has one encoding), and each block's indices increase.
pub fn hints_file(data: &[u8]) {
    let Ok(file) = HintsFile::parse(data.to_vec(), None) else { return };
    let mut writer = HintsWriter::new(file.version(), file.terminal_height());
    let mut indices = Vec::new();
    let mut unspent_count = 0u64;
    for height in 1..=file.terminal_height() {
        file.unspent_indices(height, &mut indices).expect("a parsed file answers every height");
        assert!(indices.windows(2).all(|pair| pair[0] < pair[1]), "indices increase");
        unspent_count += indices.len() as u64;
        writer.push_block(&indices);
    }
    assert_eq!(unspent_count, file.unspent_count());
    assert_eq!(writer.finish().expect("every block written"), data, "one encoding per file");
}
