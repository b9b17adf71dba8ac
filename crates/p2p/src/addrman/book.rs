//! [`AddressBook`]: the address manager shared between the connections,
//! the connection opener and the node (one lock, held for one operation,
//! never across an `await`), and the cached `getaddr` answer.

use std::sync::{Mutex, MutexGuard};

use crate::addrman::address::NetworkSet;
use crate::addrman::manager::AddressManager;
use crate::addrman::random::FastRandom;
use crate::addrman::record::{AddressCandidate, HOUR_SECONDS};
use crate::messages::address::ADDRESSES_PER_MESSAGE_MAX;
use crate::net::shared::lock;

/// The share of known addresses a `getaddr` answer holds at most (Core's
/// `MAX_PCT_ADDR_TO_SEND`).
pub const GETADDR_ANSWER_PERCENT_MAX: usize = 23;
/// A `getaddr` answer is reused for 21 to 27 hours (Core's
/// `AVG_ADDRESS_RESPONSE_CACHE_LIFETIME` with its jitter), so repeated
/// requests cannot map the whole table.
const ANSWER_CACHE_SECONDS_MIN: i64 = 21 * HOUR_SECONDS;
/// See [`ANSWER_CACHE_SECONDS_MIN`].
const ANSWER_CACHE_JITTER_SECONDS: u64 = 6 * 3600;

#[derive(Debug)]
struct CachedAnswer {
    expires_at_seconds: i64,
    addresses: Vec<AddressCandidate>,
}

/// The shared address manager.
#[derive(Debug)]
pub struct AddressBook {
    manager: Mutex<AddressManager>,
    answer: Mutex<Option<CachedAnswer>>,
    jitter: Mutex<FastRandom>,
}

impl AddressBook {
    /// A book over `manager`.
    pub fn new(manager: AddressManager) -> AddressBook {
        let jitter = FastRandom::from_seed(manager.key());
        AddressBook {
            manager: Mutex::new(manager),
            answer: Mutex::new(None),
            jitter: Mutex::new(jitter),
        }
    }

    /// The manager, locked (hold it for one operation).
    pub fn lock(&self) -> MutexGuard<'_, AddressManager> {
        lock(&self.manager)
    }

    /// Addresses known.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no address is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What a `getaddr` is answered with (Core's cached `GetAddresses`): at
    /// most 1,000 addresses and 23 % of those known, none terrible,
    /// computed again once the cached answer is 21-27 hours old.
    pub fn getaddr_answer(&self, now_seconds: i64) -> Vec<AddressCandidate> {
        let mut answer = lock(&self.answer);
        if let Some(cached) =
            answer.as_ref().filter(|cached| now_seconds < cached.expires_at_seconds)
        {
            return cached.addresses.clone();
        }
        let addresses = self.lock().sample(
            ADDRESSES_PER_MESSAGE_MAX,
            GETADDR_ANSWER_PERCENT_MAX,
            NetworkSet::ALL,
            now_seconds,
        );
        let jitter = lock(&self.jitter).below(ANSWER_CACHE_JITTER_SECONDS) as i64;
        let expires_at_seconds = now_seconds + ANSWER_CACHE_SECONDS_MIN + jitter;
        *answer = Some(CachedAnswer { expires_at_seconds, addresses: addresses.clone() });
        addresses
    }

    /// What a `getaddr` from a peer with the `addr` permission is answered
    /// with (Core's uncached `GetAddresses`): the same bounds as
    /// [`Self::getaddr_answer`], sampled now; the cached answer is left
    /// as it is.
    pub fn getaddr_answer_uncached(&self, now_seconds: i64) -> Vec<AddressCandidate> {
        self.lock().sample(
            ADDRESSES_PER_MESSAGE_MAX,
            GETADDR_ANSWER_PERCENT_MAX,
            NetworkSet::ALL,
            now_seconds,
        )
    }

    /// The file's bytes (see [`crate::addrman::file`]) and the addresses
    /// written.
    pub fn encode(&self, network_magic: [u8; 4]) -> (Vec<u8>, usize) {
        let manager = self.lock();
        (crate::addrman::file::encode(&manager, network_magic), manager.len())
    }
}
