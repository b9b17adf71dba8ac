//! Signet block solutions (BIP325; Core's `signet.cpp`): on a signet every
//! block but the genesis carries, in its coinbase's witness commitment
//! output, a solution to the network's challenge script, signed over the
//! block's contents.
//!
//! The check (Core's `CheckSignetBlockSolution`, run inside `CheckBlock`
//! after the proof of work and before the merkle root):
//! 1. Find the witness commitment output (the last one, as
//!    `GetWitnessCommitmentIndex`); a block without one fails.
//! 2. Walk that script's operations; the first push longer than four bytes
//!    that starts with [`SIGNET_HEADER`] holds the solution after the
//!    header. The script is rebuilt with that push cut down to the header
//!    alone (every other push re-encoded as Core's `CScript <<` writes it,
//!    and a truncated push ending the walk: what Core's loop does). No such
//!    push means an empty solution (so a challenge of `OP_TRUE` needs none).
//! 3. The solution is a serialised scriptSig then a witness stack, with
//!    nothing after them.
//! 4. The block's merkle root is recomputed with the rebuilt coinbase; the
//!    virtual `to_spend` transaction commits to version, previous block,
//!    that root and time; `to_sign` spends it with the solution, and its
//!    input must satisfy the challenge under P2SH, WITNESS, DERSIG and
//!    NULLDUMMY.
//!
//! Napkin math: one coinbase re-serialised and hashed, one merkle root over
//! the block's txids (already computed at parse: ~2 µs per 1,000
//! transactions) and one script check (~30-60 µs for a signature): under
//! 0.1 ms a block, signet only.

use ibex_primitives::encode::Reader;
use ibex_primitives::merkle::witness_commitment_index;
use ibex_primitives::{
    merkle_root, BlockHash, BlockView, Field, OutPoint, Params, Transaction, TxInput, TxOutput,
    Txid,
};
use ibex_script::opcodes::{OP_0, OP_PUSHDATA4, OP_RETURN};
use ibex_script::script::{push_data_into, Instructions};
use ibex_script::{
    PrecomputedTransactionData, ScriptError, SpentOutput, TransactionChecker, VerifyFlags,
};

/// The four bytes that open a signet solution's push (Core's
/// `SIGNET_HEADER`).
pub const SIGNET_HEADER: [u8; 4] = [0xec, 0xc7, 0xda, 0xa2];

/// The flags a signet solution is checked with (Core's
/// `BLOCK_SCRIPT_VERIFY_FLAGS` in `signet.cpp`): no taproot, so a witness
/// v1 challenge is satisfied by anything, as in Core.
pub fn signet_script_flags() -> VerifyFlags {
    VerifyFlags::P2SH | VerifyFlags::WITNESS | VerifyFlags::DERSIG | VerifyFlags::NULLDUMMY
}

/// Why a block's signet solution fails. All of them are Core's
/// `bad-signet-blksig`; the variants say which step failed, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignetError {
    /// The block has no transaction to carry a solution.
    #[error("no coinbase transaction")]
    NoCoinbase,
    /// The coinbase has no witness commitment output.
    #[error("no witness commitment in the coinbase")]
    NoWitnessCommitment,
    /// The solution is not a scriptSig and a witness stack, or has bytes
    /// after them.
    #[error("signet solution does not parse")]
    SolutionUnparsable,
    /// The solution does not satisfy the challenge.
    #[error("signet solution invalid: {0}")]
    Script(ScriptError),
}

/// A block's solution and the two virtual transactions it is checked
/// with (Core's `SignetTxs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignetTransactions {
    /// Pays the challenge; its scriptSig commits to the block.
    pub to_spend: Transaction,
    /// Spends `to_spend` with the block's solution.
    pub to_sign: Transaction,
}

