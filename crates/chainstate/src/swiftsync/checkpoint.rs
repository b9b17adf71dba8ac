//! A SwiftSync attempt kept across a shutdown or a crash. Every
//! few minutes while the pass runs (once the blocks handed out have
//! settled, every worker idle), and when the node stops in the middle of
//! it (each worker finishing the block it holds), the workers' coins are
//! appended to the bucket files and their sums taken; the files are synced
//! and a checkpoint (what follows) replaces the `'S'` record in one durable
//! write. The next start, given the same hints file and the same terminal
//! block, resumes from the last one: the blocks it accounted are not
//! handed over again, the sums start from its, the bucket files are cut
//! back to the lengths it recorded (`coins::database::staged`'s `resume`),
//! so whatever a crash appended after it counts nowhere. Any other start
//! discards the coins, as for an attempt that kept no checkpoint.
//!
//! The salt is written down with it. It keeps the aggregate's hashes
//! unpredictable to whoever wrote the hints or sends the blocks; the
//! node's own disk is not among them.
//!
//! A crash (`kill -9`) finds the last checkpoint, and the blocks
//! accounted since are accounted again. A crash before the first leaves
//! the plain marker, and the attempt starts again from the first block.
//!
//! Both modes keep checkpoints, each resumed only in its own mode (their
//! aggregates hash different things: outpoints, or whole coins). In the
//! fully validating mode the heights accounted are published when the
//! pass starts (`crate::SwiftSyncPassStart`), so the network side asks no
//! peer again for their spent coins (on mainnet ~75 GB for the whole
//! chain); coins that came but whose blocks were not accounted yet are
//! asked again.
//!
//! # Size
//! 221 bytes, a bit per height (116 kB for mainnet's 930,000), 8 bytes a
//! bucket, and 32 bytes a coinbase BIP30 asks to be unique (mainnet below
//! the BIP34 height: up to 7.3 MB).

use ibex_primitives::hash::sha256;
use ibex_primitives::hints::{HintsFile, OutpointAggregate, AGGREGATE_SALT_BYTES};
use ibex_primitives::{BlockHash, Txid};

use super::sums::PassSums;
use super::SwiftSyncMode;

/// The first byte of a checkpoint (the plain marker is `1`), followed by
/// the mode's byte.
const CHECKPOINT_VERSION: u8 = 3;
/// The first byte of a checkpoint with no mode byte: the assumevalid
/// mode's, the only one that kept checkpoints in that layout.
const CHECKPOINT_VERSION_ASSUME_VALID: u8 = 2;

/// An attempt's state at a shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PassCheckpoint {
    /// How the blocks were checked.
    pub(crate) mode: SwiftSyncMode,
    /// The terminal block.
    pub(crate) terminal: BlockHash,
    /// SHA-256 of the hints file's bytes.
    pub(crate) hints_digest: [u8; 32],
    /// The aggregate's salt.
    pub(crate) salt: [u8; AGGREGATE_SALT_BYTES],
    /// The sums of the blocks accounted.
    pub(crate) sums: PassSums,
    /// Whether the block at height `h` was accounted, at `h - 1`.
    pub(crate) accounted: Vec<bool>,
    /// Each bucket file's length, in bytes.
    pub(crate) bucket_lengths: Vec<u64>,
}

/// SHA-256 of `hints`' bytes: a checkpoint is resumed only with the same
/// file.
pub(crate) fn hints_digest(hints: &HintsFile) -> [u8; 32] {
    sha256(hints.bytes())
}

impl PassCheckpoint {
    /// The record's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.accounted.len() / 8);
        out.push(CHECKPOINT_VERSION);
        out.push(mode_byte(self.mode));
        out.extend_from_slice(self.terminal.as_bytes());
        out.extend_from_slice(&self.hints_digest);
        out.extend_from_slice(&self.salt);
        let sums = &self.sums;
        out.extend_from_slice(&sums.aggregate.to_bytes());
        out.extend_from_slice(&sums.kept_value.to_le_bytes());
        out.extend_from_slice(&sums.coin_count.to_le_bytes());
        out.extend_from_slice(&sums.input_count.to_le_bytes());
        out.extend_from_slice(&(sums.coinbases.len() as u64).to_le_bytes());
        sums.coinbases.iter().for_each(|txid| out.extend_from_slice(&txid.0));
        out.extend_from_slice(&(self.bucket_lengths.len() as u64).to_le_bytes());
        self.bucket_lengths.iter().for_each(|length| out.extend_from_slice(&length.to_le_bytes()));
        out.extend_from_slice(&(self.accounted.len() as u64).to_le_bytes());
        let mut bits = vec![0u8; self.accounted.len().div_ceil(8)];
        for (at, _) in self.accounted.iter().enumerate().filter(|(_, accounted)| **accounted) {
            bits[at / 8] |= 1 << (at % 8);
        }
        out.extend_from_slice(&bits);
        out
    }

    /// A checkpoint from `bytes`; `None` for the plain marker or a record
    /// that does not decode whole (either way the coins are discarded).
    pub(crate) fn decode(bytes: &[u8]) -> Option<PassCheckpoint> {
        let mut reader = Reader { rest: bytes };
        let mode = match reader.take::<1>()? {
            [CHECKPOINT_VERSION] => mode_of(reader.take::<1>()?[0])?,
            [CHECKPOINT_VERSION_ASSUME_VALID] => SwiftSyncMode::AssumeValid,
            _ => return None,
        };
        let terminal = BlockHash(reader.take()?);
        let hints_digest = reader.take()?;
        let salt = reader.take()?;
        let aggregate = OutpointAggregate::from_bytes(&reader.take()?);
        let kept_value = u128::from_le_bytes(reader.take()?);
        let coin_count = u64::from_le_bytes(reader.take()?);
        let input_count = u64::from_le_bytes(reader.take()?);
        let coinbase_count = reader.count(32)?;
        let coinbases =
            (0..coinbase_count).map(|_| reader.take().map(Txid)).collect::<Option<_>>()?;
        let bucket_count = reader.count(8)?;
        let bucket_lengths = (0..bucket_count)
            .map(|_| reader.take().map(u64::from_le_bytes))
            .collect::<Option<_>>()?;
        let height_count = usize::try_from(u64::from_le_bytes(reader.take()?)).ok()?;
        let bits = reader.slice(height_count.div_ceil(8))?;
        let accounted = (0..height_count).map(|at| bits[at / 8] & (1 << (at % 8)) != 0).collect();
        if !reader.rest.is_empty() {
            return None;
        }
        Some(PassCheckpoint {
            mode,
            terminal,
            hints_digest,
            salt,
            sums: PassSums { aggregate, kept_value, coin_count, input_count, coinbases },
            accounted,
            bucket_lengths,
        })
    }
}

