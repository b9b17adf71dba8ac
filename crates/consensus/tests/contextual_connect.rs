//! The ConnectBlock side of the contextual rules: Core's
//! `GetBlockScriptFlags` (heights and the historical exception blocks),
//! `GetTransactionSigOpCost` (legacy, P2SH, witness) and the coinbase
//! amount check, plus the script failure reject reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::limits::SEQUENCE_FINAL;
use ibex_consensus::{
    block_script_flags, check_coinbase_amount, transaction_sigop_cost, BlockError,
};
use ibex_primitives::params::{BuriedDeployment, RegtestOptions};
use ibex_primitives::{
    Amount, Block, BlockHash, BlockView, Hash256, Header, Height, OutPoint, Params,
    ParsedTransaction, Transaction, TxInput, TxOutput, Txid, COIN, MAX_MONEY,
};
use ibex_script::{ScriptError, VerifyFlags};

fn flags(list: &[VerifyFlags]) -> VerifyFlags {
    list.iter().fold(VerifyFlags::NONE, |all, flag| all.union(*flag))
}

const BASE: [VerifyFlags; 3] = [VerifyFlags::P2SH, VerifyFlags::WITNESS, VerifyFlags::TAPROOT];

#[test]
fn regtest_flags_by_activation_height() {
    let any_hash = BlockHash([5; 32]);
    assert_eq!(
        block_script_flags(&Params::regtest(), Height::new(1), &any_hash),
        VerifyFlags::CONSENSUS
    );
    // Regtest activates segwit at 0 and the others at 1.
    let at_genesis = flags(&[BASE[0], BASE[1], BASE[2], VerifyFlags::NULLDUMMY]);
    assert_eq!(block_script_flags(&Params::regtest(), Height::new(0), &any_hash), at_genesis);
    let params = RegtestOptions::new()
        .activation_height(BuriedDeployment::StrictDerSignatures, 10)
        .activation_height(BuriedDeployment::CheckLockTimeVerify, 20)
        .activation_height(BuriedDeployment::CheckSequenceVerify, 30)
        .activation_height(BuriedDeployment::Segwit, 40)
        .build();
    let steps = [
        (9, flags(&BASE)),
        (10, flags(&[flags(&BASE), VerifyFlags::DERSIG])),
        (20, flags(&[flags(&BASE), VerifyFlags::DERSIG, VerifyFlags::CHECKLOCKTIMEVERIFY])),
        (29, flags(&[flags(&BASE), VerifyFlags::DERSIG, VerifyFlags::CHECKLOCKTIMEVERIFY])),
        (
            30,
            flags(&[
                flags(&BASE),
                VerifyFlags::DERSIG,
                VerifyFlags::CHECKLOCKTIMEVERIFY,
                VerifyFlags::CHECKSEQUENCEVERIFY,
            ]),
        ),
        (40, VerifyFlags::CONSENSUS),
    ];
    for (height, expected) in steps {
        assert_eq!(
            block_script_flags(&params, Height::new(height), &any_hash),
            expected,
            "height {height}"
        );
    }
}

#[test]
fn mainnet_exception_blocks() {
    let main = Params::main();
    let (bip16_breaker, _) = main.script_flag_exceptions[0];
    let (taproot_breaker, _) = main.script_flag_exceptions[1];
    assert_eq!(
        bip16_breaker.to_hex(),
        "00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22"
    );
    // Block 170,060: no flags at all (no buried deployment active yet).
    assert_eq!(block_script_flags(&main, Height::new(170_060), &bip16_breaker), VerifyFlags::NONE);
    // Any other block there: P2SH, witness and taproot from genesis.
    assert_eq!(block_script_flags(&main, Height::new(170_060), &BlockHash([5; 32])), flags(&BASE));
    // Block 692,261: P2SH and witness, no taproot, with every buried flag.
    let without_taproot = flags(&[
        VerifyFlags::P2SH,
        VerifyFlags::WITNESS,
        VerifyFlags::DERSIG,
        VerifyFlags::CHECKLOCKTIMEVERIFY,
        VerifyFlags::CHECKSEQUENCEVERIFY,
        VerifyFlags::NULLDUMMY,
    ]);
    assert_eq!(block_script_flags(&main, Height::new(692_261), &taproot_breaker), without_taproot);
    assert_eq!(
        block_script_flags(&main, Height::new(692_261), &BlockHash([5; 32])),
        VerifyFlags::CONSENSUS
    );
    // Mainnet's BIP66 boundary.
    let bip66 = main.bip66_height;
    assert_eq!(
        block_script_flags(&main, Height::new(bip66 - 1), &BlockHash([5; 32])),
        flags(&BASE)
    );
    assert_eq!(
        block_script_flags(&main, Height::new(bip66), &BlockHash([5; 32])),
        flags(&[flags(&BASE), VerifyFlags::DERSIG])
    );
    // Testnet3's BIP16 breaker is an exception there only.
    let testnet = Params::testnet3();
    let (testnet_breaker, _) = testnet.script_flag_exceptions[0];
    assert_eq!(block_script_flags(&testnet, Height::new(100), &testnet_breaker), VerifyFlags::NONE);
    assert_eq!(block_script_flags(&main, Height::new(100), &testnet_breaker), flags(&BASE));
}

