//! The address manager's file (Ibex's own format, `ibex_peers.dat` in the
//! chain directory; Core's `peers.dat` is left alone so `bitcoind` can
//! share the data directory): versioned, for one network, with a checksum,
//! written atomically.
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `IBEXADDR` |
//! | 4 | format version (1), little-endian |
//! | 4 | the network's message start |
//! | 32 | the secret bucket key |
//! | 8 | last successful connection, seconds (i64) |
//! | 4 | entries (at most 81,920) |
//! | 56-97 each | table (0 new, 1 tried), BIP155 network id, address, port (big-endian), services, last seen, last try, last counted attempt, last success (i64 each), attempts (u32), source group (length, 1-16 bytes) |
//! | 32 | SHA-256d of everything before |
//!
//! Reading refuses anything else with an [`AddressFileError`] (never a
//! panic): a file longer than the largest valid one is not read at all,
//! the checksum is checked before any entry is parsed, and every entry is
//! checked as it is read. Entries go back into their tables through the
//! same bucket key, so they land where they were.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

use ibex_primitives::hash::sha256d;

use crate::addrman::address::{AddressNetwork, AddressPolicy, PeerAddress};
use crate::addrman::buckets::ADDRESSES_MAX;
use crate::addrman::group::NetworkGroup;
use crate::addrman::manager::AddressManager;
use crate::addrman::random::FastRandom;
use crate::addrman::record::AddressRecord;
use crate::services::ServiceFlags;

/// The file's first bytes.
pub const FILE_MAGIC: [u8; 8] = *b"IBEXADDR";
/// The format version written.
pub const FILE_VERSION: u32 = 1;
/// Bytes before the entries.
const HEADER_BYTES: usize = 8 + 4 + 4 + 32 + 8 + 4;
/// Bytes of the checksum.
const CHECKSUM_BYTES: usize = 32;
/// The longest entry: table, network, 32 address bytes, port, services,
/// four times, attempts, a 16-byte source group and its length.
const ENTRY_BYTES_MAX: usize = 1 + 1 + 32 + 2 + 8 + 4 * 8 + 4 + 1 + 16;
/// The latest time a file may hold (2^40 seconds, year 36812): anything
/// later is corruption, and arithmetic on times stays far from overflow.
const TIME_SECONDS_MAX: i64 = 1 << 40;
/// The longest valid file (about 8 MB): a longer one is not read.
pub const FILE_BYTES_MAX: usize = HEADER_BYTES + ADDRESSES_MAX * ENTRY_BYTES_MAX + CHECKSUM_BYTES;

/// Why the file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddressFileError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Longer than any valid file.
    #[error("file of {length_bytes} bytes, more than the {limit_bytes} an address file holds")]
    TooLarge {
        /// Its length.
        length_bytes: u64,
        /// The limit.
        limit_bytes: usize,
    },
    /// Shorter than its header and checksum, or its entries end early.
    #[error("file truncated: {length_bytes} bytes, entry {entry} incomplete")]
    Truncated {
        /// Its length.
        length_bytes: usize,
        /// The entry being read (0 for the header).
        entry: usize,
    },
    /// Not an Ibex address file.
    #[error("not an Ibex address file (wrong magic)")]
    WrongMagic,
    /// A format version this build does not read.
    #[error("file format version {version} is not supported (this build reads {FILE_VERSION})")]
    UnsupportedVersion {
        /// The version found.
        version: u32,
    },
    /// The checksum does not match the contents.
    #[error("checksum mismatch")]
    ChecksumMismatch,
    /// Written for another network.
    #[error("file for another network (message start {found:02x?})")]
    WrongNetwork {
        /// The message start found.
        found: [u8; 4],
    },
    /// More entries than the tables hold.
    #[error("{count} entries, more than the {ADDRESSES_MAX} the tables hold")]
    TooManyEntries {
        /// The count found.
        count: u32,
    },
    /// An entry with an unknown table, network or group.
    #[error("entry {entry} is malformed")]
    BadEntry {
        /// The entry's number.
        entry: usize,
    },
    /// Bytes left after the last entry.
    #[error("{extra_bytes} bytes after the last entry")]
    TrailingBytes {
        /// How many.
        extra_bytes: usize,
    },
}

