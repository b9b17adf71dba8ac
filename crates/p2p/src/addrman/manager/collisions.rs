//! Test-before-evict (Core's `ResolveCollisions_`, `SelectTriedCollision_`):
//! an address that connected but whose tried slot holds another waits in
//! the new table while a feeler tests the occupant. The occupant stays if
//! it answers (or connected in the last 4 hours); it is replaced if the
//! feeler fails, or if no test happened within 40 minutes.
//!
//! An attacker who makes us connect to its addresses (by announcing them,
//! or by being the only peers that answer) thus cannot push good tried
//! entries out: each would first have to stop answering a feeler. At most
//! [`TRIED_COLLISIONS_MAX`] collisions wait at once, so the queue costs 10
//! addresses, and resolving it 10 look-ups, whatever the attacker sends.

use super::{AddressManager, SelectedAddress, EMPTY};
use crate::addrman::address::PeerAddress;
use crate::addrman::record::REPLACEMENT_SECONDS;

/// Collisions waiting for a test at most (Core's
/// `ADDRMAN_SET_TRIED_COLLISION_SIZE`); later ones are dropped (the
/// address stays in the new table).
pub const TRIED_COLLISIONS_MAX: usize = 10;
/// A collision not tested within this long after the newcomer's
/// connection replaces the occupant anyway (Core's `ADDRMAN_TEST_WINDOW`,
/// 40 minutes).
const TEST_WINDOW_SECONDS: i64 = 40 * 60;
/// How long a feeler to the occupant gets before its attempt counts as
/// failed (Core's 60 seconds).
const FEELER_GRACE_SECONDS: i64 = 60;

/// What to do with one queued collision.
enum Resolution {
    /// Keep waiting for a test.
    Wait,
    /// Drop it: the occupant stays (or the newcomer is gone).
    KeepOccupant,
    /// Move the newcomer to its tried slot, the occupant back to new.
    Replace(u32),
}

impl AddressManager {
    /// Queues `address` for test-before-evict, unless the queue is full
    /// or holds it already.
    pub(super) fn queue_collision(&mut self, address: PeerAddress) {
        if self.tried_collisions.len() < TRIED_COLLISIONS_MAX
            && !self.tried_collisions.contains(&address)
        {
            self.tried_collisions.push(address);
        }
    }

    /// Collisions waiting for a test.
    pub fn tried_collisions(&self) -> usize {
        self.tried_collisions.len()
    }

    /// Settles the queued collisions that can be (Core's
    /// `ResolveCollisions`, run before each automatic connection): the
    /// occupant stays if it connected in the last 4 hours; it is replaced
    /// if a connection to it was tried (and did not succeed) more than a
    /// minute and less than 4 hours ago, or if the newcomer connected more
    /// than 40 minutes ago and the occupant was never tested since.
    pub fn resolve_collisions(&mut self, now_seconds: i64) {
        let pending = std::mem::take(&mut self.tried_collisions);
        for address in pending {
            match self.resolution(&address, now_seconds) {
                Resolution::Wait => self.tried_collisions.push(address),
                Resolution::KeepOccupant => {}
                Resolution::Replace(id) => self.promote(id, now_seconds, false),
            }
        }
    }

    fn resolution(&self, address: &PeerAddress, now_seconds: i64) -> Resolution {
        let Some(&id) = self.ids.get(address) else { return Resolution::KeepOccupant };
        let Some(newcomer) = self.record(id) else { return Resolution::KeepOccupant };
        if newcomer.is_tried() {
            return Resolution::KeepOccupant;
        }
        let slot = self.buckets.tried_slot(address, self.policy);
        let occupant = self.tried_table[slot.index()];
        let Some(old) = self.record(occupant).filter(|_| occupant != EMPTY) else {
            // No collision any more: the slot emptied meanwhile.
            return Resolution::Replace(id);
        };
        let since = |seconds: i64| now_seconds.saturating_sub(seconds);
        if since(old.last_success_seconds) < REPLACEMENT_SECONDS {
            return Resolution::KeepOccupant;
        }
        if since(old.last_try_seconds) < REPLACEMENT_SECONDS {
            // Tried and not connected since: failed once the feeler had
            // its minute.
            if since(old.last_try_seconds) > FEELER_GRACE_SECONDS {
                return Resolution::Replace(id);
            }
            return Resolution::Wait;
        }
        if since(newcomer.last_success_seconds) > TEST_WINDOW_SECONDS {
            return Resolution::Replace(id);
        }
        Resolution::Wait
    }

    /// The occupant of a random queued collision's tried slot, for a
    /// feeler to test (Core's `SelectTriedCollision`); `None` without
    /// collisions (a stale entry found is dropped).
    pub fn select_tried_collision(&mut self) -> Option<SelectedAddress> {
        if self.tried_collisions.is_empty() {
            return None;
        }
        let index = self.random.index(self.tried_collisions.len());
        let address = self.tried_collisions[index];
        let newcomer = self.ids.get(&address).and_then(|&id| self.record(id));
        let Some(newcomer) = newcomer else {
            self.tried_collisions.swap_remove(index);
            return None;
        };
        let slot = self.buckets.tried_slot(&newcomer.address, self.policy);
        let occupant = self.tried_table[slot.index()];
        let old = self.record(occupant).filter(|_| occupant != EMPTY)?;
        Some(SelectedAddress {
            address: old.address,
            services: old.services,
            last_try_seconds: old.last_try_seconds,
        })
    }
}
