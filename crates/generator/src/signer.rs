//! Signs every input of planned transactions with real keys: low-S ECDSA
//! for legacy and segwit v0, BIP340 Schnorr for taproot key and script paths,
//! with nonces from the seeded [`NoncePool`] (libsecp256k1's RFC6979 and
//! BIP340 signing as fallback). Deterministic whatever the thread count.
//!
//! Napkin math: libsecp256k1 signing is ~25 µs per signature, and an input is
//! ~190 bytes of chain, so one core would sign only ~7.5 MB/s; pooled nonces
//! cut a signature to ~3 µs of scalar arithmetic plus a few hundred bytes of
//! sighash hashing, and transactions of a block are signed in parallel (see
//! [`crate::chain`]).

use ibex_primitives::{ParsedTransaction, Transaction};
use ibex_script::checker::{ExecutionData, SigVersion};
use ibex_script::precomputed::{Bip143Hashes, Bip341Hashes};
use ibex_script::script::push_data_into;
use ibex_script::sighash::legacy::legacy_sighash;
use ibex_script::sighash::segwit_v0::segwit_v0_sighash;
use ibex_script::sighash::taproot::{annex_hash, taproot_sighash, TaprootInput};
use ibex_script::sighash::SIGHASH_ALL;
use ibex_script::taproot::tapleaf_hash;
use ibex_script::taproot::TAPROOT_LEAF_TAPSCRIPT;
use ibex_script::{PrecomputedTransactionData, SpentOutput};
use secp256k1::{Keypair, Message, Secp256k1, SecretKey};

use crate::coin::Coin;
use crate::keys::KeyPool;
use crate::nonce_pool::NoncePool;
use crate::script_kind::{ScriptKind, OP_0};

/// Why an input could not be signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigningError {
    /// The unsigned transaction did not decode back.
    #[error("unsigned transaction does not decode")]
    Decode,
    /// Sighash data could not be computed for input `input`.
    #[error("no sighash for input {input}")]
    Sighash {
        /// The input's index.
        input: usize,
    },
}

/// The keys and the libsecp256k1 context, shared by all signing threads.
#[derive(Debug, Clone, Copy)]
pub struct Signer<'a> {
    /// The key pool.
    pub keys: &'a KeyPool,
    /// A signing context.
    pub secp: &'a Secp256k1<secp256k1::All>,
    /// Precomputed nonces (see [`crate::nonce_pool`]).
    pub nonces: &'a NoncePool,
}

/// A signed input's unlocking data.
struct Unlock {
    script_sig: Vec<u8>,
    witness: Vec<Vec<u8>>,
}

/// Data shared by every input of one transaction.
struct SighashData<'a> {
    bip143: Option<&'a Bip143Hashes>,
    bip341: Option<&'a Bip341Hashes>,
    spent_outputs: &'a [SpentOutput<'a>],
}