const P2SH_FLAGS: VerifyFlags = VerifyFlags::P2SH;
const ALL: VerifyFlags = VerifyFlags::CONSENSUS;

fn p2sh_script() -> Vec<u8> {
    let mut script = vec![0xa9, 0x14];
    script.extend_from_slice(&[0x11; 20]);
    script.push(0x87);
    script
}

/// A push of `data` (up to 255 bytes).
fn push(data: &[u8]) -> Vec<u8> {
    let mut script =
        if data.len() < 0x4c { vec![data.len() as u8] } else { vec![0x4c, data.len() as u8] };
    script.extend_from_slice(data);
    script
}

fn input(script_sig: Vec<u8>, witness: Vec<Vec<u8>>) -> TxInput {
    TxInput {
        previous_output: OutPoint { txid: Txid([1; 32]), vout: 0 },
        script_sig,
        sequence: SEQUENCE_FINAL,
        witness,
    }
}

fn cost(inputs: Vec<TxInput>, output_script: Vec<u8>, spent: &[&[u8]], flags: VerifyFlags) -> u64 {
    let transaction = Transaction {
        version: 2,
        inputs,
        outputs: vec![TxOutput { value: 1, script_pubkey: output_script }],
        lock_time: 0,
    };
    let bytes = transaction.encode();
    transaction_sigop_cost(&ParsedTransaction::parse(&bytes).unwrap().view(), spent, flags)
}

#[test]
fn legacy_sigops_count_four_times() {
    let plain = input(push(&[0x30; 71]), vec![]);
    // OP_CHECKSIG OP_CHECKSIG: 2 x 4.
    assert_eq!(cost(vec![plain.clone()], vec![0xac, 0xac], &[&[0x51]], ALL), 8);
    // A bare CHECKMULTISIG counts 20 (the inaccurate count), even after OP_2.
    assert_eq!(cost(vec![plain.clone()], vec![0x52, 0xae], &[&[0x51]], ALL), 80);
    // The spent P2PKH script's CHECKSIG was counted when it was created.
    let p2pkh = [[0x76, 0xa9, 0x14].as_slice(), &[0x22; 20], &[0x88, 0xac]].concat();
    assert_eq!(cost(vec![plain], vec![0x51], &[&p2pkh], ALL), 0);
}

#[test]
fn p2sh_redeem_scripts_count_accurately_with_the_p2sh_flag() {
    // 2-of-3 multisig redeem script: OP_2 <key> <key> <key> OP_3 OP_CHECKMULTISIG.
    let mut redeem = vec![0x52];
    for _ in 0..3 {
        redeem.extend(push(&[0x02; 33]));
    }
    redeem.extend([0x53, 0xae]);
    let script_sig = [vec![0x00], push(&[0x30; 71]), push(&[0x30; 71]), push(&redeem)].concat();
    let p2sh = p2sh_script();
    let spend = || vec![input(script_sig.clone(), vec![])];
    assert_eq!(cost(spend(), vec![0x51], &[&p2sh], ALL), 3 * 4);
    assert_eq!(cost(spend(), vec![0x51], &[&p2sh], P2SH_FLAGS), 3 * 4);
    assert_eq!(cost(spend(), vec![0x51], &[&p2sh], VerifyFlags::WITNESS), 0);
    // A scriptSig that is not push-only counts nothing for P2SH (OP_NOP is
    // not a push; its own legacy count is zero).
    let not_push_only = [script_sig.clone(), vec![0x61]].concat();
    assert_eq!(cost(vec![input(not_push_only, vec![])], vec![0x51], &[&p2sh], ALL), 0);
}

