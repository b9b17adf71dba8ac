//! The bytes of replies held at once, across connections: a reply counts
//! from when it is built (or, for a batch, while it grows) until its body
//! has been handed to the socket in full, so clients that ask for large
//! replies (REST block JSON, batches) and never read them hold at most
//! [`REPLY_BYTES_IN_FLIGHT_MAX`] between them, not `connections_max`
//! times a block's JSON (8.6 MB for a 1 MB block, ~40 MB for a 4 MB one).
//!
//! Core has no such bound (libevent keeps every reply until it is written
//! or the connection times out). A worker whose finished reply finds no
//! room waits at most [`REPLY_BUDGET_WAIT_MS`] for replies to drain (an
//! honest burst of large replies over loopback drains at gigabytes a
//! second), then answers 503 instead; a batch that finds no room while it
//! grows is refused at once (a waiting batch could hold room others wait
//! for). Replies of at most [`UNCOUNTED_REPLY_BYTES_MAX`] are not counted:
//! every ordinary call's reply is that small, and their total is bounded by
//! `connections_max` x 64 KiB. A reply larger than the whole budget would
//! be refused, but no method's reply comes near it (a 4 MB block at
//! verbosity 3 is ~40 MB of JSON) and a batch's is bounded below it.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Bytes of counted replies held at once, across all connections.
pub(crate) const REPLY_BYTES_IN_FLIGHT_MAX: usize = 128 << 20;
/// Longest wait of a worker for room for its finished reply, milliseconds.
pub(crate) const REPLY_BUDGET_WAIT_MS: u64 = 1_000;
/// Replies of at most this many bytes are not counted.
pub(crate) const UNCOUNTED_REPLY_BYTES_MAX: usize = 64 << 10;
/// Room a REST block reply takes before it is built (then resized to the
/// reply): a worker does not build megabytes the budget has no room for,
/// so while non-readers hold the budget, workers hold nothing but waits.
/// A block's JSON is ~12 times the block (12.2 MB for a 1 MB block of the
/// generator's; ~40 MB for a full 4 MB-weight block), `.hex` twice it.
pub(crate) const REST_BLOCK_REPLY_BYTES_ESTIMATE: usize = 16 << 20;

struct Inner {
    used_bytes: Mutex<usize>,
    freed: Condvar,
    bytes_max: usize,
}

/// The shared budget of reply bytes.
#[derive(Clone)]
pub(crate) struct ReplyBudget {
    inner: Arc<Inner>,
}

/// Bytes taken from a [`ReplyBudget`], given back when dropped.
pub(crate) struct ReplyReservation {
    inner: Arc<Inner>,
    bytes: usize,
}

impl std::fmt::Debug for ReplyReservation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("ReplyReservation").field("bytes", &self.bytes).finish()
    }
}

impl ReplyBudget {
    /// A budget of `bytes_max` bytes.
    pub(crate) fn new(bytes_max: usize) -> ReplyBudget {
        ReplyBudget {
            inner: Arc::new(Inner { used_bytes: Mutex::new(0), freed: Condvar::new(), bytes_max }),
        }
    }

    /// A reservation of nothing yet, to grow with
    /// [`ReplyReservation::try_grow_to`].
    pub(crate) fn empty(&self) -> ReplyReservation {
        ReplyReservation { inner: self.inner.clone(), bytes: 0 }
    }

    /// Takes `bytes`, waiting (blocking the calling worker) at most `wait`
    /// for others to give room back; `None` when there is none by then or
    /// `bytes` exceeds the whole budget.
    pub(crate) fn reserve(&self, bytes: usize, wait: Duration) -> Option<ReplyReservation> {
        take(&self.inner, bytes, wait)
            .then(|| ReplyReservation { inner: self.inner.clone(), bytes })
    }

    /// Bytes counted now.
    #[cfg(test)]
    pub(crate) fn used_bytes(&self) -> usize {
        *lock(&self.inner.used_bytes)
    }
}

impl ReplyReservation {
    /// Grows the reservation to `bytes` if the budget has room now (never
    /// waits); a smaller `bytes` keeps it as it is.
    pub(crate) fn try_grow_to(&mut self, bytes: usize) -> bool {
        if bytes <= self.bytes {
            return true;
        }
        let more = bytes - self.bytes;
        let mut used = lock(&self.inner.used_bytes);
        if *used + more > self.inner.bytes_max {
            return false;
        }
        *used += more;
        self.bytes = bytes;
        true
    }

    /// Resizes the reservation to `bytes`: at once when smaller, else
    /// waiting at most `wait` for the room it lacks; `false` (the
    /// reservation unchanged) when there is none by then.
    pub(crate) fn resize_waiting(&mut self, bytes: usize, wait: Duration) -> bool {
        if bytes <= self.bytes {
            let freed = self.bytes - bytes;
            self.bytes = bytes;
            give_back(&self.inner, freed);
            return true;
        }
        if !take(&self.inner, bytes - self.bytes, wait) {
            return false;
        }
        self.bytes = bytes;
        true
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for ReplyReservation {
    fn drop(&mut self) {
        give_back(&self.inner, self.bytes);
    }
}

/// Counts `bytes` more, waiting at most `wait` for room; `false` when there
/// is none by then or `bytes` exceeds the whole budget.
fn take(inner: &Inner, bytes: usize, wait: Duration) -> bool {
    if bytes > inner.bytes_max {
        return false;
    }
    let deadline = Instant::now() + wait;
    let mut used = lock(&inner.used_bytes);
    while *used + bytes > inner.bytes_max {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else { return false };
        used = inner
            .freed
            .wait_timeout(used, left)
            .map(|(guard, _)| guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner().0);
    }
    *used += bytes;
    true
}

/// Counts `bytes` fewer and wakes the waiters.
fn give_back(inner: &Inner, bytes: usize) {
    if bytes == 0 {
        return;
    }
    let mut used = lock(&inner.used_bytes);
    *used = used.saturating_sub(bytes);
    drop(used);
    inner.freed.notify_all();
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_share_the_budget_and_give_it_back() {
        let budget = ReplyBudget::new(100);
        let first = budget.reserve(60, Duration::ZERO).unwrap();
        assert!(budget.reserve(50, Duration::ZERO).is_none(), "60 + 50 exceeds 100");
        assert!(budget.reserve(101, Duration::from_secs(5)).is_none(), "never fits: no wait");
        let mut growing = budget.empty();
        assert!(growing.try_grow_to(40));
        assert!(!growing.try_grow_to(41), "60 + 41 exceeds 100");
        assert_eq!((growing.bytes(), budget.used_bytes()), (40, 100));
        drop(first);
        assert_eq!(budget.used_bytes(), 40);
        assert!(growing.try_grow_to(100));
        assert!(growing.resize_waiting(70, Duration::ZERO), "shrinking never waits");
        assert_eq!(budget.used_bytes(), 70);
        assert!(!growing.resize_waiting(101, Duration::ZERO));
        assert!(growing.resize_waiting(100, Duration::ZERO));
        // A waiter gets room when a reservation is dropped meanwhile.
        let waiter = {
            let budget = budget.clone();
            std::thread::spawn(move || budget.reserve(30, Duration::from_secs(30)).map(|r| r.bytes))
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(growing);
        assert_eq!(waiter.join().unwrap(), Some(30));
        assert_eq!(budget.used_bytes(), 0);
    }
}
