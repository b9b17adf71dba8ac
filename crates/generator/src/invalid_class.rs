//! The ways an invalid block can be broken, each with Core's reject reason.

/// One documented way to break a block; every other rule still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InvalidClass {
    /// The header's merkle root does not match the transactions.
    BadMerkleRoot,
    /// The last transaction repeated (CVE-2012-2459): same root, mutated tree.
    DuplicateTransactions,
    /// Two transactions of the block spend the same coin.
    DoubleSpend,
    /// A transaction spends a coin that never existed.
    MissingCoin,
    /// A transaction's outputs are worth more than its inputs.
    OutputsExceedInputs,
    /// The coinbase pays one satoshi more than subsidy plus fees.
    CoinbaseOverpays,
    /// The coinbase's BIP34 height is the next height.
    WrongBip34Height,
    /// A transaction spends a coinbase output one block old.
    PrematureCoinbaseSpend,
    /// A P2WPKH input's ECDSA signature has one bit flipped in S.
    InvalidSignature,
    /// The witness commitment commits to a different witness root.
    BadWitnessCommitment,
    /// A taproot annex pushes the block past 4,000,000 weight units
    /// (its serialisation stays under 4,000,000 bytes).
    OverWeight,
    /// An output script of 20,001 OP_CHECKSIG: legacy sigops cost 80,004.
    TooManySigops,
    /// A transaction's nLockTime is the block's height with non-final sequences.
    NonFinal,
    /// A version 2 transaction's BIP68 height lock is one block more than its coin's age.
    SequenceLockUnmet,
    /// The header time equals the median time past.
    TimeTooOld,
    /// nBits is 0x207ffffe instead of regtest's 0x207fffff (the hash meets it).
    WrongDifficultyBits,
}

impl InvalidClass {
    /// Every class, in the order they are written.
    pub const ALL: [InvalidClass; 16] = [
        InvalidClass::BadMerkleRoot,
        InvalidClass::DuplicateTransactions,
        InvalidClass::DoubleSpend,
        InvalidClass::MissingCoin,
        InvalidClass::OutputsExceedInputs,
        InvalidClass::CoinbaseOverpays,
        InvalidClass::WrongBip34Height,
        InvalidClass::PrematureCoinbaseSpend,
        InvalidClass::InvalidSignature,
        InvalidClass::BadWitnessCommitment,
        InvalidClass::OverWeight,
        InvalidClass::TooManySigops,
        InvalidClass::NonFinal,
        InvalidClass::SequenceLockUnmet,
        InvalidClass::TimeTooOld,
        InvalidClass::WrongDifficultyBits,
    ];

    /// The manifest's name for the class.
    pub const fn name(self) -> &'static str {
        match self {
            InvalidClass::BadMerkleRoot => "bad_merkle_root",
            InvalidClass::DuplicateTransactions => "duplicate_transactions",
            InvalidClass::DoubleSpend => "double_spend",
            InvalidClass::MissingCoin => "missing_coin",
            InvalidClass::OutputsExceedInputs => "outputs_exceed_inputs",
            InvalidClass::CoinbaseOverpays => "coinbase_overpays",
            InvalidClass::WrongBip34Height => "wrong_bip34_height",
            InvalidClass::PrematureCoinbaseSpend => "premature_coinbase_spend",
            InvalidClass::InvalidSignature => "invalid_signature",
            InvalidClass::BadWitnessCommitment => "bad_witness_commitment",
            InvalidClass::OverWeight => "over_weight",
            InvalidClass::TooManySigops => "too_many_sigops",
            InvalidClass::NonFinal => "non_final",
            InvalidClass::SequenceLockUnmet => "sequence_lock_unmet",
            InvalidClass::TimeTooOld => "time_too_old",
            InvalidClass::WrongDifficultyBits => "wrong_difficulty_bits",
        }
    }

    /// The class named `name`.
    pub fn from_name(name: &str) -> Option<InvalidClass> {
        InvalidClass::ALL.iter().copied().find(|class| class.name() == name)
    }

    /// The reject reason Bitcoin Core gives for such a block. Script failures
    /// read `block-script-verify-flag-failed (...)` since Core 30 (which split
    /// the older `mandatory-script-verify-flag-failed` into block and mempool
    /// variants); the text in parentheses is Core's `ScriptErrorString`.
    pub const fn reject_reason(self) -> &'static str {
        match self {
            InvalidClass::BadMerkleRoot => "bad-txnmrklroot",
            InvalidClass::DuplicateTransactions => "bad-txns-duplicate",
            InvalidClass::DoubleSpend | InvalidClass::MissingCoin => "bad-txns-inputs-missingorspent",
            InvalidClass::OutputsExceedInputs => "bad-txns-in-belowout",
            InvalidClass::CoinbaseOverpays => "bad-cb-amount",
            InvalidClass::WrongBip34Height => "bad-cb-height",
            InvalidClass::PrematureCoinbaseSpend => "bad-txns-premature-spend-of-coinbase",
            InvalidClass::InvalidSignature => {
                "block-script-verify-flag-failed (Script evaluated without error but finished with a false/empty top stack element)"
            }
            InvalidClass::BadWitnessCommitment => "bad-witness-merkle-match",
            InvalidClass::OverWeight => "bad-blk-weight",
            InvalidClass::TooManySigops => "bad-blk-sigops",
            InvalidClass::NonFinal | InvalidClass::SequenceLockUnmet => "bad-txns-nonfinal",
            InvalidClass::TimeTooOld => "time-too-old",
            InvalidClass::WrongDifficultyBits => "bad-diffbits",
        }
    }

    /// What was broken, for the manifest.
    pub const fn description(self) -> &'static str {
        match self {
            InvalidClass::BadMerkleRoot => "header merkle root has one bit flipped",
            InvalidClass::DuplicateTransactions => {
                "last transaction repeated (CVE-2012-2459), merkle root unchanged"
            }
            InvalidClass::DoubleSpend => "two transactions spend the same coin",
            InvalidClass::MissingCoin => "a transaction spends an outpoint no block created",
            InvalidClass::OutputsExceedInputs => "a transaction's outputs exceed its inputs",
            InvalidClass::CoinbaseOverpays => "coinbase pays subsidy plus fees plus one satoshi",
            InvalidClass::WrongBip34Height => "coinbase scriptSig starts with height + 1",
            InvalidClass::PrematureCoinbaseSpend => "spends the previous block's coinbase output",
            InvalidClass::InvalidSignature => "a P2WPKH signature has one bit of S flipped",
            InvalidClass::BadWitnessCommitment => "witness commitment over a wrong witness root",
            InvalidClass::OverWeight => "a taproot annex makes the block weigh over 4,000,000",
            InvalidClass::TooManySigops => "an output of 20,001 OP_CHECKSIG (80,004 sigops cost)",
            InvalidClass::NonFinal => "nLockTime equals the block height, sequences not final",
            InvalidClass::SequenceLockUnmet => {
                "BIP68 height lock one block longer than the coin's age"
            }
            InvalidClass::TimeTooOld => "header time equals the previous block's median time past",
            InvalidClass::WrongDifficultyBits => "nBits 0x207ffffe instead of 0x207fffff",
        }
    }
}
