//! The address manager's file in the chain directory (`ibex_peers.dat`,
//! [`ibex_p2p::addrman::file`]'s format; Core's `peers.dat` is left to
//! `bitcoind`, which would refuse ours): loaded at start, written every 15
//! minutes and at shutdown, with Core's log lines ("Loaded N addresses
//! from peers.dat  Xms", "Flushed N addresses to peers.dat  Xms", naming
//! our file).
//!
//! A file that cannot be used (corrupt, truncated, another network's, a
//! newer format) is logged, moved aside to `ibex_peers.dat.bak` and
//! replaced by an empty address manager: the node starts either way
//! (Core refuses to start on a corrupt `peers.dat`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibex_p2p::addrman::file::{decode, read_file, write_file_atomically};
use ibex_p2p::addrman::{AddressBook, AddressFileError, AddressManager, AddressPolicy};
use ibex_primitives::params::Network;
use ibex_primitives::Params;

use crate::logging::Logger;

/// The file's name in the chain directory.
pub const PEERS_FILE_NAME: &str = "ibex_peers.dat";
/// How often the file is written while the node runs (Core's
/// `DUMP_PEERS_INTERVAL`).
pub const PEERS_FILE_WRITE_INTERVAL: Duration = Duration::from_secs(15 * 60);

/// The address manager as loaded, with the lines to log when the network
/// starts.
#[derive(Debug)]
pub struct LoadedAddresses {
    /// The address manager.
    pub book: Arc<AddressBook>,
    /// Where it is written.
    pub path: PathBuf,
    /// What loading it gave, in Core's words.
    pub lines: Vec<String>,
}

/// What the address manager accepts on `params`' chain: loopback
/// addresses on regtest only (so nodes on one machine find each other).
pub fn address_policy(params: &Params) -> AddressPolicy {
    AddressPolicy { loopback_allowed: params.network == Network::Regtest }
}

/// Loads `ibex_peers.dat` from `chain_directory`; `seed` keys a new
/// manager (and seeds a loaded one's random numbers).
pub fn load_addresses(chain_directory: &Path, params: &Params, seed: &[u8; 32]) -> LoadedAddresses {
    let path = chain_directory.join(PEERS_FILE_NAME);
    let policy = address_policy(params);
    let started = Instant::now();
    let empty = || AddressManager::new(policy, seed);
    let (manager, line) = match read_file(&path) {
        Ok(None) => (
            empty(),
            format!("Creating {PEERS_FILE_NAME} because the file was not found ({:?})", path),
        ),
        Ok(Some(bytes)) => match decode(&bytes, params.message_start, policy, seed) {
            Ok(decoded) => {
                let line = format!(
                    "Loaded {} addresses from {PEERS_FILE_NAME}  {}ms",
                    decoded.manager.len(),
                    started.elapsed().as_millis()
                );
                (decoded.manager, line)
            }
            Err(error) => (empty(), set_aside(&path, &error)),
        },
        Err(error @ AddressFileError::TooLarge { .. }) => (empty(), set_aside(&path, &error)),
        Err(error) => {
            (empty(), format!("Cannot use {PEERS_FILE_NAME} ({error}): starting with no addresses"))
        }
    };
    LoadedAddresses { book: Arc::new(AddressBook::new(manager)), path, lines: vec![line] }
}

/// Moves an unusable file to `<name>.bak`; the line saying so.
fn set_aside(path: &Path, error: &AddressFileError) -> String {
    let mut backup = path.as_os_str().to_owned();
    backup.push(".bak");
    let backup = PathBuf::from(backup);
    let moved = match std::fs::rename(path, &backup) {
        Ok(()) => format!("moved to {:?}", backup),
        Err(rename_error) => format!("could not be moved aside: {rename_error}"),
    };
    format!(
        "Invalid or corrupt {PEERS_FILE_NAME} ({error}); {moved}; starting with an empty address manager"
    )
}

/// Writes `book` to `path` and logs it as Core does.
pub fn write_addresses(book: &AddressBook, path: &Path, params: &Params, logger: &Logger) {
    let started = Instant::now();
    let (bytes, count) = book.encode(params.message_start);
    match write_file_atomically(path, &bytes) {
        Ok(()) => logger.log(&format!(
            "Flushed {count} addresses to {PEERS_FILE_NAME}  {}ms",
            started.elapsed().as_millis()
        )),
        Err(error) => logger.log(&format!("Error: failed to write {PEERS_FILE_NAME}: {error}")),
    }
}

/// Writes the file every [`PEERS_FILE_WRITE_INTERVAL`] on `runtime` until
/// the runtime ends.
pub fn spawn_periodic_writes(
    runtime: &tokio::runtime::Handle,
    book: Arc<AddressBook>,
    path: PathBuf,
    params: Params,
    logger: Logger,
) {
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(PEERS_FILE_WRITE_INTERVAL).await;
            let (book, path, params, logger) =
                (Arc::clone(&book), path.clone(), params.clone(), logger.clone());
            let write = move || write_addresses(&book, &path, &params, &logger);
            // A few ms of file writing, off the reactor.
            if tokio::task::spawn_blocking(write).await.is_err() {
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use ibex_p2p::addrman::{AddressCandidate, AddressSource, PeerAddress};
    use ibex_p2p::ServiceFlags;

    fn candidate(port: u16) -> AddressCandidate {
        AddressCandidate {
            address: PeerAddress::from_socket_address(std::net::SocketAddr::from((
                [127, 0, 0, 1],
                port,
            ))),
            services: ServiceFlags::NETWORK,
            time_seconds: 1_700_000_000,
        }
    }

    #[test]
    fn a_missing_or_corrupt_file_gives_an_empty_manager() {
        let directory = tempfile::tempdir().unwrap();
        let params = Params::regtest();
        let loaded = load_addresses(directory.path(), &params, &[1; 32]);
        assert!(loaded.book.is_empty());
        assert!(
            loaded.lines[0].starts_with("Creating ibex_peers.dat because the file was not found")
        );
        loaded.book.lock().add(
            &[candidate(1), candidate(2)],
            AddressSource::named("t"),
            0,
            1_700_000_000,
        );
        let (bytes, count) = loaded.book.encode(params.message_start);
        assert_eq!(count, 2);
        std::fs::write(&loaded.path, &bytes).unwrap();
        let again = load_addresses(directory.path(), &params, &[2; 32]);
        assert_eq!(again.book.len(), 2);
        assert!(
            again.lines[0].starts_with("Loaded 2 addresses from ibex_peers.dat  "),
            "{:?}",
            again.lines
        );
        // Cut short: logged, set aside, empty.
        std::fs::write(&loaded.path, &bytes[..bytes.len() / 2]).unwrap();
        let damaged = load_addresses(directory.path(), &params, &[3; 32]);
        assert!(damaged.book.is_empty());
        assert!(
            damaged.lines[0].starts_with("Invalid or corrupt ibex_peers.dat"),
            "{:?}",
            damaged.lines
        );
        assert!(directory.path().join("ibex_peers.dat.bak").exists());
        assert!(!loaded.path.exists());
        // Another chain's file is not this chain's.
        std::fs::write(&loaded.path, &bytes).unwrap();
        let main = load_addresses(directory.path(), &Params::main(), &[4; 32]);
        assert!(main.book.is_empty() && main.lines[0].contains("another network"));
    }
}
