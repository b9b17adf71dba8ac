//! Malformed input is rejected with the right typed error, never a panic, and
//! never makes the decoders allocate much more than the input's own size.
//!
//! - Truncations of the two mainnet blocks: every cut in the first and last
//!   bytes, at sampled transaction boundaries and at pseudo-random places fails
//!   in the transaction that contains the cut; every prefix of a sample of their
//!   transactions fails too; the error's offsets point at the cut.
//! - Counts larger than the input can hold give `CountTooLarge` for every
//!   counted field, and the largest allocation stays proportional to the input
//!   (measured with a per-thread allocation tracker).
//! - Non-canonical and over-limit compact sizes, a segwit flag with only empty
//!   witnesses, unknown flag bits and trailing bytes give Core's errors.
//! - Random and mutated byte strings never panic; whatever decodes re-encodes to
//!   the same bytes (the encoding is canonical).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The allocation tracker below is a `GlobalAlloc`, which is unsafe to implement;
// it only forwards to the system allocator and records sizes.
#![allow(unsafe_code)]

use ibex_primitives::encode::{compact_size_len, write_compact_size, COMPACT_SIZE_MAX};
use ibex_primitives::{
    Block, BlockDecodeError, BlockView, DecodeError, Field, ParsedTransaction, Transaction,
    TxInput, TxOutput,
};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Forwards to the system allocator and records, per thread, the largest single
/// allocation requested (tests run on several threads at once).
struct TrackingAllocator;

thread_local! {
    static LARGEST_ALLOCATION_BYTES: Cell<usize> = const { Cell::new(0) };
}

fn record_allocation(size: usize) {
    // `try_with` fails only while the thread is being torn down.
    let _ = LARGEST_ALLOCATION_BYTES.try_with(|largest| largest.set(largest.get().max(size)));
}

