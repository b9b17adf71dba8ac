//! The services the node announces while an AssumeUTXO snapshot is not
//! validated. Such a node holds no blocks below the snapshot's base until
//! its background chainstate has downloaded them, so it must not offer
//! `NODE_NETWORK` (all blocks): Core's `loadtxoutset` calls
//! `RemoveLocalServices(NODE_NETWORK)` and `AddLocalServices(NODE_NETWORK_LIMITED)`,
//! its init leaves `NODE_NETWORK` out of `g_local_services` when a
//! snapshot chainstate is not validated, and its
//! `snapshot_download_completed` adds `NODE_NETWORK` back (unless pruned,
//! which the configured services already say). Here the sync loop follows
//! the engine's summary, so a snapshot loaded at runtime, one found at
//! start and its validation are all seen the same way.

use ibex_chainstate::AssumeUtxoSummary;
use ibex_p2p::net::NetworkConfig;
use ibex_p2p::ServiceFlags;

use super::SyncLoop;
use crate::logging::Logger;

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

/// Sets `config` to start with the services [`services_for_snapshot`]
/// gives (Core's init): connections open as soon as the layer starts, so
/// the first of them must not be offered `NODE_NETWORK` either. Returns
/// the configured services, announced again once the snapshot is
/// validated.
pub fn apply_start_services(
    config: &mut NetworkConfig,
    assumeutxo: Option<&AssumeUtxoSummary>,
    logger: &Logger,
) -> ServiceFlags {
    let configured = config.announced_services();
    config.services = services_for_snapshot(config.services, assumeutxo);
    let announced = config.announced_services();
    if announced != configured {
        logger.log(change_line(announced));
    }
    configured
}

/// Core's line when a change takes `NODE_NETWORK` away or gives it back.
fn change_line(announced: ServiceFlags) -> &'static str {
    if announced.contains(ServiceFlags::NETWORK) {
        "[snapshot] re-enabling NODE_NETWORK services"
    } else {
        "Running node in NODE_NETWORK_LIMITED mode until snapshot background sync completes"
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
    fn the_change_is_logged_in_cores_words() {
        assert_eq!(
            change_line(ServiceFlags::NETWORK | ServiceFlags::WITNESS),
            "[snapshot] re-enabling NODE_NETWORK services"
        );
        assert!(change_line(ServiceFlags::NETWORK_LIMITED).contains("NODE_NETWORK_LIMITED mode"));
    }
}
