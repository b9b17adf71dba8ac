//! Flat block files in Bitcoin Core's format: `blk?????.dat` record framing
//! (magic, length, block), the 8-byte XOR obfuscation from `xor.dat`, and
//! reading a Core `blocks/` directory.

pub mod error;
pub mod files;
pub mod framing;
pub mod obfuscation;

pub use error::BlockStoreError;
pub use files::{
    block_file_path, read_block_file, read_obfuscation_key, undo_file_path, write_obfuscation_key,
    BlockFileWriter, BlockPosition, BLOCK_FILE_BYTES_MAX,
};
pub use framing::{encode_record, Record, Records};
pub use obfuscation::Obfuscation;
