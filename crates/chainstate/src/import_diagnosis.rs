//! Why a block file gave no block: an import that reads a file of random
//! bytes, or its own files with the wrong `xor.dat` key, finds no record and
//! would otherwise import nothing without a word. The first bytes of such a
//! file tell the likely cause, which the import reports as a
//! [`ChainEvent::BlockFileWithoutBlocks`](crate::ChainEvent).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use ibex_blockstore::{CutOffRecord, Obfuscation};
use ibex_primitives::{Network, Params};

/// Bytes read from the start of a file to find the cause.
const PREFIX_BYTES: usize = 8;

/// A block file in which an import found no block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWithoutBlocks {
    /// The file.
    pub path: PathBuf,
    /// Its length.
    pub length_bytes: u64,
    /// The likely cause.
    pub cause: NoBlocksCause,
}

/// Why a block file gave no block, as far as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoBlocksCause {
    /// The file is empty.
    Empty,
    /// It starts with zero bytes: space reserved for blocks never written.
    Zeros,
    /// Its first bytes are the network magic only as stored: the file is not
    /// obfuscated, but the blocks directory's `xor.dat` holds a key.
    NotObfuscated,
    /// Its first bytes (de-obfuscated) are another network's magic.
    OtherNetwork(Network),
    /// Its first bytes (de-obfuscated) are not the network magic.
    NoMagic {
        /// The first bytes, de-obfuscated.
        first_bytes: [u8; 4],
        /// The network magic.
        magic: [u8; 4],
        /// Whether the file was read with the directory's `xor.dat` key
        /// (the node's own files), or as a plain file (`-loadblock`).
        obfuscated: bool,
    },
    /// It starts with the magic, but no record in it decodes as a block
    /// (a truncated first record, a length out of range, corrupt blocks).
    NoDecodableRecord {
        /// Records framed with the magic that were found.
        records: u64,
    },
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl fmt::Display for NoBlocksCause {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoBlocksCause::Empty => write!(formatter, "the file is empty"),
            NoBlocksCause::Zeros => write!(
                formatter,
                "the file starts with zero bytes: space reserved for blocks never written?"
            ),
            NoBlocksCause::NotObfuscated => write!(
                formatter,
                "the first bytes are the network magic without de-obfuscation: the file is not obfuscated but xor.dat holds a key (a wrong xor.dat?)"
            ),
            NoBlocksCause::OtherNetwork(network) => write!(
                formatter,
                "the first bytes are the magic of the {} network: a block file of another chain?",
                network.name()
            ),
            NoBlocksCause::NoMagic { first_bytes, magic, obfuscated: true } => write!(
                formatter,
                "first bytes {} do not start with the network magic {}: wrong xor.dat key or not a block file?",
                hex(first_bytes),
                hex(magic)
            ),
            NoBlocksCause::NoMagic { first_bytes, magic, obfuscated: false } => write!(
                formatter,
                "first bytes {} do not start with the network magic {}: not a block file, or one obfuscated with a blocks directory's xor.dat key (-loadblock reads plain files)?",
                hex(first_bytes),
                hex(magic)
            ),
            NoBlocksCause::NoDecodableRecord { records } => write!(
                formatter,
                "the file starts with the network magic but none of its {records} records decodes as a block: truncated or corrupt?"
            ),
        }
    }
}

/// Finds why `path`, read with `obfuscation` and framed with `params`'
/// magic, gave no block while `records` records were found in it; `None`
/// when the file cannot be read.
pub(crate) fn diagnose(
    path: &Path,
    params: &Params,
    obfuscation: Obfuscation,
    records: u64,
) -> Option<FileWithoutBlocks> {
    let mut file = std::fs::File::open(path).ok()?;
    let length_bytes = file.metadata().ok()?.len();
    let mut prefix = Vec::with_capacity(PREFIX_BYTES);
    file.by_ref().take(PREFIX_BYTES as u64).read_to_end(&mut prefix).ok()?;
    let cause = cause_from_prefix(&prefix, params, obfuscation, records);
    Some(FileWithoutBlocks { path: path.to_path_buf(), length_bytes, cause })
}

