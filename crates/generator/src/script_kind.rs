//! The output types the generator pays to and spends, with their templates.

use serde::Serialize;

// The opcodes the templates use, from the interpreter's table (one
// definition of each byte).
pub use ibex_script::opcodes::{
    OP_0, OP_1, OP_2, OP_3, OP_CHECKMULTISIG, OP_CHECKSIG, OP_DUP, OP_EQUAL, OP_EQUALVERIFY,
    OP_HASH160, OP_RETURN,
};

/// A spendable output type. Multisig is 2-of-3 throughout, like most of
/// the main chain's multisig; the taproot script path is one leaf
/// `<key> OP_CHECKSIG` under another internal key. Bare multisig comes last
/// so that profiles without it (weight zero) draw exactly as before it
/// existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptKind {
    /// Pay to an uncompressed public key (early coinbases).
    P2pk,
    /// Pay to a compressed public key hash.
    P2pkh,
    /// 2-of-3 bare multisig wrapped in P2SH.
    P2shMultisig,
    /// P2WPKH wrapped in P2SH.
    P2shP2wpkh,
    /// Native segwit v0 key hash.
    P2wpkh,
    /// 2-of-3 multisig in a segwit v0 script hash.
    P2wshMultisig,
    /// Taproot, spent by the key path.
    P2trKeyPath,
    /// Taproot, spent by the script path.
    P2trScriptPath,
    /// 2-of-3 multisig as the scriptPubKey itself (105 bytes, stored
    /// uncompressed in the coins database; 80 sigops cost per output, as
    /// Core counts `OP_CHECKMULTISIG` outside P2SH as 20 signatures).
    BareMultisig,
}

/// Number of spendable kinds.
pub const SCRIPT_KIND_COUNT: usize = 9;

impl ScriptKind {
    /// Every spendable kind, in manifest order.
    pub const ALL: [ScriptKind; SCRIPT_KIND_COUNT] = [
        ScriptKind::P2pk,
        ScriptKind::P2pkh,
        ScriptKind::P2shMultisig,
        ScriptKind::P2shP2wpkh,
        ScriptKind::P2wpkh,
        ScriptKind::P2wshMultisig,
        ScriptKind::P2trKeyPath,
        ScriptKind::P2trScriptPath,
        ScriptKind::BareMultisig,
    ];

    /// The manifest's name for the kind.
    pub const fn name(self) -> &'static str {
        match self {
            ScriptKind::P2pk => "p2pk",
            ScriptKind::P2pkh => "p2pkh",
            ScriptKind::P2shMultisig => "p2sh_multisig",
            ScriptKind::P2shP2wpkh => "p2sh_p2wpkh",
            ScriptKind::P2wpkh => "p2wpkh",
            ScriptKind::P2wshMultisig => "p2wsh_multisig",
            ScriptKind::P2trKeyPath => "p2tr_key_path",
            ScriptKind::P2trScriptPath => "p2tr_script_path",
            ScriptKind::BareMultisig => "bare_multisig",
        }
    }

    /// Position in [`ScriptKind::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether spending it needs witness data.
    pub const fn has_witness(self) -> bool {
        !matches!(
            self,
            ScriptKind::P2pk
                | ScriptKind::P2pkh
                | ScriptKind::P2shMultisig
                | ScriptKind::BareMultisig
        )
    }

    /// Upper bound of the weight one signed input of this kind adds (outpoint,
    /// sequence, scriptSig and witness with 72-byte DER signatures).
    pub const fn input_weight_max(self) -> usize {
        // Base: 36 outpoint + 4 sequence + script length and script, times 4.
        match self {
            ScriptKind::P2pk => (41 + 73) * 4,
            ScriptKind::P2pkh => (41 + 107) * 4,
            // OP_0 sig sig push(redeem 105 bytes): 1 + 2 * 73 + 2 + 105.
            ScriptKind::P2shMultisig => (41 + 3 + 254) * 4,
            // scriptSig: push of 22 bytes; witness: count, sig, key.
            ScriptKind::P2shP2wpkh => (41 + 23) * 4 + 1 + 73 + 34,
            ScriptKind::P2wpkh => 41 * 4 + 1 + 73 + 34,
            // witness: count, empty, 2 sigs, script 105.
            ScriptKind::P2wshMultisig => 41 * 4 + 1 + 1 + 2 * 73 + 106,
            ScriptKind::P2trKeyPath => 41 * 4 + 1 + 65,
            // witness: count, sig, script (34), control block (33).
            ScriptKind::P2trScriptPath => 41 * 4 + 1 + 65 + 36 + 34,
            // OP_0 sig sig: 1 + 2 * 73.
            ScriptKind::BareMultisig => (41 + 1 + 2 * 73) * 4,
        }
    }

    /// Signature operations cost (BIP141 units) of spending one output of
    /// this kind: P2SH multisig counts its redeem script's 3 keys times 4,
    /// witness programs count unscaled, taproot counts nothing (nor does a
    /// bare scriptSig of pushes).
    pub const fn spend_sigop_cost(self) -> u64 {
        match self {
            ScriptKind::P2pk | ScriptKind::P2pkh | ScriptKind::P2trKeyPath => 0,
            ScriptKind::BareMultisig => 0,
            ScriptKind::P2trScriptPath => 0,
            ScriptKind::P2shMultisig => 12,
            ScriptKind::P2shP2wpkh | ScriptKind::P2wpkh => 1,
            ScriptKind::P2wshMultisig => 3,
        }
    }

    /// Signature operations cost of creating one output of this kind (legacy
    /// sigops in scriptPubKeys count times 4; Core's legacy count takes an
    /// `OP_CHECKMULTISIG` for 20).
    pub const fn output_sigop_cost(self) -> u64 {
        match self {
            ScriptKind::P2pk | ScriptKind::P2pkh => 4,
            ScriptKind::BareMultisig => 20 * 4,
            _ => 0,
        }
    }

    /// Signatures needed to spend one output.
    pub const fn signatures(self) -> usize {
        match self {
            ScriptKind::P2shMultisig | ScriptKind::P2wshMultisig | ScriptKind::BareMultisig => 2,
            _ => 1,
        }
    }
}