/// The file's bytes for `manager` on the network with `network_magic`.
pub fn encode(manager: &AddressManager, network_magic: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + manager.len() * 80 + CHECKSUM_BYTES);
    out.extend_from_slice(&FILE_MAGIC);
    out.extend_from_slice(&FILE_VERSION.to_le_bytes());
    out.extend_from_slice(&network_magic);
    out.extend_from_slice(manager.key());
    out.extend_from_slice(&manager.last_good_seconds().to_le_bytes());
    let count = u32::try_from(manager.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    // Tried first: on reading, they take their slots before new ones can.
    let mut records: Vec<&AddressRecord> = manager.records().collect();
    records.sort_by_key(|record| !record.is_tried());
    for record in records {
        encode_record(record, &mut out);
    }
    let checksum = sha256d(&out);
    out.extend_from_slice(&checksum);
    out
}

fn encode_record(record: &AddressRecord, out: &mut Vec<u8>) {
    out.push(u8::from(record.is_tried()));
    out.push(record.address.network().bip155_id());
    out.extend_from_slice(record.address.bytes());
    out.extend_from_slice(&record.address.port().to_be_bytes());
    out.extend_from_slice(&record.services.bits().to_le_bytes());
    for time in [
        record.time_seconds,
        record.last_try_seconds,
        record.last_count_attempt_seconds,
        record.last_success_seconds,
    ] {
        out.extend_from_slice(&time.to_le_bytes());
    }
    out.extend_from_slice(&record.attempts.to_le_bytes());
    let group = record.source.as_bytes();
    out.push(group.len() as u8);
    out.extend_from_slice(group);
}

/// What reading a file gave.
#[derive(Debug)]
pub struct DecodedFile {
    /// The manager, with every entry that found its slot.
    pub manager: AddressManager,
    /// Entries in the file.
    pub entries: usize,
}

/// Reads a file's bytes for the network with `network_magic`; `seed`
/// seeds the manager's random numbers (the bucket key is the file's).
pub fn decode(
    bytes: &[u8],
    network_magic: [u8; 4],
    policy: AddressPolicy,
    seed: &[u8; 32],
) -> Result<DecodedFile, AddressFileError> {
    if bytes.len() > FILE_BYTES_MAX {
        return Err(AddressFileError::TooLarge {
            length_bytes: bytes.len() as u64,
            limit_bytes: FILE_BYTES_MAX,
        });
    }
    let length_bytes = bytes.len();
    if length_bytes < HEADER_BYTES + CHECKSUM_BYTES {
        return Err(AddressFileError::Truncated { length_bytes, entry: 0 });
    }
    if bytes[..8] != FILE_MAGIC {
        return Err(AddressFileError::WrongMagic);
    }
    let (body, checksum) = bytes.split_at(length_bytes - CHECKSUM_BYTES);
    let mut cursor = Cursor { bytes: body, offset: 8, entry: 0 };
    let version = cursor.u32()?;
    if version != FILE_VERSION {
        return Err(AddressFileError::UnsupportedVersion { version });
    }
    if sha256d(body) != checksum {
        return Err(AddressFileError::ChecksumMismatch);
    }
    let found = cursor.array::<4>()?;
    if found != network_magic {
        return Err(AddressFileError::WrongNetwork { found });
    }
    let key = cursor.array::<32>()?;
    let last_good_seconds = cursor.time()?;
    let count = cursor.u32()?;
    if count as usize > ADDRESSES_MAX {
        return Err(AddressFileError::TooManyEntries { count });
    }
    let random = FastRandom::from_seed(seed);
    let mut manager = AddressManager::with_key(policy, key, random, last_good_seconds);
    for entry in 1..=count as usize {
        cursor.entry = entry;
        let (record, tried) = decode_record(&mut cursor)?;
        // A duplicate or a taken slot cannot come from our own writer;
        // such an entry is skipped rather than failing the whole file.
        manager.restore(record, tried);
    }
    if cursor.offset != body.len() {
        return Err(AddressFileError::TrailingBytes { extra_bytes: body.len() - cursor.offset });
    }
    Ok(DecodedFile { manager, entries: count as usize })
}

