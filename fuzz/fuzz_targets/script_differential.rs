//! Differential fuzzing of script verification: Ibex's `verify_input` and
//! Bitcoin Core's (libbitcoinkernel's `btck_script_pubkey_verify`) must give
//! the same valid/invalid verdict for every input, under the consensus flag
//! set the input selects. A disagreement fails an assertion.
//!
//! Input layout (all little-endian):
//! - byte 0: bits 0-6 pick the consensus flags (P2SH, DERSIG, NULLDUMMY,
//!   CHECKLOCKTIMEVERIFY, CHECKSEQUENCEVERIFY, WITNESS, TAPROOT; WITNESS
//!   implies P2SH, which Core's VerifyScript asserts); bit 7 picks the mode.
//! - bytes 1-8: the spent amount (satoshis, masked to 51 bits).
//! - a blob (2-byte length, then that many bytes, cut at the end): the spent
//!   scriptPubKey, the same for every input.
//! - mode 0 (bit 7 clear), built transaction: 4 bytes lock time, 4 bytes
//!   sequence, 1 byte version choice, then a scriptSig blob and witness item
//!   blobs until the input ends, for the one input of a one-output transaction.
//! - mode 1 (bit 7 set), raw transaction: the rest is a serialised transaction,
//!   compared on every input when both sides decode it.
#![no_main]

use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};
use ibex_script::{
    verify_input, PrecomputedTransactionData, SpentOutput, TransactionChecker, VerifyFlags,
};
use libfuzzer_sys::fuzz_target;

const CONSENSUS_FLAGS: [VerifyFlags; 7] = [
    VerifyFlags::P2SH,
    VerifyFlags::DERSIG,
    VerifyFlags::NULLDUMMY,
    VerifyFlags::CHECKLOCKTIMEVERIFY,
    VerifyFlags::CHECKSEQUENCEVERIFY,
    VerifyFlags::WITNESS,
    VerifyFlags::TAPROOT,
];

/// Reads the fuzzer's bytes front to back; short reads give what is left.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn bytes(&mut self, length: usize) -> &'a [u8] {
        let (head, tail) = self.0.split_at(length.min(self.0.len()));
        self.0 = tail;
        head
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let head = self.bytes(N);
        out[..head.len()].copy_from_slice(head);
        out
    }

    fn blob(&mut self) -> &'a [u8] {
        let length = u16::from_le_bytes(self.array());
        self.bytes(usize::from(length))
    }
}

fn flags_from(selector: u8) -> VerifyFlags {
    let mut flags = VerifyFlags::NONE;
    for (bit, flag) in CONSENSUS_FLAGS.iter().enumerate() {
        if selector & (1 << bit) != 0 {
            flags |= *flag;
        }
    }
    if flags.contains(VerifyFlags::WITNESS) {
        flags |= VerifyFlags::P2SH;
    }
    flags
}

/// A one-input, one-output transaction around the fuzzer's scriptSig and witness.
fn built_transaction(input: &mut Input<'_>) -> Vec<u8> {
    let lock_time = u32::from_le_bytes(input.array());
    let sequence = u32::from_le_bytes(input.array());
    let version = [1, 2, 3, -1][usize::from(input.array::<1>()[0] & 3)];
    let script_sig = input.blob().to_vec();
    let mut witness = Vec::new();
    while !input.0.is_empty() {
        witness.push(input.blob().to_vec());
    }
    let spending = TxInput {
        previous_output: OutPoint { txid: Txid([0x11; 32]), vout: 0 },
        script_sig,
        sequence,
        witness,
    };
    let output = TxOutput { value: 1_000, script_pubkey: vec![0x51] };
    Transaction { version, inputs: vec![spending], outputs: vec![output], lock_time }.encode()
}

fn compare(transaction_bytes: &[u8], script_pubkey: &[u8], amount: i64, flags: VerifyFlags) {
    let Ok(parsed) = ParsedTransaction::parse(transaction_bytes) else {
        return;
    };
    // Decoding is not under test here: skip what Core's deserialiser refuses.
    let Ok(kernel_transaction) = bitcoinkernel::Transaction::new(transaction_bytes) else {
        return;
    };
    let Ok(kernel_script) = bitcoinkernel::ScriptPubkey::new(script_pubkey) else {
        return;
    };
    let view = parsed.view();
    let input_count = view.inputs().len();
    let spent_output = SpentOutput { amount, script_pubkey };
    let spent = vec![spent_output; input_count];
    let Ok(precomputed) = PrecomputedTransactionData::new(&view, &spent) else {
        return;
    };
    let kernel_spent: Vec<bitcoinkernel::TxOut> =
        (0..input_count).map(|_| bitcoinkernel::TxOut::new(&kernel_script, amount)).collect();
    let Ok(kernel_precomputed) =
        bitcoinkernel::PrecomputedTransactionData::new(&kernel_transaction, &kernel_spent)
    else {
        return;
    };
    for (index, input) in view.inputs().iter().enumerate() {
        let Ok(checker) = TransactionChecker::new(view, index, spent_output, &precomputed) else {
            return;
        };
        let ours = verify_input(input.script_sig, script_pubkey, input.witness, flags, &checker);
        let theirs = bitcoinkernel::verify(
            &kernel_script,
            Some(amount),
            &kernel_transaction,
            index,
            Some(flags.0),
            &kernel_precomputed,
        );
        if let Err(bitcoinkernel::KernelError::ScriptVerify(error)) = &theirs {
            assert!(
                matches!(error, bitcoinkernel::ScriptVerifyError::Invalid),
                "kernel setup error {error:?} with flags {:#x}",
                flags.0
            );
        }
        assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "input {index}, flags {:#x}: ours {ours:?}, kernel {theirs:?}",
            flags.0
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let [selector] = input.array::<1>();
    let flags = flags_from(selector);
    let amount = (u64::from_le_bytes(input.array()) & ((1 << 51) - 1)) as i64;
    let script_pubkey = input.blob();
    let transaction_bytes =
        if selector & 0x80 == 0 { built_transaction(&mut input) } else { input.0.to_vec() };
    compare(&transaction_bytes, script_pubkey, amount, flags);
});