impl Signer<'_> {
    fn ecdsa(&self, sighash: [u8; 32], secret_key: &SecretKey) -> Vec<u8> {
        let signature = self
            .nonces
            .sign_ecdsa(&sighash, secret_key)
            .unwrap_or_else(|| self.secp.sign_ecdsa(Message::from_digest(sighash), secret_key));
        let mut bytes = signature.serialize_der().to_vec();
        bytes.push(SIGHASH_ALL);
        bytes
    }

    fn schnorr(&self, sighash: [u8; 32], keypair: &Keypair) -> Vec<u8> {
        match self.nonces.sign_schnorr(&sighash, keypair) {
            Some(signature) => signature.to_vec(),
            None => self.secp.sign_schnorr_no_aux_rand(&sighash, keypair).to_byte_array().to_vec(),
        }
    }

    /// Signs every input of `transaction`, which spends `spent` (one coin per
    /// input). `annex`, when given, is attached to taproot key-path inputs.
    pub fn sign(
        &self,
        transaction: &mut Transaction,
        spent: &[Coin],
        annex: Option<&[u8]>,
    ) -> Result<(), SigningError> {
        let unsigned = transaction.encode_without_witness();
        let parsed = ParsedTransaction::parse(&unsigned).map_err(|_| SigningError::Decode)?;
        let view = parsed.view();
        let spent_outputs: Vec<SpentOutput<'_>> =
            spent.iter().map(|coin| SpentOutput::from(coin.spent_coin(self.keys))).collect();
        let precomputed = PrecomputedTransactionData::with_force(&view, &spent_outputs, true)
            .map_err(|_| SigningError::Decode)?;
        let data = SighashData {
            bip143: precomputed.bip143(),
            bip341: precomputed.bip341(),
            spent_outputs: &spent_outputs,
        };
        let mut unlocks = Vec::with_capacity(spent.len());
        for (index, coin) in spent.iter().enumerate() {
            unlocks.push(self.sign_input(&view, index, coin, &data, annex)?);
        }
        for (input, unlock) in transaction.inputs.iter_mut().zip(unlocks) {
            input.script_sig = unlock.script_sig;
            input.witness = unlock.witness;
        }
        Ok(())
    }

    fn sign_input(
        &self,
        view: &ibex_primitives::TransactionView<'_>,
        index: usize,
        coin: &Coin,
        data: &SighashData<'_>,
        annex: Option<&[u8]>,
    ) -> Result<Unlock, SigningError> {
        let entry = self.keys.entry(coin.key_index);
        let amount = coin.value.to_sat();
        let missing = SigningError::Sighash { input: index };
        let segwit_v0 = |script_code: &[u8]| -> Result<[u8; 32], SigningError> {
            let hashes = data.bip143.ok_or(missing)?;
            Ok(segwit_v0_sighash(view, index, script_code, amount, i32::from(SIGHASH_ALL), hashes))
        };
        let unlock = match coin.kind {
            ScriptKind::P2pk => {
                let script_code = &entry.script_pubkeys[ScriptKind::P2pk.index()];
                let sighash = legacy_sighash(view, index, script_code, i32::from(SIGHASH_ALL));
                let mut script_sig = Vec::with_capacity(74);
                push_data_into(&self.ecdsa(sighash, &entry.secret_key), &mut script_sig);
                Unlock { script_sig, witness: Vec::new() }
            }
            ScriptKind::P2pkh => {
                let script_code = &entry.script_pubkeys[ScriptKind::P2pkh.index()];
                let sighash = legacy_sighash(view, index, script_code, i32::from(SIGHASH_ALL));
                let mut script_sig = Vec::with_capacity(108);
                push_data_into(&self.ecdsa(sighash, &entry.secret_key), &mut script_sig);
                push_data_into(&entry.public_key_compressed, &mut script_sig);
                Unlock { script_sig, witness: Vec::new() }
            }
            ScriptKind::P2shMultisig | ScriptKind::BareMultisig => {
                self.sign_legacy_multisig(view, index, coin)
            }
            ScriptKind::P2shP2wpkh | ScriptKind::P2wpkh => {
                // BIP143's script code for a key hash is the P2PKH script of
                // the same key; the P2SH redeem script is the P2WPKH program.
                let script_code = &entry.script_pubkeys[ScriptKind::P2pkh.index()];
                let sighash = segwit_v0(script_code)?;
                let signature = self.ecdsa(sighash, &entry.secret_key);
                let witness = vec![signature, entry.public_key_compressed.to_vec()];
                let mut script_sig = Vec::new();
                if coin.kind == ScriptKind::P2shP2wpkh {
                    let program = &entry.script_pubkeys[ScriptKind::P2wpkh.index()];
                    push_data_into(program, &mut script_sig);
                }
                Unlock { script_sig, witness }
            }
            ScriptKind::P2wshMultisig => {
                let script = &entry.multisig_script;
                let sighash = segwit_v0(script)?;
                let second = self.keys.following(coin.key_index, 1);
                let witness = vec![
                    Vec::new(),
                    self.ecdsa(sighash, &entry.secret_key),
                    self.ecdsa(sighash, &second.secret_key),
                    script.clone(),
                ];
                Unlock { script_sig: Vec::new(), witness }
            }
            ScriptKind::P2trKeyPath => self.sign_key_path(view, index, coin, data, annex)?,
            ScriptKind::P2trScriptPath => self.sign_script_path(view, index, coin, data)?,
        };
        Ok(unlock)
    }

    /// 2-of-3 multisig spent by a scriptSig: `OP_0 <sig> <sig>` (the
    /// leading OP_0 feeds OP_CHECKMULTISIG's extra pop), then the redeem
    /// script for P2SH. The scriptCode is the multisig script either way.
    fn sign_legacy_multisig(
        &self,
        view: &ibex_primitives::TransactionView<'_>,
        index: usize,
        coin: &Coin,
    ) -> Unlock {
        let entry = self.keys.entry(coin.key_index);
        let script = &entry.multisig_script;
        let sighash = legacy_sighash(view, index, script, i32::from(SIGHASH_ALL));
        let second = self.keys.following(coin.key_index, 1);
        let mut script_sig = vec![OP_0];
        push_data_into(&self.ecdsa(sighash, &entry.secret_key), &mut script_sig);
        push_data_into(&self.ecdsa(sighash, &second.secret_key), &mut script_sig);
        if coin.kind == ScriptKind::P2shMultisig {
            push_data_into(script, &mut script_sig);
        }
        Unlock { script_sig, witness: Vec::new() }
    }

    fn taproot_hash(
        view: &ibex_primitives::TransactionView<'_>,
        index: usize,
        data: &SighashData<'_>,
        sig_version: SigVersion,
        execution: &ExecutionData,
    ) -> Result<[u8; 32], SigningError> {
        let missing = SigningError::Sighash { input: index };
        let spent_output = *data.spent_outputs.get(index).ok_or(missing)?;
        let input = TaprootInput { input_index: index, spent_output, sig_version, execution };
        taproot_sighash(view, &input, 0, data.bip341).map_err(|_| missing)
    }

    fn sign_key_path(
        &self,
        view: &ibex_primitives::TransactionView<'_>,
        index: usize,
        coin: &Coin,
        data: &SighashData<'_>,
        annex: Option<&[u8]>,
    ) -> Result<Unlock, SigningError> {
        let execution = ExecutionData { annex: Some(annex.map(annex_hash)), ..Default::default() };
        let sighash = Self::taproot_hash(view, index, data, SigVersion::Taproot, &execution)?;
        let entry = self.keys.entry(coin.key_index);
        let mut witness = vec![self.schnorr(sighash, &entry.key_path_keypair)];
        if let Some(annex) = annex {
            witness.push(annex.to_vec());
        }
        Ok(Unlock { script_sig: Vec::new(), witness })
    }

    fn sign_script_path(
        &self,
        view: &ibex_primitives::TransactionView<'_>,
        index: usize,
        coin: &Coin,
        data: &SighashData<'_>,
    ) -> Result<Unlock, SigningError> {
        let entry = self.keys.entry(coin.key_index);
        let execution = ExecutionData {
            annex: Some(None),
            tapleaf_hash: Some(tapleaf_hash(TAPROOT_LEAF_TAPSCRIPT, &entry.leaf_script)),
            codeseparator_position: Some(u32::MAX),
            ..Default::default()
        };
        let sighash = Self::taproot_hash(view, index, data, SigVersion::Tapscript, &execution)?;
        let leaf_signer = self.keys.following(coin.key_index, 1);
        let witness = vec![
            self.schnorr(sighash, &leaf_signer.keypair),
            entry.leaf_script.clone(),
            entry.control_block.to_vec(),
        ];
        Ok(Unlock { script_sig: Vec::new(), witness })
    }
}
