//! One slot of the cache's maps: a [`Coin`] (none when spent) and the
//! cache's flags for it, in the coin's own spare byte. The cache's state
//! table ([`crate::coins::cache`]) says which flags an entry may have and
//! how each operation changes them; [`CacheEntry::is_in_state_table`]
//! checks an entry against it.

use crate::coins::coin::Coin;

/// The entry differs from the database (Core's DIRTY).
pub(in crate::coins) const DIRTY: u8 = 1;
/// The database has no unspent coin at the entry's outpoint (Core's FRESH).
pub(in crate::coins) const FRESH: u8 = 2;
/// The coin was read from the database (by the prefetch or a lookup):
/// statistics only ([`crate::coins::coin_reads`]).
pub(in crate::coins) const FROM_DATABASE: u8 = 4;
/// The coin was copied from a background flush's frozen map by the
/// prefetch: statistics only, like [`FROM_DATABASE`].
pub(in crate::coins) const FROM_FROZEN: u8 = 8;
/// The flags that only say where a clean coin came from.
pub(in crate::coins) const SOURCE_FLAGS: u8 = FROM_DATABASE | FROM_FROZEN;

/// The entry is a spent coin: its [`Coin`] is a placeholder.
const SPENT: u8 = 16;

/// One cache slot: the coin (none when spent) and its flags.
///
/// The flags and whether the coin is spent live in the coin's own spare
/// byte ([`Coin::cache_bits`]), so an entry is a [`Coin`] and nothing
/// more: 48 bytes, and 84 with its outpoint (the coin's amount is two
/// 4-byte halves), where an `Option<Coin>` and a flag byte would take 64
/// and 104 (with the script an enum of inline bytes and a box, the coin
/// alone would take 56). docs/utxo-heavy.md has what the smaller entries
/// do to the flushes.
#[derive(Clone)]
pub(crate) struct CacheEntry {
    slot: Coin,
}

/// Shows the coin (`None` when spent) and the flags, not the placeholder
/// coin a spent entry holds.
impl std::fmt::Debug for CacheEntry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CacheEntry")
            .field("coin", &self.coin())
            .field("flags", &self.flags())
            .finish()
    }
}

impl CacheEntry {
    /// An entry holding `coin` (`None`: spent) with `flags`.
    pub(crate) fn new(coin: Option<Coin>, flags: u8) -> CacheEntry {
        assert!(flags & SPENT == 0, "flags {flags:#x} hold the spent bit");
        let slot = match coin {
            Some(mut coin) => {
                coin.set_cache_bits(flags);
                coin
            }
            None => Coin::placeholder(flags | SPENT),
        };
        CacheEntry { slot }
    }

    /// The coin, `None` when spent.
    pub(crate) fn coin(&self) -> Option<&Coin> {
        if self.slot.cache_bits() & SPENT != 0 {
            None
        } else {
            Some(&self.slot)
        }
    }

    /// The coin, leaving the entry spent with the same flags.
    pub(crate) fn take_coin(&mut self) -> Option<Coin> {
        let bits = self.slot.cache_bits();
        if bits & SPENT != 0 {
            return None;
        }
        let mut coin = std::mem::replace(&mut self.slot, Coin::placeholder(bits | SPENT));
        coin.set_cache_bits(0);
        Some(coin)
    }

    /// The coin, `None` when spent.
    pub(crate) fn into_coin(mut self) -> Option<Coin> {
        self.take_coin()
    }

    /// Puts `coin` in the entry, with the same flags.
    pub(crate) fn set_coin(&mut self, mut coin: Coin) {
        coin.set_cache_bits(self.flags());
        self.slot = coin;
    }

    /// The entry's flags ([`DIRTY`], [`FRESH`], [`FROM_DATABASE`], [`FROM_FROZEN`]).
    pub(crate) fn flags(&self) -> u8 {
        self.slot.cache_bits() & !SPENT
    }

    /// Sets the entry's flags; whether it is spent stays.
    pub(crate) fn set_flags(&mut self, flags: u8) {
        assert!(flags & SPENT == 0, "flags {flags:#x} hold the spent bit");
        let spent = self.slot.cache_bits() & SPENT;
        self.slot.set_cache_bits(flags | spent);
    }

    /// Whether the entry differs from the database ([`DIRTY`]).
    pub(crate) fn is_dirty(&self) -> bool {
        self.flags() & DIRTY != 0
    }

    /// Whether the database has no unspent coin here ([`FRESH`]).
    pub(crate) fn is_fresh(&self) -> bool {
        self.flags() & FRESH != 0
    }