/// The cause for a file starting with `stored` (as on disk).
fn cause_from_prefix(
    stored: &[u8],
    params: &Params,
    obfuscation: Obfuscation,
    records: u64,
) -> NoBlocksCause {
    let Some(stored_magic) = stored.first_chunk::<4>() else {
        return if stored.is_empty() {
            NoBlocksCause::Empty
        } else {
            NoBlocksCause::NoDecodableRecord { records }
        };
    };
    let mut first_bytes = *stored_magic;
    obfuscation.apply(&mut first_bytes, 0);
    let magic = params.message_start;
    if first_bytes == magic {
        return NoBlocksCause::NoDecodableRecord { records };
    }
    if stored.iter().all(|byte| *byte == 0) {
        return NoBlocksCause::Zeros;
    }
    if *stored_magic == magic {
        return NoBlocksCause::NotObfuscated;
    }
    let other = Network::ALL.into_iter().find(|network| {
        *network != params.network && Params::for_network(*network).message_start == first_bytes
    });
    match other {
        Some(network) => NoBlocksCause::OtherNetwork(network),
        None => {
            NoBlocksCause::NoMagic { first_bytes, magic, obfuscated: !obfuscation.is_identity() }
        }
    }
}

/// A block file whose last record the file ends inside: the block in it is
/// not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutOffBlockFile {
    /// The file.
    pub path: PathBuf,
    /// The record.
    pub record: CutOffRecord,
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: Obfuscation = Obfuscation::new([1, 2, 3, 4, 5, 6, 7, 8]);

    fn obfuscated(bytes: &[u8], key: Obfuscation) -> Vec<u8> {
        let mut bytes = bytes.to_vec();
        key.apply(&mut bytes, 0);
        bytes
    }

    #[test]
    fn causes_from_the_first_bytes() {
        let regtest = Params::for_network(Network::Regtest);
        let magic = regtest.message_start;
        let cause = |stored: &[u8], key| cause_from_prefix(stored, &regtest, key, 0);
        assert_eq!(cause(&[], KEY), NoBlocksCause::Empty);
        assert_eq!(cause(&[0; 8], KEY), NoBlocksCause::Zeros);
        assert_eq!(cause(&[magic[0]], KEY), NoBlocksCause::NoDecodableRecord { records: 0 });
        let framed = [magic[0], magic[1], magic[2], magic[3], 0, 0, 0, 0];
        assert_eq!(
            cause(&obfuscated(&framed, KEY), KEY),
            NoBlocksCause::NoDecodableRecord { records: 0 }
        );
        assert_eq!(cause(&framed, KEY), NoBlocksCause::NotObfuscated);
        let main = Params::for_network(Network::Main).message_start;
        assert_eq!(
            cause(&obfuscated(&[main[0], main[1], main[2], main[3]], KEY), KEY),
            NoBlocksCause::OtherNetwork(Network::Main)
        );
        let random = [0x8f, 0x3a, 0x0c, 0x11, 0x55, 0x66];
        let wrong_key = Obfuscation::new([9; 8]);
        let expected_first_bytes = [0x8f ^ 9, 0x3a ^ 9, 0x0c ^ 9, 0x11 ^ 9];
        assert_eq!(
            cause(&random, wrong_key),
            NoBlocksCause::NoMagic { first_bytes: expected_first_bytes, magic, obfuscated: true }
        );
        assert_eq!(
            cause(&random, Obfuscation::default()),
            NoBlocksCause::NoMagic {
                first_bytes: [0x8f, 0x3a, 0x0c, 0x11],
                magic,
                obfuscated: false
            }
        );
    }

    #[test]
    fn causes_read_as_advice() {
        let cause = NoBlocksCause::NoMagic {
            first_bytes: [0x8f, 0x3a, 0x0c, 0x11],
            magic: [0xfa, 0xbf, 0xb5, 0xda],
            obfuscated: true,
        };
        assert_eq!(
            cause.to_string(),
            "first bytes 8f3a0c11 do not start with the network magic fabfb5da: wrong xor.dat key or not a block file?"
        );
        assert!(NoBlocksCause::OtherNetwork(Network::Testnet4).to_string().contains("testnet4"));
        assert!(NoBlocksCause::NoDecodableRecord { records: 3 }.to_string().contains("3 records"));
    }

    #[test]
    fn diagnose_reads_the_file() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("blk00000.dat");
        std::fs::write(&path, [0x8f, 0x3a, 0x0c, 0x11, 0, 1, 2, 3, 4, 5]).unwrap();
        let regtest = Params::for_network(Network::Regtest);
        let found = diagnose(&path, &regtest, Obfuscation::default(), 0).unwrap();
        assert_eq!(found.path, path);
        assert_eq!(found.length_bytes, 10);
        assert!(matches!(found.cause, NoBlocksCause::NoMagic { obfuscated: false, .. }));
        assert_eq!(diagnose(&directory.path().join("absent"), &regtest, KEY, 0), None);
    }
}