unsafe impl GlobalAlloc for TrackingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record_allocation(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record_allocation(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record_allocation(new_size);
        // SAFETY: as above.
        unsafe { System.realloc(pointer, layout, new_size) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(pointer, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: TrackingAllocator = TrackingAllocator;

/// Runs `work` and returns its result with the largest single allocation it made.
fn largest_allocation<T>(work: impl FnOnce() -> T) -> (T, usize) {
    LARGEST_ALLOCATION_BYTES.with(|largest| largest.set(0));
    let result = work();
    (result, LARGEST_ALLOCATION_BYTES.with(Cell::get))
}

/// The bound the decoders keep to: a block's per-transaction layout records are
/// reserved from its transaction count, at most one per 10 input bytes, about 80
/// bytes each; every other reservation is smaller per input byte.
fn allocation_bound_bytes(input_bytes: usize) -> usize {
    10 * input_bytes + 1024
}

#[test]
fn allocation_tracker_sees_allocations() {
    let (buffer, largest) = largest_allocation(|| vec![1u8; 1 << 20]);
    assert_eq!(buffer.len(), 1 << 20);
    assert!(largest >= 1 << 20);
    let ((), largest) = largest_allocation(|| ());
    assert_eq!(largest, 0);
}

fn mainnet_block(name: &str) -> &'static [u8] {
    static BLOCKS: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    let blocks = BLOCKS.get_or_init(|| {
        ["mainnet-413567.raw", "mainnet-702861.raw"].map(|file| {
            let path = PathBuf::from(
                std::env::var_os("CARGO_MANIFEST_DIR")
                    .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
            )
            .join("../../../shared/vectors/blocks")
            .join(file);
            std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        })
    });
    match name {
        "413567" => &blocks[0],
        "702861" => &blocks[1],
        _ => panic!("no block {name}"),
    }
}

/// Byte ranges of a block's transactions, relative to the block's start.
fn transaction_spans(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let block = BlockView::parse(bytes).unwrap();
    block
        .transactions()
        .map(|transaction| {
            let start = transaction.bytes().as_ptr() as usize - bytes.as_ptr() as usize;
            start..start + transaction.total_size()
        })
        .collect()
}

/// Checks that `error` is what decoding input cut to `cut` bytes must give: the
/// input ran out, either inside a field or after a count that the rest cannot hold.
fn check_truncation_error(error: &DecodeError, cut: usize, context: &str) {
    match *error {
        DecodeError::Truncated { offset, needed, remaining } => {
            assert_eq!(offset + remaining, cut, "{context}: {error}");
            assert!(needed > remaining, "{context}: {error}");
        }
        DecodeError::CountTooLarge { offset, count, minimum_bytes, remaining, .. } => {
            assert_eq!(offset + compact_size_len(count) + remaining, cut, "{context}: {error}");
            assert!(minimum_bytes > remaining as u64, "{context}: {error}");
        }
        _ => panic!("{context}: unexpected {error:?}"),
    }
}

fn check_block_truncation(bytes: &[u8], spans: &[std::ops::Range<usize>], cut: usize) {
    let context = format!("cut at {cut} of {}", bytes.len());
    let error = BlockView::parse(&bytes[..cut]).unwrap_err();
    assert!(!error.to_string().is_empty());
    match &error {
        BlockDecodeError::Header(source) => {
            // Either the header or count is cut, or the count says more
            // transactions than the bytes left can hold (10 bytes each at least).
            match source {
                DecodeError::Truncated { .. } => assert!(cut < spans[0].start, "{context}"),
                DecodeError::CountTooLarge { what, .. } => {
                    assert_eq!(*what, Field::Transactions, "{context}")
                }
                _ => panic!("{context}: unexpected {error:?}"),
            }
            check_truncation_error(source, cut, &context);
        }
        BlockDecodeError::Transaction { index, source } => {
            assert!(spans[*index].contains(&cut), "{context}: {error}");
            check_truncation_error(source, cut, &context);
        }
        _ => panic!("{context}: unexpected {error:?}"),
    }
}

/// Cuts to try in a block: the first and last bytes, around sampled transaction
/// boundaries, and pseudo-random places. Every cut (about 2.4 million) would take
/// minutes in a debug build; per-transaction prefixes cover every position kind.
fn block_cuts(length: usize, spans: &[std::ops::Range<usize>]) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..2048.min(length)).collect();
    cuts.extend(length.saturating_sub(64)..length);
    for span in spans.iter().step_by(32) {
        cuts.extend([span.start, span.start + 1, span.start + 5, span.end - 1]);
    }
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200 {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        cuts.push((state >> 33) as usize % length);
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.retain(|&cut| cut < length);
    cuts
}

#[test]
fn mainnet_block_truncations_fail_where_the_cut_is() {
    for name in ["413567", "702861"] {
        let bytes = mainnet_block(name);
        let spans = transaction_spans(bytes);
        for cut in block_cuts(bytes.len(), &spans) {
            check_block_truncation(bytes, &spans, cut);
        }
    }
}

#[test]
fn every_prefix_of_sampled_mainnet_transactions_fails() {
    for name in ["413567", "702861"] {
        let bytes = mainnet_block(name);
        let block = BlockView::parse(bytes).unwrap();
        // Every 8th transaction, segwit and legacy, up to 4 kB: ~500 transactions.
        let sample =
            block.transactions().step_by(8).filter(|transaction| transaction.total_size() <= 4096);
        for transaction in sample {
            let full = transaction.bytes();
            for cut in 0..full.len() {
                let context = format!("block {name} txid {} cut at {cut}", transaction.txid());
                let error = ParsedTransaction::parse(&full[..cut]).unwrap_err();
                check_truncation_error(&error, cut, &context);
            }
        }
    }
}

/// A small legacy transaction: 2 inputs with scripts, 2 outputs.
fn legacy_transaction() -> Transaction {
    let input = |vout: u32| TxInput {
        previous_output: ibex_primitives::OutPoint { txid: ibex_primitives::Txid([7; 32]), vout },
        script_sig: vec![0x51, 0x52],
        sequence: 0xffff_fffe,
        witness: vec![],
    };
    Transaction {
        version: 2,
        inputs: vec![input(0), input(1)],
        outputs: vec![
            TxOutput { value: 5_000, script_pubkey: vec![0x6a] },
            TxOutput { value: 6_000, script_pubkey: vec![0x00, 0x14] },
        ],
        lock_time: 0,
    }
}

/// The same transaction with a witness on its second input.
fn segwit_transaction() -> Transaction {
    let mut transaction = legacy_transaction();
    transaction.inputs[1].witness = vec![vec![0xab; 3], vec![]];
    transaction
}

/// Where the fields of [`legacy_transaction`]'s encoding start.
const INPUT_COUNT_OFFSET: usize = 4;
const FIRST_SCRIPT_SIG_OFFSET: usize = 4 + 1 + 36;
/// Version, input count, two inputs of 36 + 3 + 4 bytes.
const OUTPUT_COUNT_OFFSET: usize = 4 + 1 + 2 * 43;
const FIRST_SCRIPT_PUBKEY_OFFSET: usize = OUTPUT_COUNT_OFFSET + 1 + 8;

/// `bytes` with the one-byte compact size at `offset` replaced by `replacement`.
fn splice(bytes: &[u8], offset: usize, replacement: &[u8]) -> Vec<u8> {
    let mut out = bytes[..offset].to_vec();
    out.extend_from_slice(replacement);
    out.extend_from_slice(&bytes[offset + 1..]);
    out
}

fn compact_size(value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_compact_size(&mut out, value);
    out
}

#[test]
fn field_offsets_match_the_encoding() {
    let bytes = legacy_transaction().encode();
    assert_eq!(bytes[INPUT_COUNT_OFFSET], 2);
    assert_eq!(bytes[FIRST_SCRIPT_SIG_OFFSET], 2);
    assert_eq!(bytes[OUTPUT_COUNT_OFFSET], 2);
    assert_eq!(bytes[FIRST_SCRIPT_PUBKEY_OFFSET], 1);
    assert_eq!(bytes.len(), FIRST_SCRIPT_PUBKEY_OFFSET + 2 + 8 + 3 + 4);
}

/// Decodes `bytes` as a transaction and measures the largest allocation.
fn decode_transaction_measured(bytes: &[u8]) -> DecodeError {
    let (result, largest) = largest_allocation(|| ParsedTransaction::parse(bytes).map(|_| ()));
    assert!(largest <= allocation_bound_bytes(bytes.len()), "{largest} bytes for {}", bytes.len());
    result.unwrap_err()
}

#[test]
fn oversized_counts_are_rejected_before_allocating() {
    let legacy = legacy_transaction().encode();
    let huge = compact_size(COMPACT_SIZE_MAX);
    let cases = [
        (INPUT_COUNT_OFFSET, Field::Inputs),
        (FIRST_SCRIPT_SIG_OFFSET, Field::Bytes),
        (OUTPUT_COUNT_OFFSET, Field::Outputs),
        (FIRST_SCRIPT_PUBKEY_OFFSET, Field::Bytes),
    ];
    for (offset, field) in cases {
        let bytes = splice(&legacy, offset, &huge);
        let error = decode_transaction_measured(&bytes);
        assert!(
            matches!(error, DecodeError::CountTooLarge { what, offset: at, count: COMPACT_SIZE_MAX, .. } if what == field && at == offset),
            "{field}: {error:?}"
        );
    }

    // Witness counts: the second input's stack count and its first item's length.
    let segwit = segwit_transaction().encode();
    let witness_start = segwit.len() - 4 - (1 + 1 + (1 + 3) + 1);
    assert_eq!(&segwit[witness_start..witness_start + 3], &[0x00, 0x02, 0x03]);
    for (offset, field) in
        [(witness_start + 1, Field::WitnessItems), (witness_start + 2, Field::Bytes)]
    {
        let error = decode_transaction_measured(&splice(&segwit, offset, &huge));
        assert!(
            matches!(error, DecodeError::CountTooLarge { what, offset: at, .. } if what == field && at == offset),
            "{field}: {error:?}"
        );
    }

    // The bound is exact: 41 bytes per input (outpoint, empty script, sequence).
    // One byte short and the count is rejected; with just enough, the inputs are
    // read and decoding stops at the missing output count.
    for inputs in [1usize, 3, 200] {
        let mut bytes = 2i32.to_le_bytes().to_vec();
        write_compact_size(&mut bytes, inputs as u64);
        let counted = bytes.len();
        bytes.resize(counted + 41 * inputs - 1, 0);
        let error = decode_transaction_measured(&bytes);
        let expected_minimum = 41 * inputs as u64;
        assert!(
            matches!(error, DecodeError::CountTooLarge { what: Field::Inputs, minimum_bytes, .. } if minimum_bytes == expected_minimum),
            "{error:?}"
        );
        bytes.push(0);
        let error = decode_transaction_measured(&bytes);
        let end = bytes.len();
        assert_eq!(error, DecodeError::Truncated { offset: end, needed: 1, remaining: 0 });
    }
}

#[test]
fn oversized_transaction_count_is_rejected_before_allocating() {
    let header = [0u8; 80];
    for count in [COMPACT_SIZE_MAX, 0x0001_0000, 2] {
        let mut bytes = header.to_vec();
        write_compact_size(&mut bytes, count);
        bytes.extend_from_slice(&[0; 15]);
        let (result, largest) = largest_allocation(|| BlockView::parse(&bytes).map(|_| ()));
        assert!(largest <= allocation_bound_bytes(bytes.len()), "{largest} bytes");
        let error = result.unwrap_err();
        assert!(
            matches!(
                error,
                BlockDecodeError::Header(DecodeError::CountTooLarge {
                    what: Field::Transactions,
                    offset: 80,
                    ..
                })
            ),
            "{count}: {error:?}"
        );
    }
    // The largest count the rest of the input allows is accepted as a count and
    // reserves layouts for it, within the bound.
    let mut bytes = header.to_vec();
    bytes.push(0xfd);
    bytes.extend_from_slice(&0x1000u16.to_le_bytes());
    bytes.extend_from_slice(&[0xff; 0x1000 * 10]);
    let (result, largest) = largest_allocation(|| BlockView::parse(&bytes).map(|_| ()));
    assert!(largest <= allocation_bound_bytes(bytes.len()), "{largest} bytes");
    assert!(matches!(result, Err(BlockDecodeError::Transaction { index: 0, .. })), "{result:?}");
}

#[test]
fn non_canonical_and_too_large_compact_sizes_are_rejected() {
    let legacy = legacy_transaction().encode();
    for offset in [
        INPUT_COUNT_OFFSET,
        FIRST_SCRIPT_SIG_OFFSET,
        OUTPUT_COUNT_OFFSET,
        FIRST_SCRIPT_PUBKEY_OFFSET,
    ] {
        let value = u64::from(legacy[offset]);
        let longer_forms: [Vec<u8>; 3] = [
            [&[0xfd][..], &(value as u16).to_le_bytes()].concat(),
            [&[0xfe][..], &(value as u32).to_le_bytes()].concat(),
            [&[0xff][..], &value.to_le_bytes()].concat(),
        ];
        for form in longer_forms {
            let error = ParsedTransaction::parse(&splice(&legacy, offset, &form)).unwrap_err();
            assert_eq!(
                error,
                DecodeError::NonCanonicalCompactSize { offset, value },
                "{form:02x?}"
            );
        }
        // Above Core's MAX_SIZE, in canonical form.
        for value in [COMPACT_SIZE_MAX + 1, u64::from(u32::MAX), u64::MAX] {
            let error = ParsedTransaction::parse(&splice(&legacy, offset, &compact_size(value)))
                .unwrap_err();
            assert_eq!(error, DecodeError::CompactSizeTooLarge { offset, value });
        }
    }
    // In a block, the transaction count.
    let mut block = vec![0u8; 80];
    block.extend_from_slice(&[0xfd, 0x01, 0x00]);
    block.extend_from_slice(&legacy);
    assert_eq!(
        BlockView::parse(&block).unwrap_err(),
        BlockDecodeError::Header(DecodeError::NonCanonicalCompactSize { offset: 80, value: 1 })
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_longer_compact_size_form_is_non_canonical(value in prop_oneof![0u64..0x1_0100, any::<u32>().prop_map(u64::from)]) {
        let canonical = compact_size_len(value);
        let forms: [(usize, Vec<u8>); 3] = [
            (3, [&[0xfd][..], &(value as u16).to_le_bytes()].concat()),
            (5, [&[0xfe][..], &(value as u32).to_le_bytes()].concat()),
            (9, [&[0xff][..], &value.to_le_bytes()].concat()),
        ];
        for (length, form) in forms {
            let mut reader = ibex_primitives::encode::Reader::new(&form);
            let read = reader.read_compact_size();
            if length < canonical {
                // Too short a form cannot hold the value: it reads a different one.
                prop_assert_ne!(read, Ok(value));
            } else if length > canonical {
                prop_assert_eq!(read, Err(DecodeError::NonCanonicalCompactSize { offset: 0, value }));
            } else if value <= COMPACT_SIZE_MAX {
                prop_assert_eq!(read, Ok(value));
            } else {
                prop_assert_eq!(read, Err(DecodeError::CompactSizeTooLarge { offset: 0, value }));
            }
        }
    }
}

/// `transaction`'s legacy encoding turned into the extended form with `flag`,
/// and the given per-input witness sections (each already a count and items).
fn extended_encoding(transaction: &Transaction, flag: u8, witnesses: &[u8]) -> Vec<u8> {
    let legacy = transaction.encode_without_witness();
    let mut out = legacy[..4].to_vec();
    out.extend_from_slice(&[0x00, flag]);
    out.extend_from_slice(&legacy[4..legacy.len() - 4]);
    out.extend_from_slice(witnesses);
    out.extend_from_slice(&legacy[legacy.len() - 4..]);
    out
}

#[test]
fn segwit_flag_with_only_empty_witnesses_is_superfluous() {
    // Core: "Superfluous witness record". The offset is the flag byte's.
    let transaction = legacy_transaction();
    let bytes = extended_encoding(&transaction, 0x01, &[0x00, 0x00]);
    assert_eq!(
        ParsedTransaction::parse(&bytes).unwrap_err(),
        DecodeError::SuperfluousWitnessRecord { offset: 5 }
    );
    // Flag 3 with empty witnesses: Core checks the witness bit first.
    let bytes = extended_encoding(&transaction, 0x03, &[0x00, 0x00]);
    assert_eq!(
        ParsedTransaction::parse(&bytes).unwrap_err(),
        DecodeError::SuperfluousWitnessRecord { offset: 5 }
    );
    // One non-empty stack, even of one empty item, makes it a valid witness.
    let bytes = extended_encoding(&transaction, 0x01, &[0x00, 0x01, 0x00]);
    let decoded = Transaction::decode(&bytes).unwrap();
    assert_eq!(decoded.inputs[1].witness, vec![Vec::<u8>::new()]);
    assert_eq!(decoded.encode(), bytes);
}

#[test]
fn unknown_flag_bits_are_rejected() {
    // Core: "Unknown transaction optional data", after reading the witnesses the
    // witness bit announces, if any.
    let transaction = legacy_transaction();
    for flag in [0x02u8, 0x04, 0x80, 0xfe] {
        let bytes = extended_encoding(&transaction, flag, &[]);
        let error = ParsedTransaction::parse(&bytes).unwrap_err();
        assert_eq!(error, DecodeError::UnknownOptionalData { offset: 5, flags: flag });
    }
    for flag in [0x03u8, 0x81, 0xff] {
        let bytes = extended_encoding(&transaction, flag, &[0x01, 0x01, 0xaa, 0x00]);
        let error = ParsedTransaction::parse(&bytes).unwrap_err();
        assert_eq!(error, DecodeError::UnknownOptionalData { offset: 5, flags: flag & !1 });
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    for transaction in [legacy_transaction(), segwit_transaction()] {
        let mut bytes = transaction.encode();
        let length = bytes.len();
        bytes.push(0x00);
        assert_eq!(
            ParsedTransaction::parse(&bytes).unwrap_err(),
            DecodeError::TrailingBytes { offset: length, count: 1 }
        );
        assert_eq!(
            Transaction::decode(&bytes).unwrap_err(),
            DecodeError::TrailingBytes { offset: length, count: 1 }
        );
    }
    for name in ["413567", "702861"] {
        let mut bytes = mainnet_block(name).to_vec();
        let length = bytes.len();
        bytes.extend_from_slice(&[0xde, 0xad, 0xbe]);
        let expected = BlockDecodeError::TrailingBytes { offset: length, count: 3 };
        assert_eq!(BlockView::parse(&bytes).unwrap_err(), expected);
        assert_eq!(Block::decode(&bytes).unwrap_err(), expected);
    }
}

#[test]
fn block_with_no_transactions_decodes_as_in_core() {
    // Core's block deserialisation reads an empty transaction list (a `headers`
    // message entry has that form); CheckBlock rejects it later with
    // bad-blk-length. The decoder does the same and leaves that rule to consensus.
    let mut bytes = vec![0x11; 80];
    bytes.push(0x00);
    let block = BlockView::parse(&bytes).unwrap();
    assert_eq!(block.transaction_count(), 0);
    assert_eq!(block.to_owned().encode(), bytes);
}

/// Sample transactions and a small block to mutate: real mainnet transactions
/// (legacy and segwit) and the first few of block 702861 under its header.
fn mutation_seeds() -> &'static (Vec<Vec<u8>>, Vec<u8>) {
    static SEEDS: OnceLock<(Vec<Vec<u8>>, Vec<u8>)> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let bytes = mainnet_block("702861");
        let block = BlockView::parse(bytes).unwrap();
        let transactions: Vec<Vec<u8>> = block
            .transactions()
            .filter(|transaction| transaction.total_size() < 600)
            .step_by(97)
            .map(|transaction| transaction.bytes().to_vec())
            .collect();
        let mut small = Block { header: *block.header(), transactions: vec![] };
        small.transactions =
            block.transactions().take(4).map(|transaction| transaction.to_owned()).collect();
        (transactions, small.encode())
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Overwrite { position: usize, byte: u8 },
    Insert { position: usize, byte: u8 },
    Remove { position: usize },
    Truncate { length: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), any::<u8>()).prop_map(|(position, byte)| Mutation::Overwrite { position, byte }),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(position, byte)| Mutation::Insert { position, byte }),
        1 => any::<usize>().prop_map(|position| Mutation::Remove { position }),
        1 => any::<usize>().prop_map(|length| Mutation::Truncate { length }),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let length = bytes.len();
    match *mutation {
        Mutation::Overwrite { position, byte } if length > 0 => bytes[position % length] = byte,
        Mutation::Insert { position, byte } => bytes.insert(position % (length + 1), byte),
        Mutation::Remove { position } if length > 0 => {
            bytes.remove(position % length);
        }
        Mutation::Truncate { length: new_length } => bytes.truncate(new_length % (length + 1)),
        _ => {}
    }
}

/// Decodes `bytes` both ways; whatever decodes must re-encode to the same bytes.
fn check_decoders(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (transaction, largest) = largest_allocation(|| {
        ParsedTransaction::parse(bytes).map(|parsed| parsed.view().to_owned())
    });
    if let Ok(transaction) = &transaction {
        prop_assert_eq!(transaction.encode(), bytes);
        prop_assert_eq!(transaction.total_size(), bytes.len());
    } else {
        prop_assert!(
            largest <= allocation_bound_bytes(bytes.len()),
            "{} bytes for {}",
            largest,
            bytes.len()
        );
    }
    let (block, largest) =
        largest_allocation(|| BlockView::parse(bytes).map(|block| block.to_owned()));
    match &block {
        Ok(block) => {
            prop_assert_eq!(block.encode(), bytes);
            prop_assert_eq!(block.size(), bytes.len());
        }
        Err(error) => {
            prop_assert!(!error.to_string().is_empty());
            prop_assert!(
                largest <= allocation_bound_bytes(bytes.len()),
                "{} bytes for {}",
                largest,
                bytes.len()
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check_decoders(&bytes)?;
    }

    #[test]
    fn random_bytes_after_a_header_never_panic(body in prop::collection::vec(any::<u8>(), 0..400), count in 0u8..8) {
        // A header and a small count get past the first checks into transactions.
        let mut bytes = vec![0u8; 80];
        bytes.push(count);
        bytes.extend_from_slice(&body);
        check_decoders(&bytes)?;
    }

    #[test]
    fn mutated_transactions_never_panic(seed in any::<prop::sample::Index>(), mutations in prop::collection::vec(mutation(), 1..4)) {
        let (transactions, _) = mutation_seeds();
        let mut bytes = seed.get(transactions).clone();
        for mutation in &mutations {
            apply(&mut bytes, mutation);
        }
        check_decoders(&bytes)?;
    }

    #[test]
    fn mutated_blocks_never_panic(mutations in prop::collection::vec(mutation(), 1..4)) {
        let (_, block) = mutation_seeds();
        let mut bytes = block.clone();
        for mutation in &mutations {
            apply(&mut bytes, mutation);
        }
        check_decoders(&bytes)?;
    }
}
