//! Invalid blocks for tests: each builds on the valid tip (they are siblings)
//! and breaks exactly one rule, listed in [`InvalidClass`] with Core's reject
//! reason. Every other rule holds: signatures are real, fees add up, the
//! proof of work is ground for the final header.

use ibex_primitives::{Amount, Block, Transaction, TxInput, TxOutput};

use crate::block_builder::{
    build_coinbase, grind, witness_root, BlockPlace, CoinbaseSpec, REGTEST_BITS,
};
use crate::chain::{coinbase_value, BlockMaker, ChainState};
use crate::coin::Coin;
use crate::error::GeneratorError;
pub use crate::invalid_class::InvalidClass;
use crate::locks::{unmet_height_lock, SEQUENCE_LOCKTIME_ONLY};
use crate::planner::{missing_outpoint, PlannedOutput, PlannedTransaction, Shape};
use crate::script_kind::{ScriptKind, OP_CHECKSIG};
use crate::wallet::Wallet;

/// Weight invalid blocks fill toward before being broken (a few transactions).
const INVALID_BLOCK_TARGET_WEIGHT: usize = 24_000;
/// Serialised size the over-weight block is brought to (Core reads blocks up
/// to 4,000,000 bytes from files; its weight is then ~4,000,000 + 3 x stripped).
const OVER_WEIGHT_BLOCK_BYTES: usize = 3_999_000;
/// OP_CHECKSIGs in the too-many-sigops output: 20,001 x 4 = 80,004 > 80,000.
const SIGOPS_OUTPUT_CHECKSIGS: usize = 20_001;
/// Coins looked at to find one of a wanted kind.
const KIND_SEARCH_COINS_MAX: usize = 5_000;
/// The fee of the extra one-input, one-output spends.
const SINGLE_SPEND_FEE: Amount = Amount::from_sat_u32(1_000);
/// The value of the coin the missing-coin class pretends to spend.
const MISSING_COIN_VALUE: Amount = Amount::from_sat_u32(1_000_000);

/// A block being broken: the tip it builds on and its transactions.
struct Draft {
    state: ChainState,
    place: BlockPlace,
    planned: Vec<PlannedTransaction>,
}

/// Takes a spendable coin of `kind`, putting back the others looked at.
fn take_coin_of_kind(
    wallet: &mut Wallet,
    state_rng: &mut crate::random::DeterministicRng,
    kind: ScriptKind,
) -> Option<Coin> {
    let mut others = Vec::new();
    let mut found = None;
    for _ in 0..KIND_SEARCH_COINS_MAX {
        let Some(coin) = wallet.take(state_rng) else { break };
        if coin.kind == kind {
            found = Some(coin);
            break;
        }
        others.push(coin);
    }
    wallet.put_back(others);
    found
}

/// A one-input, one-output P2WPKH payment of `coin` minus a 1,000 satoshi fee.
fn single_spend(maker: &BlockMaker<'_>, coin: Coin, key_index: u32) -> PlannedTransaction {
    let script_pubkey = maker.signer.keys.script_pubkey(ScriptKind::P2wpkh, key_index).to_vec();
    let transaction = Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: coin.outpoint,
            script_sig: Vec::new(),
            sequence: u32::MAX,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput {
            value: coin.value.to_sat() - SINGLE_SPEND_FEE.to_sat(),
            script_pubkey,
        }],
        lock_time: 0,
    };
    PlannedTransaction {
        shape: Shape::Payment,
        transaction,
        spent: vec![coin],
        outputs: vec![PlannedOutput::Spendable { kind: ScriptKind::P2wpkh, key_index }],
        fee: SINGLE_SPEND_FEE,
        weight_estimate: 600,
        sigop_cost: 1,
    }
}

/// Inputs minus outputs of a (possibly broken) plan, zero when negative;
/// `None` outside the money range.
fn actual_fee(plan: &PlannedTransaction) -> Option<Amount> {
    // Sums of the generator's own values (a few hundred, each at most
    // MAX_MONEY, or twice that for the broken output): no i64 overflow.
    let inputs: i64 = plan.spent.iter().map(|coin| coin.value.to_sat()).sum();
    let outputs: i64 = plan.transaction.outputs.iter().map(|output| output.value).sum();
    Amount::from_sat((inputs - outputs).max(0)).ok()
}

fn first_plan(draft: &mut Draft) -> Result<&mut PlannedTransaction, GeneratorError> {
    draft
        .planned
        .first_mut()
        .ok_or(GeneratorError::InvalidOption("no coins to build an invalid block with"))
}

