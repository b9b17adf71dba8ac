//! A coin's locking script in 35 bytes of alignment 1: inline when it has
//! at most [`INLINE_SCRIPT_BYTES_MAX`] bytes, else on the heap with the
//! allocation's address and length kept in the inline bytes.
//!
//! # Why by hand
//! An enum of the inline bytes and a `Box<[u8]>` takes 40 bytes with
//! alignment 8 (the box's pointer), so a [`crate::Coin`] would take 56
//! bytes and a bucket of the coins cache 97. Kept as bytes, the script
//! takes 35, the coin 48 and the bucket 89 (the entry with its outpoint is
//! 84 bytes, as the amount is two 4-byte halves, packed in chunks:
//! [`crate::coins::coin_shard`]): 9 % more coins in the same `-dbcache`. Over 99 %
//! of scripts are inline (every standard output type but bare multisig and
//! uncompressed P2PK); the rare heap ones pay a pointer read.
//!
//! # Napkin math
//! A heap script costs a `malloc` when the coin is created and a `free`
//! when it is spent (~40-80 ns each), plus Core's `MallocUsage` of 48
//! bytes for a 22-byte script. Inline, those calls disappear for ~99 % of
//! outputs.
//!
//! # Safety
//! The one owner of a heap script is the [`CoinScript`] that made it with
//! `Box::into_raw`: it is read through the stored address while the value
//! lives, copied (never shared) by `Clone`, and given back to `Box` exactly
//! once, in `Drop`. The address is stored with its provenance exposed
//! (`expose_provenance`) and read back with `with_exposed_provenance`.

// The two `unsafe` blocks below read and free the heap script: see "Safety".
#![allow(unsafe_code)]

/// Scripts up to this length live inside the [`crate::Coin`] (every
/// standard output type but bare multisig and uncompressed P2PK: P2TR and
/// P2WSH are 34 bytes, P2PKH 25, P2SH 23, P2WPKH 22), as in Core since it
/// stores 34-byte scripts inline.
pub const INLINE_SCRIPT_BYTES_MAX: usize = 34;

/// The length byte of a script on the heap.
const HEAP_LENGTH_TAG: u8 = u8::MAX;
/// Bytes of a stored address or length.
const WORD_BYTES: usize = std::mem::size_of::<usize>();

// The heap script's address and length fit in the inline bytes.
const _: () = assert!(2 * WORD_BYTES <= INLINE_SCRIPT_BYTES_MAX);
const _: () = assert!(INLINE_SCRIPT_BYTES_MAX < HEAP_LENGTH_TAG as usize);

/// A coin's locking script: inline when short, else on the heap.
pub(crate) struct CoinScript {
    /// The inline script's length, or [`HEAP_LENGTH_TAG`].
    length: u8,
    /// The inline script, or the heap script's address then its length.
    bytes: [u8; INLINE_SCRIPT_BYTES_MAX],
}

impl CoinScript {
    /// The script of `script`'s bytes.
    pub(crate) fn new(script: &[u8]) -> CoinScript {
        let mut bytes = [0u8; INLINE_SCRIPT_BYTES_MAX];
        if script.len() <= INLINE_SCRIPT_BYTES_MAX {
            bytes[..script.len()].copy_from_slice(script);
            return CoinScript { length: script.len() as u8, bytes };
        }
        let heap: Box<[u8]> = script.into();
        let length = heap.len();
        let address = Box::into_raw(heap).cast::<u8>().expose_provenance();
        bytes[..WORD_BYTES].copy_from_slice(&address.to_ne_bytes());
        bytes[WORD_BYTES..2 * WORD_BYTES].copy_from_slice(&length.to_ne_bytes());
        CoinScript { length: HEAP_LENGTH_TAG, bytes }
    }

    /// An empty script.
    pub(crate) fn empty() -> CoinScript {
        CoinScript { length: 0, bytes: [0; INLINE_SCRIPT_BYTES_MAX] }
    }

    /// The heap script's address and length, `None` when inline.
    fn heap_parts(&self) -> Option<(usize, usize)> {
        if self.length != HEAP_LENGTH_TAG {
            return None;
        }
        let mut address = [0u8; WORD_BYTES];
        let mut length = [0u8; WORD_BYTES];
        address.copy_from_slice(&self.bytes[..WORD_BYTES]);
        length.copy_from_slice(&self.bytes[WORD_BYTES..2 * WORD_BYTES]);
        Some((usize::from_ne_bytes(address), usize::from_ne_bytes(length)))
    }

    /// The script's bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self.heap_parts() {
            None => &self.bytes[..usize::from(self.length)],
            Some((address, length)) => {
                let start = std::ptr::with_exposed_provenance::<u8>(address);
                // SAFETY: `new` stored the address and length of a live
                // `Box<[u8]>` that this value alone owns and frees only in
                // `Drop`; the slice borrows `self`, so it cannot outlive it.
                unsafe { std::slice::from_raw_parts(start, length) }
            }
        }
    }

    /// Whether the script is on the heap.
    pub(crate) fn is_on_heap(&self) -> bool {
        self.length == HEAP_LENGTH_TAG
    }
}

impl Drop for CoinScript {
    fn drop(&mut self) {
        if let Some((address, length)) = self.heap_parts() {
            let start = std::ptr::with_exposed_provenance_mut::<u8>(address);
            // SAFETY: the address and length are those `Box::into_raw` gave
            // in `new` for a `Box<[u8]>`, owned by this value alone and not
            // freed before: this is the one place that frees it.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(start, length)) });
        }
    }
}

impl Clone for CoinScript {
    fn clone(&self) -> CoinScript {
        CoinScript::new(self.as_slice())
    }
}

impl PartialEq for CoinScript {
    fn eq(&self, other: &CoinScript) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for CoinScript {}

impl std::fmt::Debug for CoinScript {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_list().entries(self.as_slice()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_keep_their_bytes_inline_and_on_the_heap() {
        assert_eq!(std::mem::size_of::<CoinScript>(), INLINE_SCRIPT_BYTES_MAX + 1);
        assert_eq!(std::mem::align_of::<CoinScript>(), 1);
        for length in [0, 1, 22, 34, 35, 67, 105, 10_000] {
            let script: Vec<u8> = (0..length).map(|index| (index * 7 + length) as u8).collect();
            let stored = CoinScript::new(&script);
            assert_eq!(stored.is_on_heap(), length > INLINE_SCRIPT_BYTES_MAX, "{length}");
            assert_eq!(stored.as_slice(), &script[..], "{length}");
            let copy = stored.clone();
            drop(stored);
            assert_eq!(copy.as_slice(), &script[..], "a copy outlives its source: {length}");
            let moved = std::thread::spawn(move || copy.as_slice().to_vec()).join();
            assert_eq!(moved.expect("thread"), script, "{length}");
        }
        assert_eq!(CoinScript::empty().as_slice(), &[] as &[u8]);
        assert_ne!(CoinScript::new(&[1; 40]), CoinScript::new(&[2; 40]));
        assert_eq!(CoinScript::new(&[3; 40]), CoinScript::new(&[3; 40]));
    }
}
