//! A payload cursor that names the command and field in every error, and
//! Core's way of reading counted lists.

use ibex_primitives::encode::Reader;
use ibex_primitives::DecodeError;

use crate::command::Command;
use crate::messages::error::{Field, MessageError};

/// When Core compares a list's count with its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitCheck {
    /// Right after reading the count (`headers`): entries are never read.
    BeforeEntries,
    /// After reading every entry (`std::vector` deserialization, then the
    /// size check): a list over the limit that ends early is a read
    /// failure, not a count violation.
    AfterEntries,
}

/// A list's rules: its field, Core's limit, when Core checks it, and the
/// fewest bytes an entry can take (to size the allocation by the payload).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListRule {
    pub field: Field,
    pub limit: usize,
    pub check: LimitCheck,
    pub entry_bytes_min: usize,
}

/// Reads a payload; every error carries the command and the field.
pub(crate) struct PayloadReader<'a> {
    reader: Reader<'a>,
    command: Command,
}

impl<'a> PayloadReader<'a> {
    pub fn new(command: Command, payload: &'a [u8]) -> PayloadReader<'a> {
        PayloadReader { reader: Reader::new(payload), command }
    }

    pub fn command(&self) -> Command {
        self.command
    }

    /// Whether every byte was read (Core's `vRecv.empty()`).
    pub fn is_empty(&self) -> bool {
        self.reader.remaining() == 0
    }

    pub fn malformed(&self, field: Field, source: DecodeError) -> MessageError {
        MessageError::Malformed { command: self.command, field, source }
    }

    fn wrap<T>(&self, field: Field, result: Result<T, DecodeError>) -> Result<T, MessageError> {
        result.map_err(|source| self.malformed(field, source))
    }

    pub fn u8(&mut self, field: Field) -> Result<u8, MessageError> {
        let result = self.reader.read_u8();
        self.wrap(field, result)
    }

    /// Core's `bool`: one byte, any nonzero value is true.
    pub fn bool(&mut self, field: Field) -> Result<bool, MessageError> {
        Ok(self.u8(field)? != 0)
    }

    /// A big-endian `u16` (a port).
    pub fn u16_big_endian(&mut self, field: Field) -> Result<u16, MessageError> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }

    pub fn u32(&mut self, field: Field) -> Result<u32, MessageError> {
        let result = self.reader.read_u32_le();
        self.wrap(field, result)
    }

    pub fn i32(&mut self, field: Field) -> Result<i32, MessageError> {
        let result = self.reader.read_i32_le();
        self.wrap(field, result)
    }

    pub fn u64(&mut self, field: Field) -> Result<u64, MessageError> {
        let result = self.reader.read_u64_le();
        self.wrap(field, result)
    }

    pub fn i64(&mut self, field: Field) -> Result<i64, MessageError> {
        let result = self.reader.read_i64_le();
        self.wrap(field, result)
    }

    pub fn array<const N: usize>(&mut self, field: Field) -> Result<[u8; N], MessageError> {
        let result = self.reader.take_array::<N>().copied();
        self.wrap(field, result)
    }

    pub fn bytes(&mut self, count: usize, field: Field) -> Result<&'a [u8], MessageError> {
        let result = self.reader.take(count);
        self.wrap(field, result)
    }

    /// A compact size as Core's `ReadCompactSize(range_check = true)` reads
    /// it: canonical and at most MAX_SIZE (0x02000000).
    pub fn compact_size(&mut self, field: Field) -> Result<u64, MessageError> {
        let result = self.reader.read_compact_size();
        self.wrap(field, result)
    }

    /// A compact size as `ReadCompactSize(range_check = false)` reads it
    /// (BIP155 service bits): canonical, any 64-bit value.
    pub fn compact_size_unbounded(&mut self, field: Field) -> Result<u64, MessageError> {
        let offset = self.reader.position();
        let (value, canonical_min) = match self.u8(field)? {
            first @ 0..=0xfc => return Ok(u64::from(first)),
            0xfd => (u64::from(u16::from_le_bytes(self.array(field)?)), 0xfd),
            0xfe => (u64::from(self.u32(field)?), 0x1_0000),
            0xff => (self.u64(field)?, 0x1_0000_0000),
        };
        if value < canonical_min {
            let source = DecodeError::NonCanonicalCompactSize { offset, value };
            return Err(self.malformed(field, source));
        }
        Ok(value)
    }

    /// A counted list, read as Core reads it under `rule`. The count is
    /// checked against the limit before anything is allocated, and the
    /// allocation is sized by the bytes left, not by the count alone.
    pub fn list<T>(
        &mut self,
        rule: ListRule,
        mut entry: impl FnMut(&mut Self) -> Result<T, MessageError>,
    ) -> Result<Vec<T>, MessageError> {
        let count = self.compact_size(rule.field)?;
        if count > rule.limit as u64 {
            if rule.check == LimitCheck::AfterEntries {
                // Each entry takes at least one byte, so this ends within the
                // payload's length; nothing read here is kept.
                for _ in 0..count {
                    entry(self)?;
                }
            }
            return Err(self.too_many(rule, count));
        }
        // `count <= limit`, a usize.
        let count = count as usize;
        let fit = self.reader.remaining() / rule.entry_bytes_min.max(1);
        let mut entries = Vec::with_capacity(count.min(fit));
        for _ in 0..count {
            entries.push(entry(self)?);
        }
        Ok(entries)
    }

    pub fn too_many(&self, rule: ListRule, count: u64) -> MessageError {
        MessageError::TooMany { command: self.command, field: rule.field, count, limit: rule.limit }
    }
}