fn mode_byte(mode: SwiftSyncMode) -> u8 {
    match mode {
        SwiftSyncMode::AssumeValid => 0,
        SwiftSyncMode::FullyValidating => 1,
    }
}

fn mode_of(byte: u8) -> Option<SwiftSyncMode> {
    match byte {
        0 => Some(SwiftSyncMode::AssumeValid),
        1 => Some(SwiftSyncMode::FullyValidating),
        _ => None,
    }
}

/// Reads a record front to back, every length checked against what is
/// left.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn slice(&mut self, length: usize) -> Option<&'a [u8]> {
        let (taken, rest) = self.rest.split_at_checked(length)?;
        self.rest = rest;
        Some(taken)
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.slice(N)?.try_into().ok()
    }

    /// A count of items of `item_bytes` each, at most as many as fit in
    /// what is left.
    fn count(&mut self, item_bytes: usize) -> Option<usize> {
        let count = usize::try_from(u64::from_le_bytes(self.take()?)).ok()?;
        (count <= self.rest.len() / item_bytes).then_some(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PassCheckpoint {
        let mut aggregate = OutpointAggregate::ZERO;
        let hasher = ibex_primitives::hints::OutpointHasher::new(&[7; AGGREGATE_SALT_BYTES]);
        aggregate.subtract(&hasher, &[3; 36]);
        PassCheckpoint {
            mode: SwiftSyncMode::FullyValidating,
            terminal: BlockHash([1; 32]),
            hints_digest: [2; 32],
            salt: [7; AGGREGATE_SALT_BYTES],
            sums: PassSums {
                aggregate,
                kept_value: u128::from(u64::MAX) + 5,
                coin_count: 11,
                input_count: 13,
                coinbases: vec![Txid([4; 32]), Txid([5; 32])],
            },
            accounted: (0..19).map(|height| height % 3 == 0).collect(),
            bucket_lengths: vec![0, 99, 1 << 40, 7],
        }
    }

    #[test]
    fn a_checkpoint_decodes_to_itself_and_nothing_else_decodes() {
        let checkpoint = sample();
        let bytes = checkpoint.encode();
        assert_eq!(PassCheckpoint::decode(&bytes), Some(checkpoint));
        assert_eq!(PassCheckpoint::decode(&[1]), None, "the plain marker");
        for cut in 0..bytes.len() {
            assert_eq!(PassCheckpoint::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(PassCheckpoint::decode(&longer), None);
        // A count beyond the record is refused before anything is made.
        let mut huge = bytes;
        let coinbase_count_at = 2 + 32 + 32 + AGGREGATE_SALT_BYTES + 32 + 16 + 8 + 8;
        huge[coinbase_count_at..coinbase_count_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(PassCheckpoint::decode(&huge), None);
    }

    #[test]
    fn the_mode_decodes_and_a_record_without_one_is_the_assumevalid_modes() {
        let checkpoint = sample();
        let bytes = checkpoint.encode();
        let mut unknown_mode = bytes.clone();
        unknown_mode[1] = 2;
        assert_eq!(PassCheckpoint::decode(&unknown_mode), None);
        let assume_valid = PassCheckpoint { mode: SwiftSyncMode::AssumeValid, ..checkpoint };
        assert_eq!(PassCheckpoint::decode(&assume_valid.encode()), Some(assume_valid.clone()));
        // The layout without a mode byte.
        let mut without_mode = vec![CHECKPOINT_VERSION_ASSUME_VALID];
        without_mode.extend_from_slice(&bytes[2..]);
        assert_eq!(PassCheckpoint::decode(&without_mode), Some(assume_valid));
    }
}
