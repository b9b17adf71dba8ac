//! Flat block files in Bitcoin Core's format: `blk?????.dat` record framing
//! (magic, length, block), the 8-byte XOR obfuscation from `xor.dat`, reading
//! a Core `blocks/` directory, single-block reads at a stored position, and
//! undo data in `rev?????.dat` files (checksummed against the previous block).
//!
//! Block-file records are walked here and nowhere else, three ways with one
//! definition of a record (magic, a length within
//! `RECORD_BLOCK_BYTES_MIN..=RECORD_BLOCK_BYTES_MAX`, the whole block in the
//! file): [`Records`] over a file image in memory, [`RecordStream`] through
//! a bounded window, and [`RecordHeaders`] reading only each record's frame
//! and header (it stops at the first gap instead of searching on).

pub mod error;
pub mod files;
pub mod framing;
pub mod obfuscation;
mod page_cache;
pub mod reader;
pub mod record_headers;
pub mod record_stream;
pub mod undo_files;

pub use error::BlockStoreError;
pub use files::{
    block_file_path, last_block_file_number, read_block_file, read_obfuscation_key,
    remove_file_pair, undo_file_path, write_obfuscation_key, BlockFileWriter, BlockPosition,
    BLOCK_FILE_BYTES_MAX,
};
pub use framing::{encode_record, Record, Records};
pub use obfuscation::Obfuscation;
pub use reader::{read_block, read_block_into, read_block_once};
pub use record_headers::{RecordHeader, RecordHeaders};
pub use record_stream::{CutOffRecord, OwnedRecord, RecordStream, READ_WINDOW_BYTES_DEFAULT};
pub use undo_files::{
    read_undo, read_undo_into, undo_checksum, UndoFileWriter, UndoRecord, UndoRecords,
    UNDO_PAYLOAD_BYTES_MAX,
};
