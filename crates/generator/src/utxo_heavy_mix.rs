//! The `utxo-heavy` profile's shares of block weight and sizes of traffic,
//! part of a profile's [`crate::planner::TrafficMix`]; how blocks are
//! planned from them is [`crate::utxo_heavy`]'s.

use serde::Serialize;

use crate::spend_age::SpendAgeModel;

/// The `utxo-heavy` profile's shares and sizes (see [`crate::utxo_heavy`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UtxoHeavyMix {
    /// Share of each block's weight for consolidations, per mille.
    pub consolidation_weight_per_mille: u64,
    /// Share for batch payouts, per mille (payments fill the rest).
    pub batch_payout_weight_per_mille: u64,
    /// Payouts of a batch: lowest and highest (log-uniform).
    pub batch_payout_outputs: (u64, u64),
    /// Value of a payout in satoshis: lowest and highest (log-uniform).
    pub payout_value_satoshis: (u64, u64),
    /// Coins a consolidation sweeps: lowest and highest (uniform).
    pub consolidation_inputs: (u64, u64),
    /// Largest coin a consolidation sweeps, in satoshis.
    pub consolidation_coin_value_max_satoshis: u64,
    /// Fee rates of consolidations (made when fees are low), sat/vB.
    pub consolidation_fee_rate_satoshis_per_vbyte: (u64, u64),
    /// A payment adds coins while its inputs are worth less than this.
    pub payment_value_min_satoshis: u64,
    /// Most inputs a payment has.
    pub payment_inputs_max: u64,
    /// The ages of the coins payments spend.
    pub spend_ages: SpendAgeModel,
}

impl UtxoHeavyMix {
    /// The profile's mix.
    pub fn mainnet_like() -> UtxoHeavyMix {
        UtxoHeavyMix {
            consolidation_weight_per_mille: 80,
            batch_payout_weight_per_mille: 520,
            batch_payout_outputs: (100, 2_000),
            payout_value_satoshis: (2_000, 150_000),
            consolidation_inputs: (50, 500),
            consolidation_coin_value_max_satoshis: 1_000_000,
            consolidation_fee_rate_satoshis_per_vbyte: (1, 3),
            payment_value_min_satoshis: 20_000,
            payment_inputs_max: 8,
            spend_ages: SpendAgeModel::mainnet_like(),
        }
    }
}