fn decode_record(cursor: &mut Cursor<'_>) -> Result<(AddressRecord, bool), AddressFileError> {
    let bad = AddressFileError::BadEntry { entry: cursor.entry };
    let tried = match cursor.u8()? {
        0 => false,
        1 => true,
        _ => return Err(bad),
    };
    let Some(network) = AddressNetwork::from_bip155_id(cursor.u8()?) else { return Err(bad) };
    let address_bytes = cursor.take(network.address_bytes())?;
    let port = u16::from_be_bytes(cursor.array::<2>()?);
    let Some(address) = PeerAddress::new(network, address_bytes, port) else { return Err(bad) };
    let services = ServiceFlags::from_bits(u64::from_le_bytes(cursor.array::<8>()?));
    let time_seconds = cursor.time()?;
    let last_try_seconds = cursor.time()?;
    let last_count_attempt_seconds = cursor.time()?;
    let last_success_seconds = cursor.time()?;
    let attempts = cursor.u32()?;
    let group_length = usize::from(cursor.u8()?);
    let Some(source) = NetworkGroup::from_bytes(cursor.take(group_length)?) else {
        return Err(bad);
    };
    let record = AddressRecord {
        address,
        services,
        time_seconds,
        last_try_seconds,
        last_count_attempt_seconds,
        last_success_seconds,
        attempts,
        source,
        slot: None,
    };
    Ok((record, tried))
}

/// A bounds-checked reader over the file's body.
struct Cursor<'a> {
    bytes: &'a [u8],
    offset: usize,
    entry: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], AddressFileError> {
        let end = self.offset.checked_add(count).filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(AddressFileError::Truncated {
                length_bytes: self.bytes.len() + CHECKSUM_BYTES,
                entry: self.entry,
            });
        };
        let taken = &self.bytes[self.offset..end];
        self.offset = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], AddressFileError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn u8(&mut self) -> Result<u8, AddressFileError> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, AddressFileError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, AddressFileError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A time in seconds since the epoch, within [`TIME_SECONDS_MAX`].
    fn time(&mut self) -> Result<i64, AddressFileError> {
        let time = self.i64()?;
        if !(0..=TIME_SECONDS_MAX).contains(&time) {
            return Err(AddressFileError::BadEntry { entry: self.entry });
        }
        Ok(time)
    }
}

/// The file's bytes, `None` if it does not exist; a file longer than
/// [`FILE_BYTES_MAX`] is refused without being read.
pub fn read_file(path: &Path) -> Result<Option<Vec<u8>>, AddressFileError> {
    let read_error = |source| AddressFileError::Read { path: path.to_path_buf(), source };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(read_error(error)),
    };
    let length_bytes = file.metadata().map_err(read_error)?.len();
    if length_bytes > FILE_BYTES_MAX as u64 {
        return Err(AddressFileError::TooLarge { length_bytes, limit_bytes: FILE_BYTES_MAX });
    }
    let mut bytes = Vec::with_capacity(length_bytes as usize);
    // The file may grow meanwhile: read at most one byte past the limit.
    file.take(FILE_BYTES_MAX as u64 + 1).read_to_end(&mut bytes).map_err(read_error)?;
    Ok(Some(bytes))
}

/// Writes `bytes` to `path` atomically: to `<path>.new`, synced, then
/// renamed over `path` (a crash leaves the old file or the new one).
///
/// The file holds the address manager's secret key: `<path>.new` is
/// created fresh (`O_EXCL`, mode 0600), after removing whatever was there,
/// so a planted symbolic link or a file others can read is never written
/// through or reused.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<(), AddressFileError> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".new");
    let temporary = PathBuf::from(temporary);
    let write_error = |source| AddressFileError::Write { path: path.to_path_buf(), source };
    match std::fs::remove_file(&temporary) {
        Err(error) if error.kind() != ErrorKind::NotFound => return Err(write_error(error)),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary).map_err(write_error)?;
    file.write_all(bytes).map_err(write_error)?;
    file.sync_all().map_err(write_error)?;
    drop(file);
    std::fs::rename(&temporary, path).map_err(write_error)?;
    // The rename is durable once the directory is synced; a failure here
    // loses at most this write, never the old file.
    if let Some(directory) = path.parent().and_then(|parent| File::open(parent).ok()) {
        let _ = directory.sync_all();
    }
    Ok(())
}