/// The largest weight one signed input of any kind adds.
pub const INPUT_WEIGHT_MAX: usize = {
    let mut largest = 0;
    let mut index = 0;
    while index < SCRIPT_KIND_COUNT {
        let weight = ScriptKind::ALL[index].input_weight_max();
        if weight > largest {
            largest = weight;
        }
        index += 1;
    }
    largest
};

/// `OP_DUP OP_HASH160 <20> OP_EQUALVERIFY OP_CHECKSIG`.
pub fn p2pkh_script(key_hash: &[u8; 20]) -> Vec<u8> {
    let mut script = Vec::with_capacity(25);
    script.extend_from_slice(&[OP_DUP, OP_HASH160, 20]);
    script.extend_from_slice(key_hash);
    script.extend_from_slice(&[OP_EQUALVERIFY, OP_CHECKSIG]);
    script
}

/// `<33 or 65 byte key> OP_CHECKSIG`.
pub fn p2pk_script(public_key: &[u8]) -> Vec<u8> {
    let mut script = Vec::with_capacity(public_key.len() + 2);
    script.push(public_key.len() as u8);
    script.extend_from_slice(public_key);
    script.push(OP_CHECKSIG);
    script
}

/// `OP_HASH160 <20> OP_EQUAL`.
pub fn p2sh_script(script_hash: &[u8; 20]) -> Vec<u8> {
    let mut script = Vec::with_capacity(23);
    script.extend_from_slice(&[OP_HASH160, 20]);
    script.extend_from_slice(script_hash);
    script.push(OP_EQUAL);
    script
}

/// A witness program: `OP_n <program>`.
pub fn witness_program_script(version_opcode: u8, program: &[u8]) -> Vec<u8> {
    let mut script = Vec::with_capacity(program.len() + 2);
    script.push(version_opcode);
    script.push(program.len() as u8);
    script.extend_from_slice(program);
    script
}

/// `OP_2 <k1> <k2> <k3> OP_3 OP_CHECKMULTISIG` with compressed keys (105 bytes).
pub fn multisig_2_of_3_script(keys: [&[u8; 33]; 3]) -> Vec<u8> {
    let mut script = Vec::with_capacity(105);
    script.push(OP_2);
    for key in keys {
        script.push(33);
        script.extend_from_slice(key);
    }
    script.extend_from_slice(&[OP_3, OP_CHECKMULTISIG]);
    script
}

/// `<x-only key> OP_CHECKSIG` (34 bytes), the taproot leaf script.
pub fn tapscript_checksig(x_only_key: &[u8; 32]) -> Vec<u8> {
    let mut script = Vec::with_capacity(34);
    script.push(32);
    script.extend_from_slice(x_only_key);
    script.push(OP_CHECKSIG);
    script
}

/// `OP_RETURN <data>` (data up to 75 bytes, one direct push).
pub fn op_return_script(data: &[u8]) -> Vec<u8> {
    let length = data.len().min(75);
    let mut script = Vec::with_capacity(length + 2);
    script.push(OP_RETURN);
    script.push(length as u8);
    script.extend_from_slice(&data[..length]);
    script
}
