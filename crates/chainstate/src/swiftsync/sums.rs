//! The sums the judgement at the terminal height reads, kept by each
//! worker, merged by the pass and written in a checkpoint.

use ibex_primitives::hints::OutpointAggregate;
use ibex_primitives::Txid;

/// What the judgement at `H` reads, summed over blocks accounted (a
/// worker's, the pass's, a checkpoint's).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PassSums {
    pub(crate) aggregate: OutpointAggregate,
    /// Unspent plus burnt value, in satoshis.
    pub(crate) kept_value: u128,
    /// Coins staged.
    pub(crate) coin_count: u64,
    /// Inputs accounted.
    pub(crate) input_count: u64,
    /// Coinbase transaction ids BIP30 asks to be unique.
    pub(crate) coinbases: Vec<Txid>,
}

impl PassSums {
    /// Adds `other`'s sums.
    pub(crate) fn merge(&mut self, other: PassSums) {
        self.aggregate.merge(&other.aggregate);
        self.kept_value = self.kept_value.saturating_add(other.kept_value);
        self.coin_count += other.coin_count;
        self.input_count += other.input_count;
        self.coinbases.extend(other.coinbases);
    }
}
