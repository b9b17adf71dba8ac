//! Whether the node offers `NODE_NETWORK` (every block). A pruning node
//! never does: it announces `NODE_NETWORK_LIMITED` (the last 288 blocks)
//! and the rest of its services. Nor does a node while an AssumeUTXO
//! snapshot is not validated: it holds no blocks below the snapshot's base
//! until its background chainstate has downloaded them. Core's init
//! (`AppInitMain`, step 10) adds `NODE_NETWORK` to `g_local_services` only
//! when not pruning and no snapshot waits, saying which
//! ([`start_services`]); its `loadtxoutset` calls
//! `RemoveLocalServices(NODE_NETWORK)` and `AddLocalServices(NODE_NETWORK_LIMITED)`,
//! and its `snapshot_download_completed` adds `NODE_NETWORK` back unless
//! pruning (here the configured services already lack it:
//! [`configured_services`]). The sync loop follows the engine's summary,
//! so a snapshot loaded at runtime, one found at start and its validation
//! are all seen the same way.

use ibex_chainstate::AssumeUtxoSummary;
use ibex_p2p::net::NetworkConfig;
use ibex_p2p::ServiceFlags;

use super::SyncLoop;

/// Core's line when a node that does not prune offers every block.
pub const NODE_NETWORK_LINE: &str = "Setting NODE_NETWORK on non-prune mode";
/// Core's line when a snapshot waiting for validation holds `NODE_NETWORK`
/// back.
pub const LIMITED_UNTIL_VALIDATED_LINE: &str =
    "Running node in NODE_NETWORK_LIMITED mode until snapshot background sync completes";
/// Core's init message each time a pruning node looks at pruning at start.
pub const PRUNING_BLOCKSTORE_LINE: &str = "init message: Pruning blockstore…";

/// What the start decides of `NODE_NETWORK`, and Core's lines for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartServices {
    /// Whether `NODE_NETWORK` is offered from the first connection on.
    pub node_network: bool,
    /// The log lines, in order.
    pub lines: Vec<&'static str>,
}

/// Core's step 10 of `AppInitMain` ("data directory maintenance"): a
/// pruning node looks at pruning once for each chainstate (two while a
/// snapshot waits for validation; none while a reindex has block files
/// to read) and never offers `NODE_NETWORK`; any other offers it unless a
/// snapshot waits for validation, and says which.
pub fn start_services(
    pruning: bool,
    reindexing: bool,
    assumeutxo: Option<&AssumeUtxoSummary>,
) -> StartServices {
    let snapshot_waits = assumeutxo.is_some_and(|summary| !summary.validated);
    if pruning {
        let chainstates = if reindexing { 0 } else { 1 + usize::from(snapshot_waits) };
        return StartServices {
            node_network: false,
            lines: vec![PRUNING_BLOCKSTORE_LINE; chainstates],
        };
    }
    if snapshot_waits {
        return StartServices { node_network: false, lines: vec![LIMITED_UNTIL_VALIDATED_LINE] };
    }
    StartServices { node_network: true, lines: vec![NODE_NETWORK_LINE] }
}

/// The services announced once no snapshot waits for validation:
/// `services` without `NODE_NETWORK` when pruning (`NODE_NETWORK_LIMITED`
/// stays, as in Core's `g_local_services`).
pub fn configured_services(services: ServiceFlags, pruning: bool) -> ServiceFlags {
    if pruning {
        services.without(ServiceFlags::NETWORK) | ServiceFlags::NETWORK_LIMITED
    } else {
        services
    }
}

/// The services to announce, given the `configured` ones and the engine's
/// AssumeUTXO summary: without `NODE_NETWORK`, with
/// `NODE_NETWORK_LIMITED`, while a snapshot is not validated; the
/// configured ones otherwise.
pub fn services_for_snapshot(
    configured: ServiceFlags,
    assumeutxo: Option<&AssumeUtxoSummary>,
) -> ServiceFlags {
    match assumeutxo {
        Some(summary) if !summary.validated => {
            configured.without(ServiceFlags::NETWORK) | ServiceFlags::NETWORK_LIMITED
        }
        _ => configured,
    }
}

/// Sets `config` to start with the services the start chose
/// ([`start_services`]'s `node_network`): connections open as soon as the
/// layer starts, so the first of them must not be offered `NODE_NETWORK`
/// when it said so. Returns the [`configured_services`], announced once no
/// snapshot waits for validation (the sync loop follows its state from its
/// first pass, and says when it gives `NODE_NETWORK` back).
pub fn apply_start_services(
    config: &mut NetworkConfig,
    pruning: bool,
    node_network: bool,
) -> ServiceFlags {
    config.services = configured_services(config.services, pruning);
    let configured = config.announced_services();
    if !node_network {
        config.services =
            config.services.without(ServiceFlags::NETWORK) | ServiceFlags::NETWORK_LIMITED;
    }
    configured
}

/// Core's line when a change takes `NODE_NETWORK` away or gives it back.
fn change_line(announced: ServiceFlags) -> &'static str {
    if announced.contains(ServiceFlags::NETWORK) {
        "[snapshot] re-enabling NODE_NETWORK services"
    } else {
        LIMITED_UNTIL_VALIDATED_LINE
    }
}

