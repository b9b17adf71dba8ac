//! Log lines about peers that Core writes and the state machines only
//! imply: the stalling timeout growing after a staller is dropped.

use ibex_p2p::sync::DisconnectReason;

use super::SyncLoop;

impl SyncLoop {
    /// After a disconnect for stalling, Core's note that the next staller
    /// gets longer (the timeout doubles, up to 64 s).
    pub(super) fn log_stalling_timeout_increase(&self, reason: &DisconnectReason) {
        let DisconnectReason::StallingBlockDownload { timeout_seconds } = reason else { return };
        let current_seconds = self.download.stalling_timeout().current().as_secs();
        if current_seconds > *timeout_seconds {
            self.logger.log(&format!(
                "Increased stalling timeout temporarily to {current_seconds} seconds"
            ));
        }
    }
}