#[test]
fn witness_sigops_count_once() {
    let signature_and_key = vec![vec![0x30; 71], vec![0x02; 33]];
    let p2wpkh = [[0x00, 0x14].as_slice(), &[0x33; 20]].concat();
    let spend_p2wpkh = || vec![input(vec![], signature_and_key.clone())];
    assert_eq!(cost(spend_p2wpkh(), vec![0x51], &[&p2wpkh], ALL), 1);
    assert_eq!(cost(spend_p2wpkh(), vec![0x51], &[&p2wpkh], P2SH_FLAGS), 0);
    // P2WSH: the witness script's accurate count (1 + 1 + 2).
    let p2wsh = [[0x00, 0x20].as_slice(), &[0x44; 32]].concat();
    let witness_script = vec![0xac, 0xac, 0x52, 0xae];
    let p2wsh_spend = vec![input(vec![], vec![vec![], witness_script])];
    assert_eq!(cost(p2wsh_spend, vec![0x51], &[&p2wsh], ALL), 4);
    // P2SH-P2WPKH: the redeem script is the witness program; counted with
    // the witness flag alone.
    let nested_sig = push(&p2wpkh);
    let nested = || vec![input(nested_sig.clone(), signature_and_key.clone())];
    assert_eq!(cost(nested(), vec![0x51], &[&p2sh_script()], ALL), 1);
    assert_eq!(cost(nested(), vec![0x51], &[&p2sh_script()], VerifyFlags::WITNESS), 1);
    assert_eq!(cost(nested(), vec![0x51], &[&p2sh_script()], P2SH_FLAGS), 0);
    // Taproot spends count nothing here (tapscript has its own budget).
    let p2tr = [[0x51, 0x20].as_slice(), &[0x55; 32]].concat();
    assert_eq!(cost(vec![input(vec![], vec![vec![0x40; 64]])], vec![0x51], &[&p2tr], ALL), 0);
    // Inputs add up, with the outputs' legacy count.
    let two = vec![
        input(vec![], signature_and_key.clone()),
        input(nested_sig.clone(), signature_and_key.clone()),
    ];
    assert_eq!(cost(two, vec![0xac], &[&p2wpkh, &p2sh_script()], ALL), 4 + 1 + 1);
}

#[test]
fn coinbase_counts_legacy_only() {
    let coinbase = input(vec![0x51, 0x51], vec![vec![0; 32]]);
    let mut coinbase_input = coinbase;
    coinbase_input.previous_output = OutPoint::NULL;
    // Spent scripts are not read for a coinbase, whatever is passed.
    let p2sh = p2sh_script();
    assert_eq!(cost(vec![coinbase_input.clone()], vec![0xac, 0xac], &[&p2sh], ALL), 8);
    assert_eq!(cost(vec![coinbase_input], vec![0xac, 0xac], &[], ALL), 8);
}

fn block_paying(values: &[i64]) -> Vec<u8> {
    let coinbase = Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig: vec![0x51, 0x51],
            sequence: SEQUENCE_FINAL,
            witness: vec![],
        }],
        outputs: values
            .iter()
            .map(|&value| TxOutput { value, script_pubkey: vec![0x51] })
            .collect(),
        lock_time: 0,
    };
    let header = Header {
        version: 4,
        previous_block_hash: BlockHash([3; 32]),
        merkle_root: Hash256::ZERO,
        time: 0,
        bits: 0x207f_ffff,
        nonce: 0,
    };
    Block { header, transactions: vec![coinbase] }.encode()
}

fn amount(satoshis: i64) -> Amount {
    Amount::from_sat(satoshis).unwrap()
}

fn amount_check(values: &[i64], fees: i64, height: u32, params: &Params) -> Result<(), BlockError> {
    let bytes = block_paying(values);
    let height = Height::new(height);
    check_coinbase_amount(&BlockView::parse(&bytes).unwrap(), amount(fees), height, params)
}