impl SignetTransactions {
    /// Core's `SignetTxs::Create`: the transactions for `block` (whose
    /// transaction ids are `txids`) under `challenge`. A block whose
    /// commitment holds no solution gets an empty scriptSig and witness,
    /// which is also what a signer starts from.
    pub fn create(
        block: &BlockView<'_>,
        txids: &[Txid],
        challenge: &[u8],
    ) -> Result<SignetTransactions, SignetError> {
        let coinbase = block.transaction(0).ok_or(SignetError::NoCoinbase)?;
        let commitment_index =
            witness_commitment_index(block).ok_or(SignetError::NoWitnessCommitment)?;
        let mut modified_coinbase = coinbase.to_owned();
        let commitment = &mut modified_coinbase.outputs[commitment_index].script_pubkey;
        let (script_sig, witness) = match take_solution(commitment) {
            Some((rebuilt, solution)) => {
                *commitment = rebuilt;
                parse_solution(&solution)?
            }
            None => (Vec::new(), Vec::new()),
        };
        let mut leaves = Vec::with_capacity(txids.len());
        leaves.push(modified_coinbase.txid().0);
        leaves.extend(txids.iter().skip(1).map(|txid| txid.0));
        let signet_merkle_root = merkle_root(leaves).root;

        let header = block.header();
        let mut block_data = Vec::with_capacity(72);
        block_data.extend_from_slice(&header.version.to_le_bytes());
        block_data.extend_from_slice(&header.previous_block_hash.0);
        block_data.extend_from_slice(&signet_merkle_root.0);
        block_data.extend_from_slice(&header.time.to_le_bytes());
        let mut to_spend_script_sig = vec![OP_0];
        push_data_into(&block_data, &mut to_spend_script_sig);
        let to_spend = virtual_transaction(
            TxInput {
                previous_output: OutPoint::NULL,
                script_sig: to_spend_script_sig,
                ..TxInput::default()
            },
            challenge.to_vec(),
        );
        let spent = OutPoint { txid: to_spend.txid(), vout: 0 };
        let to_sign = virtual_transaction(
            TxInput { previous_output: spent, script_sig, sequence: 0, witness },
            vec![OP_RETURN],
        );
        Ok(SignetTransactions { to_spend, to_sign })
    }

    /// Whether `to_sign`'s input satisfies the challenge (Core's
    /// `VerifyScript` call in `CheckSignetBlockSolution`).
    pub fn verify(&self) -> Result<(), SignetError> {
        let challenge = &self.to_spend.outputs[0].script_pubkey;
        let bytes = self.to_sign.encode();
        let parsed = ibex_primitives::ParsedTransaction::parse(&bytes)
            .map_err(|_| SignetError::SolutionUnparsable)?;
        let view = parsed.view();
        let spent = SpentOutput { amount: 0, script_pubkey: challenge };
        let precomputed = PrecomputedTransactionData::new(&view, &[spent])
            .map_err(|_| SignetError::SolutionUnparsable)?;
        let checker = TransactionChecker::new(view, 0, spent, &precomputed)
            .map_err(|_| SignetError::SolutionUnparsable)?;
        let input = &self.to_sign.inputs[0];
        let witness: Vec<&[u8]> = input.witness.iter().map(Vec::as_slice).collect();
        ibex_script::verify_script(
            &input.script_sig,
            challenge,
            &witness,
            signet_script_flags(),
            &checker,
        )
        .map_err(SignetError::Script)
    }
}

/// Core's `CheckSignetBlockSolution`: `Ok` off signet and for the genesis
/// block; otherwise the block's solution must satisfy the network's
/// challenge. `txids` are the block's transaction ids and `block_hash` its
/// hash, both computed once at parse.
pub fn check_signet_block_solution(
    block: &BlockView<'_>,
    txids: &[Txid],
    block_hash: &BlockHash,
    params: &Params,
) -> Result<(), SignetError> {
    let Some(challenge) = &params.signet_challenge else { return Ok(()) };
    if *block_hash == params.genesis_hash {
        return Ok(());
    }
    SignetTransactions::create(block, txids, challenge)?.verify()
}

/// The bytes a signer appends, after [`SIGNET_HEADER`], in the commitment
/// output's push: the scriptSig and the witness stack, serialised.
pub fn encode_signet_solution(script_sig: &[u8], witness: &[Vec<u8>]) -> Vec<u8> {
    let mut solution = Vec::new();
    ibex_primitives::encode::write_var_bytes(&mut solution, script_sig);
    ibex_primitives::encode::write_compact_size(&mut solution, witness.len() as u64);
    for item in witness {
        ibex_primitives::encode::write_var_bytes(&mut solution, item);
    }
    solution
}

/// Version 0, lock time 0, one input with sequence 0, one output of 0
/// satoshis: the shape of both virtual transactions.
fn virtual_transaction(mut input: TxInput, script_pubkey: Vec<u8>) -> Transaction {
    input.sequence = 0;
    Transaction {
        version: 0,
        inputs: vec![input],
        outputs: vec![TxOutput { value: 0, script_pubkey }],
        lock_time: 0,
    }
}