impl SyncLoop {
    /// Announces what [`services_for_snapshot`] gives for `assumeutxo`
    /// from the next `version` on, when that differs from what is
    /// announced now (a lock-free read otherwise).
    pub(super) fn follow_snapshot_services(&mut self, assumeutxo: Option<&AssumeUtxoSummary>) {
        let wanted = services_for_snapshot(self.configured_services, assumeutxo);
        if wanted == self.network.local_services() {
            return;
        }
        self.network.set_local_services(wanted);
        self.logger.log(change_line(wanted));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::BlockHash;

    fn summary(validated: bool) -> AssumeUtxoSummary {
        AssumeUtxoSummary {
            base_hash: BlockHash([7; 32]),
            base_height: 110,
            background_tip: Some((BlockHash([1; 32]), 1)),
            validated,
        }
    }

    #[test]
    fn an_unvalidated_snapshot_drops_node_network_until_it_is_validated() {
        let configured = ServiceFlags::NETWORK
            | ServiceFlags::WITNESS
            | ServiceFlags::NETWORK_LIMITED
            | ServiceFlags::P2P_V2;
        let limited = services_for_snapshot(configured, Some(&summary(false)));
        assert!(!limited.contains(ServiceFlags::NETWORK));
        assert_eq!(
            limited,
            ServiceFlags::WITNESS | ServiceFlags::NETWORK_LIMITED | ServiceFlags::P2P_V2
        );
        assert_eq!(services_for_snapshot(configured, Some(&summary(true))), configured);
        assert_eq!(services_for_snapshot(configured, None), configured);
        // Core adds NODE_NETWORK_LIMITED even where it was not announced.
        let without_limited = ServiceFlags::NETWORK | ServiceFlags::WITNESS;
        assert_eq!(
            services_for_snapshot(without_limited, Some(&summary(false))),
            ServiceFlags::WITNESS | ServiceFlags::NETWORK_LIMITED
        );
    }

    #[test]
    fn a_pruning_node_never_offers_node_network() {
        let configured =
            ServiceFlags::NETWORK | ServiceFlags::WITNESS | ServiceFlags::NETWORK_LIMITED;
        let pruned = configured_services(configured, true);
        assert_eq!(pruned, ServiceFlags::WITNESS | ServiceFlags::NETWORK_LIMITED);
        assert_eq!(configured_services(configured, false), configured);
        // Neither while a snapshot waits nor once it is validated.
        assert_eq!(services_for_snapshot(pruned, Some(&summary(false))), pruned);
        assert_eq!(services_for_snapshot(pruned, Some(&summary(true))), pruned);
        let mut config = NetworkConfig::new([0xfa, 0xbf, 0xb5, 0xda]);
        config.services = configured;
        config.v2_transport = true;
        let announced_later = apply_start_services(&mut config, true, false);
        assert!(!config.announced_services().contains(ServiceFlags::NETWORK));
        assert_eq!(announced_later, config.announced_services());
        assert!(announced_later.contains(ServiceFlags::P2P_V2 | ServiceFlags::NETWORK_LIMITED));
    }

    #[test]
    fn a_node_that_keeps_every_block_offers_it_unless_the_start_held_it_back() {
        let full = ServiceFlags::NETWORK | ServiceFlags::WITNESS | ServiceFlags::NETWORK_LIMITED;
        let config_with = |services| {
            let mut config = NetworkConfig::new([0xfa, 0xbf, 0xb5, 0xda]);
            config.services = services;
            config
        };
        let mut held_back = config_with(full);
        let configured = apply_start_services(&mut held_back, false, false);
        assert!(configured.contains(ServiceFlags::NETWORK), "given back once validated");
        assert!(!held_back.announced_services().contains(ServiceFlags::NETWORK));
        let mut offered = config_with(full);
        assert_eq!(apply_start_services(&mut offered, false, true), offered.announced_services());
        assert!(offered.announced_services().contains(ServiceFlags::NETWORK));
    }

    #[test]
    fn the_start_says_what_it_offers_in_cores_words() {
        let lines = |pruning, reindexing, assumeutxo: Option<&AssumeUtxoSummary>| {
            start_services(pruning, reindexing, assumeutxo)
        };
        assert_eq!(
            lines(false, false, None),
            StartServices {
                node_network: true,
                lines: vec!["Setting NODE_NETWORK on non-prune mode"]
            }
        );
        assert_eq!(lines(false, true, Some(&summary(true))).lines, [NODE_NETWORK_LINE]);
        assert_eq!(
            lines(false, false, Some(&summary(false))),
            StartServices { node_network: false, lines: vec![LIMITED_UNTIL_VALIDATED_LINE] }
        );
        assert_eq!(
            lines(true, false, None),
            StartServices {
                node_network: false, lines: vec!["init message: Pruning blockstore…"]
            }
        );
        assert_eq!(lines(true, false, Some(&summary(false))).lines.len(), 2, "two chainstates");
        assert!(lines(true, true, None).lines.is_empty(), "block files still to index");
    }

    #[test]
    fn the_change_is_logged_in_cores_words() {
        assert_eq!(
            change_line(ServiceFlags::NETWORK | ServiceFlags::WITNESS),
            "[snapshot] re-enabling NODE_NETWORK services"
        );
        assert!(change_line(ServiceFlags::NETWORK_LIMITED).contains("NODE_NETWORK_LIMITED mode"));
    }
}