#[test]
fn coinbase_pays_at_most_subsidy_plus_fees() {
    let regtest = Params::regtest();
    // Regtest halves every 150 blocks: 25 BTC at 150.
    let limit = 25 * COIN + 1_000;
    assert_eq!(amount_check(&[limit - 400, 400], 1_000, 150, &regtest), Ok(()));
    assert_eq!(
        amount_check(&[limit - 400, 401], 1_000, 150, &regtest),
        Err(BlockError::CoinbaseAmount { value: amount(limit + 1), limit: amount(limit) })
    );
    assert_eq!(
        amount_check(&[limit + 1], 1_000, 150, &regtest).unwrap_err().reject_reason(),
        "bad-cb-amount"
    );
    assert_eq!(amount_check(&[50 * COIN], 0, 149, &regtest), Ok(()));
    assert!(amount_check(&[50 * COIN], 0, 150, &regtest).is_err());
    let main = Params::main();
    assert_eq!(amount_check(&[50 * COIN], 0, 209_999, &main), Ok(()));
    assert_eq!(
        amount_check(&[50 * COIN], 0, 210_000, &main),
        Err(BlockError::CoinbaseAmount { value: amount(50 * COIN), limit: amount(25 * COIN) })
    );
    // Paying less than allowed is fine (the difference is lost).
    assert_eq!(amount_check(&[0], 5_000, 210_000, &main), Ok(()));
    // Fees plus subsidy above MAX_MONEY: Core's unchecked sum is above any
    // coinbase's value out, so even MAX_MONEY passes.
    assert_eq!(amount_check(&[MAX_MONEY], MAX_MONEY, 0, &main), Ok(()));
    assert_eq!(amount_check(&[MAX_MONEY], MAX_MONEY - 50 * COIN, 0, &main), Ok(()));
    assert_eq!(
        amount_check(&[MAX_MONEY], MAX_MONEY - 50 * COIN - 1, 0, &main),
        Err(BlockError::CoinbaseAmount { value: Amount::MAX, limit: amount(MAX_MONEY - 1) })
    );
}

#[test]
fn a_coinbase_that_skipped_check_transaction_fails_with_its_reason() {
    let main = Params::main();
    let reason = |values: &[i64]| amount_check(values, 0, 0, &main).unwrap_err().reject_reason();
    assert_eq!(reason(&[-1]), "bad-txns-vout-negative");
    assert_eq!(reason(&[MAX_MONEY + 1]), "bad-txns-vout-toolarge");
    assert_eq!(reason(&[MAX_MONEY, 1]), "bad-txns-txouttotal-toolarge");
}

#[test]
fn script_failures_read_as_core_writes_them() {
    let error =
        BlockError::Script { index: 3, txid: Txid([8; 32]), input: 1, error: ScriptError::Verify };
    assert_eq!(
        error.reject_reason(),
        "block-script-verify-flag-failed (Script failed an OP_VERIFY operation)"
    );
    assert!(error.to_string().contains("input 1"));
    let schnorr = BlockError::Script {
        index: 0,
        txid: Txid([8; 32]),
        input: 0,
        error: ScriptError::SchnorrSig,
    };
    assert_eq!(
        schnorr.reject_reason(),
        "block-script-verify-flag-failed (Invalid Schnorr signature)"
    );
}

#[test]
fn failure_kinds_follow_cores_block_validation_result() {
    use ibex_consensus::BlockFailureKind::*;
    use ibex_primitives::WitnessCommitmentError;
    let cases = [
        (BlockError::HighHash, InvalidHeader),
        (BlockError::BadVersion { version: 1 }, InvalidHeader),
        (BlockError::TimeTooOld { time: 1, median_time_past: 1 }, InvalidHeader),
        (BlockError::TimeTooNew { time: 2, limit: 1 }, TimeFuture),
        (BlockError::BadMerkleRoot, Mutated),
        (BlockError::DuplicateTransactions, Mutated),
        (BlockError::WitnessCommitment(WitnessCommitmentError::UnexpectedWitness), Mutated),
        (BlockError::BadWeight { weight: 4_000_001 }, Consensus),
        (BlockError::BadCoinbaseHeight, Consensus),
        (BlockError::CoinbaseAmount { value: amount(2), limit: amount(1) }, Consensus),
    ];
    for (error, kind) in cases {
        assert_eq!(error.kind(), kind, "{error}");
    }
}