/// The coin a class spends in an extra transaction, if it adds one.
fn extra_spend_coin(
    class: InvalidClass,
    draft: &mut Draft,
    key_index: u32,
) -> Result<Option<Coin>, GeneratorError> {
    let coin = match class {
        InvalidClass::DoubleSpend => {
            *first_plan(draft)?.spent.first().ok_or(GeneratorError::InvalidOption("empty plan"))?
        }
        InvalidClass::MissingCoin => Coin {
            outpoint: missing_outpoint(&mut draft.state.rng),
            value: MISSING_COIN_VALUE,
            kind: ScriptKind::P2wpkh,
            key_index,
            height: draft.place.height.saturating_sub(1),
            is_coinbase: false,
        },
        InvalidClass::PrematureCoinbaseSpend => draft
            .state
            .wallet
            .youngest_maturing()
            .ok_or(GeneratorError::InvalidOption("no maturing coinbase"))?,
        InvalidClass::InvalidSignature => {
            take_coin_of_kind(&mut draft.state.wallet, &mut draft.state.rng, ScriptKind::P2wpkh)
                .ok_or(GeneratorError::InvalidOption("no P2WPKH coin to sign badly"))?
        }
        _ => return Ok(None),
    };
    Ok(Some(coin))
}

/// Changes transactions before signing.
fn break_transactions(
    maker: &BlockMaker<'_>,
    class: InvalidClass,
    draft: &mut Draft,
) -> Result<(), GeneratorError> {
    let height = draft.place.height;
    let key_index = draft.state.rng.below(maker.signer.keys.len() as u64) as u32;
    if let Some(coin) = extra_spend_coin(class, draft, key_index)? {
        draft.planned.push(single_spend(maker, coin, key_index));
        return Ok(());
    }
    match class {
        InvalidClass::OutputsExceedInputs => {
            let plan = first_plan(draft)?;
            let total_in: i64 = plan.spent.iter().map(|coin| coin.value.to_sat()).sum();
            if let Some(output) = plan.transaction.outputs.first_mut() {
                output.value += total_in;
            }
        }
        InvalidClass::TooManySigops => {
            let plan = first_plan(draft)?;
            plan.transaction.outputs.push(TxOutput {
                value: 0,
                script_pubkey: vec![OP_CHECKSIG; SIGOPS_OUTPUT_CHECKSIGS],
            });
            plan.outputs.push(PlannedOutput::OpReturn);
        }
        InvalidClass::NonFinal => {
            let plan = first_plan(draft)?;
            plan.transaction.lock_time = height;
            for input in &mut plan.transaction.inputs {
                input.sequence = SEQUENCE_LOCKTIME_ONLY;
            }
        }
        InvalidClass::SequenceLockUnmet => {
            let plan = first_plan(draft)?;
            let coin = *plan.spent.first().ok_or(GeneratorError::InvalidOption("empty plan"))?;
            plan.transaction.version = 2;
            if let Some(input) = plan.transaction.inputs.first_mut() {
                input.sequence = unmet_height_lock(height, &coin);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Flips the lowest bit of S in the DER signature at witness item 0 of the
/// last transaction's first input (S stays low and the encoding strict).
fn corrupt_last_signature(planned: &mut [PlannedTransaction]) {
    let signature = planned
        .last_mut()
        .and_then(|plan| plan.transaction.inputs.first_mut())
        .and_then(|input| input.witness.first_mut());
    if let Some(signature) = signature {
        let position = signature.len().saturating_sub(2);
        if let Some(byte) = signature.get_mut(position) {
            *byte ^= 1;
        }
    }
}

/// Signs the draft's transactions (the over-weight class's last one with an
/// annex of `annex_bytes`) and assembles the block with its coinbase.
fn sign_and_assemble(
    maker: &BlockMaker<'_>,
    class: InvalidClass,
    draft: &mut Draft,
    annex_bytes: usize,
) -> Result<Block, GeneratorError> {
    let height = draft.place.height;
    let annexed = class == InvalidClass::OverWeight;
    let count = draft.planned.len() - usize::from(annexed);
    maker.sign_all(&mut draft.planned[..count], height)?;
    if annexed {
        let mut annex = vec![0u8; annex_bytes.max(1)];
        annex[0] = ibex_script::taproot::ANNEX_TAG;
        if let Some(plan) = draft.planned.last_mut() {
            maker
                .signer
                .sign(&mut plan.transaction, &plan.spent, Some(&annex))
                .map_err(|_| GeneratorError::Signing { height, input: 0 })?;
        }
    }
    if class == InvalidClass::InvalidSignature {
        corrupt_last_signature(&mut draft.planned);
    }
    let txids: Vec<_> = draft.planned.iter().map(|plan| plan.transaction.txid()).collect();
    let wtxids: Vec<_> = draft.planned.iter().map(|plan| plan.transaction.wtxid()).collect();
    let fees: Option<Vec<Amount>> = draft.planned.iter().map(actual_fee).collect();
    let fees = fees.ok_or(GeneratorError::AmountOutOfRange { height })?;
    let mut root = witness_root(&wtxids);
    if class == InvalidClass::BadWitnessCommitment {
        root.0[0] ^= 1;
    }
    let (kind, key_index) = maker.coinbase_payout(&mut draft.state, height);
    let mut extra = [0u8; 8];
    draft.state.rng.fill(&mut extra);
    let mut spec = CoinbaseSpec {
        height,
        extra: extra.to_vec(),
        script_pubkey: maker.signer.keys.script_pubkey(kind, key_index).to_vec(),
        value: coinbase_value(maker.params, height, fees)?,
        witness_root: Some(root),
    };
    match class {
        InvalidClass::CoinbaseOverpays => {
            spec.value = spec
                .value
                .checked_add(Amount::from_sat_u32(1))
                .ok_or(GeneratorError::AmountOutOfRange { height })?;
        }
        InvalidClass::WrongBip34Height => spec.height += 1,
        _ => {}
    }
    let transactions = draft.planned.iter().map(|plan| plan.transaction.clone()).collect();
    maker.finish(draft.place, build_coinbase(&spec), transactions, &txids)
}

/// Breaks the assembled block's header or transaction list, re-grinding the
/// proof of work when the header changed.
fn break_block(class: InvalidClass, block: &mut Block, height: u32) -> Result<(), GeneratorError> {
    match class {
        InvalidClass::BadMerkleRoot => {
            block.header.merkle_root.0[0] ^= 1;
            grind(&mut block.header, height)?;
        }
        InvalidClass::DuplicateTransactions => {
            if let Some(last) = block.transactions.last().cloned() {
                block.transactions.push(last);
            }
        }
        _ => {}
    }
    Ok(())
}

/// The draft every class starts from: a few ordinary transactions on the tip.
fn draft(maker: &BlockMaker<'_>, tip: &ChainState, class: InvalidClass) -> Draft {
    let mut state = tip.clone();
    let small = BlockMaker { target_weight: INVALID_BLOCK_TARGET_WEIGHT, ..*maker };
    let mut planned = small.plan_block(&mut state);
    // CVE-2012-2459 needs an odd number of transactions, coinbase included.
    if class == InvalidClass::DuplicateTransactions && planned.len() % 2 == 1 {
        if let Some(plan) = planned.pop() {
            state.wallet.put_back(plan.spent);
        }
    }
    let height = state.height + 1;
    let mut time = state.next_time();
    if class == InvalidClass::TimeTooOld {
        time = state.tip_median_time_past() as u32;
    }
    let bits =
        if class == InvalidClass::WrongDifficultyBits { REGTEST_BITS - 1 } else { REGTEST_BITS };
    let place = BlockPlace { previous_block_hash: state.tip_hash, height, time, bits };
    Draft { state, place, planned }
}

/// Builds the invalid block of `class` on `tip` (which it leaves unchanged).
pub fn build_invalid_block(
    maker: &BlockMaker<'_>,
    tip: &ChainState,
    class: InvalidClass,
) -> Result<Block, GeneratorError> {
    let mut draft = draft(maker, tip, class);
    let height = draft.place.height;
    break_transactions(maker, class, &mut draft)?;
    if class == InvalidClass::OverWeight {
        let coin = take_coin_of_kind(
            &mut draft.state.wallet,
            &mut draft.state.rng,
            ScriptKind::P2trKeyPath,
        )
        .ok_or(GeneratorError::InvalidOption("no taproot coin for the annex"))?;
        let key_index = coin.key_index;
        draft.planned.push(single_spend(maker, coin, key_index));
        // Sign once with a guess, then size the annex to hit the target exactly.
        let first_guess = OVER_WEIGHT_BLOCK_BYTES - 100_000;
        let trial = sign_and_assemble(maker, class, &mut draft, first_guess)?;
        let annex_bytes = first_guess + OVER_WEIGHT_BLOCK_BYTES.saturating_sub(trial.size());
        let mut block = sign_and_assemble(maker, class, &mut draft, annex_bytes)?;
        break_block(class, &mut block, height)?;
        return Ok(block);
    }
    let mut block = sign_and_assemble(maker, class, &mut draft, 0)?;
    break_block(class, &mut block, height)?;
    Ok(block)
}