/// Core's `FetchAndClearCommitmentSection`: the script rebuilt with the
/// solution cut from its first push that holds [`SIGNET_HEADER`] and more,
/// and that solution; `None` when no push holds one (the script is then
/// left as it is).
fn take_solution(script: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut rebuilt = Vec::with_capacity(script.len());
    let mut solution = None;
    for instruction in Instructions::new(script) {
        // A truncated push ends Core's `GetOp` loop: the bytes from it on
        // are not in the rebuilt script.
        let Ok(instruction) = instruction else { break };
        let data = instruction.data;
        if data.is_empty() {
            // Opcodes, OP_0 and empty PUSHDATAn alike are written back as
            // their opcode byte alone (`replacement << opcode`).
            rebuilt.push(instruction.opcode);
            continue;
        }
        debug_assert!(instruction.opcode <= OP_PUSHDATA4);
        if solution.is_none()
            && data.len() > SIGNET_HEADER.len()
            && data.starts_with(&SIGNET_HEADER)
        {
            solution = Some(data[SIGNET_HEADER.len()..].to_vec());
            push_data_into(&SIGNET_HEADER, &mut rebuilt);
        } else {
            push_data_into(data, &mut rebuilt);
        }
    }
    solution.map(|solution| (rebuilt, solution))
}

/// The solution's scriptSig and witness stack; every byte must be used.
fn parse_solution(solution: &[u8]) -> Result<(Vec<u8>, Vec<Vec<u8>>), SignetError> {
    let mut reader = Reader::new(solution);
    let parse = |reader: &mut Reader<'_>| -> Result<_, ibex_primitives::DecodeError> {
        let script_sig = reader.read_var_bytes()?.to_vec();
        let count = reader.read_count(Field::WitnessItems, 1)?;
        let mut witness = Vec::with_capacity(count);
        for _ in 0..count {
            witness.push(reader.read_var_bytes()?.to_vec());
        }
        reader.finish()?;
        Ok((script_sig, witness))
    };
    parse(&mut reader).map_err(|_| SignetError::SolutionUnparsable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_solution_push_is_cut_to_the_header_and_other_pushes_are_reencoded() {
        // OP_RETURN, a PUSHDATA1 of 3 bytes (re-encoded as a direct push),
        // the solution push, a later signet push (left alone: only the
        // first counts), then OP_1.
        let mut script = vec![OP_RETURN, 0x4c, 3, 1, 2, 3];
        let first = [&SIGNET_HEADER[..], &[9, 9]].concat();
        push_data_into(&first, &mut script);
        let second = [&SIGNET_HEADER[..], &[7]].concat();
        push_data_into(&second, &mut script);
        script.push(0x51);
        let (rebuilt, solution) = take_solution(&script).expect("a solution push");
        assert_eq!(solution, vec![9, 9]);
        let mut expected = vec![OP_RETURN, 3, 1, 2, 3, 4];
        expected.extend_from_slice(&SIGNET_HEADER);
        push_data_into(&second, &mut expected);
        expected.push(0x51);
        assert_eq!(rebuilt, expected);
    }

    #[test]
    fn a_header_alone_or_a_truncated_push_is_no_solution() {
        let mut script = vec![OP_RETURN];
        push_data_into(&SIGNET_HEADER, &mut script);
        assert_eq!(take_solution(&script), None, "the header with no data after it");
        // The solution push comes first; a truncated push after it drops
        // the tail from the rebuilt script.
        let mut script = vec![OP_RETURN];
        push_data_into(&[&SIGNET_HEADER[..], &[1]].concat(), &mut script);
        script.extend_from_slice(&[0x4d, 0xff]);
        let (rebuilt, solution) = take_solution(&script).expect("a solution push");
        assert_eq!(solution, vec![1]);
        assert_eq!(rebuilt, [&[OP_RETURN, 4][..], &SIGNET_HEADER].concat());
    }

    #[test]
    fn solutions_parse_exactly() {
        let witness = vec![vec![1, 2], vec![]];
        let encoded = encode_signet_solution(&[0x51], &witness);
        assert_eq!(parse_solution(&encoded), Ok((vec![0x51], witness)));
        let mut trailing = encoded.clone();
        trailing.push(0);
        assert_eq!(parse_solution(&trailing), Err(SignetError::SolutionUnparsable));
        assert_eq!(
            parse_solution(&encoded[..encoded.len() - 1]),
            Err(SignetError::SolutionUnparsable)
        );
        // A non-canonical compact size, as Core's stream refuses it.
        assert_eq!(
            parse_solution(&[0xfd, 0x01, 0x00, 0x51, 0x00]),
            Err(SignetError::SolutionUnparsable)
        );
    }
}