    /// Bytes the coin's script holds on the heap (0 when spent or inline).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.coin().map_or(0, Coin::heap_bytes)
    }

    /// Whether the entry is in a row of the cache's state table
    /// ([`crate::coins::cache`]), not in one of the states it never
    /// holds: FRESH without DIRTY; spent and FRESH (a FRESH coin spent is
    /// erased at once, so a flush never writes it); spent and clean
    /// (misses are not cached, so a spent entry is always an erasure to
    /// write); a source flag on an entry connect changed.
    pub(crate) fn is_in_state_table(&self) -> bool {
        let flags = self.flags();
        let dirty = flags & DIRTY != 0;
        let fresh = flags & FRESH != 0;
        let spent = self.coin().is_none();
        let fresh_without_dirty = fresh && !dirty;
        let spent_not_an_erasure = spent && (fresh || !dirty);
        let changed_with_source = flags & SOURCE_FLAGS != 0 && (spent || dirty);
        !(fresh_without_dirty || spent_not_an_erasure || changed_with_source)
    }

    /// The row of the cache's state table the entry is in.
    #[cfg(test)]
    pub(crate) fn state(&self) -> EntryState {
        assert!(self.is_in_state_table(), "{self:?} is in no row of the state table");
        match (self.coin().is_some(), self.is_dirty(), self.is_fresh()) {
            (true, false, _) => EntryState::UnspentClean,
            (true, true, false) => EntryState::UnspentDirty,
            (true, true, true) => EntryState::UnspentDirtyFresh,
            (false, _, _) => EntryState::SpentDirty,
        }
    }
}

/// The rows of the cache's state table an entry can be in (absent is the
/// fifth: no entry).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryState {
    /// Unspent, equal to the database's coin.
    UnspentClean,
    /// Unspent, differing from the database, which has another coin or none.
    UnspentDirty,
    /// Unspent, and the database has no unspent coin here.
    UnspentDirtyFresh,
    /// Spent since the last flush; the database has the coin.
    SpentDirty,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry keeps its flags and whether it is spent in the coin's
    /// spare byte: neither leaks into the coin it gives back, nor changes
    /// the other.
    #[test]
    fn an_entry_keeps_flags_and_spent_apart_from_its_coin() {
        let spent = format!("{:?}", CacheEntry::new(None, DIRTY));
        assert_eq!(spent, "CacheEntry { coin: None, flags: 1 }");
        let coin =
            Coin::new(ibex_primitives::Amount::from_sat(5_000).expect("amount"), [0x51], 7, true)
                .expect("coin");
        let mut entry = CacheEntry::new(Some(coin.clone()), DIRTY | FRESH);
        assert_eq!(entry.coin(), Some(&coin));
        assert!(entry.coin().is_some_and(Coin::is_coinbase));
        assert_eq!(entry.flags(), DIRTY | FRESH);
        entry.set_flags(FROM_FROZEN);
        assert_eq!((entry.flags(), entry.coin()), (FROM_FROZEN, Some(&coin)));
        let taken = entry.take_coin().expect("unspent");
        assert_eq!((taken.cache_bits(), taken.is_coinbase(), taken.height()), (0, true, 7));
        assert_eq!((entry.coin(), entry.flags(), entry.heap_bytes()), (None, FROM_FROZEN, 0));
        assert_eq!(entry.take_coin(), None);
        entry.set_flags(DIRTY);
        assert_eq!((entry.coin(), entry.flags()), (None, DIRTY));
        entry.set_coin(taken);
        assert_eq!((entry.flags(), entry.coin()), (DIRTY, Some(&coin)));
        let spent = CacheEntry::new(None, DIRTY);
        assert_eq!((spent.coin(), spent.flags()), (None, DIRTY));
        assert_eq!(spent.into_coin(), None);
        assert_eq!(entry.into_coin(), Some(coin));
    }

    /// The states the table never holds are refused, the rows it has
    /// accepted.
    #[test]
    fn only_the_rows_of_the_state_table_are_accepted() {
        let coin =
            Coin::new(ibex_primitives::Amount::from_sat_u32(1), [0x51], 1, false).expect("coin");
        let unspent = |flags| CacheEntry::new(Some(coin.clone()), flags);
        let spent = |flags| CacheEntry::new(None, flags);
        assert_eq!(unspent(0).state(), EntryState::UnspentClean);
        assert_eq!(unspent(FROM_DATABASE).state(), EntryState::UnspentClean);
        assert_eq!(unspent(FROM_FROZEN).state(), EntryState::UnspentClean);
        assert_eq!(unspent(DIRTY).state(), EntryState::UnspentDirty);
        assert_eq!(unspent(DIRTY | FRESH).state(), EntryState::UnspentDirtyFresh);
        assert_eq!(spent(DIRTY).state(), EntryState::SpentDirty);
        for never in [
            unspent(FRESH),
            unspent(DIRTY | FROM_DATABASE),
            unspent(DIRTY | FRESH | FROM_FROZEN),
            spent(0),
            spent(FRESH),
            spent(DIRTY | FRESH),
            spent(DIRTY | FROM_DATABASE),
        ] {
            assert!(!never.is_in_state_table(), "{never:?}");
        }
    }
}
