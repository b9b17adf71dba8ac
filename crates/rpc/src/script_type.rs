//! Core's `Solver` (`script/solver.cpp`): which standard template a
//! scriptPubKey follows, with the parts the address and descriptor need,
//! borrowed from the script.
//!
//! The order of the checks is Core's and matters: P2SH first, then witness
//! programs (a version-0 program of another length than 20 or 32 bytes is
//! nonstandard, `OP_1 <0x4e73>` is the anchor), then OP_RETURN data, then
//! pay-to-pubkey, pay-to-pubkey-hash and bare multisig.

use ibex_script::interpreter::is_minimal_push;
use ibex_script::number::ScriptNum;
use ibex_script::opcodes::{
    Opcode, OP_1, OP_16, OP_CHECKMULTISIG, OP_CHECKSIG, OP_DUP, OP_EQUALVERIFY, OP_HASH160,
    OP_PUSHDATA4, OP_RETURN,
};
use ibex_script::script::{
    is_pay_to_script_hash, is_push_only, witness_program, Instruction, Instructions,
    MAX_PUBKEYS_PER_MULTISIG,
};
use ibex_script::signature::is_valid_public_key_length;

/// Core's `TxoutType`, named by [`ScriptType::name`] as the JSON `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScriptType {
    /// No template.
    NonStandard,
    /// `<public key> OP_CHECKSIG`.
    PubKey,
    /// `OP_DUP OP_HASH160 <20 bytes> OP_EQUALVERIFY OP_CHECKSIG`.
    PubKeyHash,
    /// `OP_HASH160 <20 bytes> OP_EQUAL`.
    ScriptHash,
    /// `<m> <keys...> <n> OP_CHECKMULTISIG`.
    Multisig,
    /// `OP_RETURN` followed by pushes only.
    NullData,
    /// Pay-to-anchor, `OP_1 <0x4e73>`.
    Anchor,
    /// Version 0, 20-byte program.
    WitnessV0KeyHash,
    /// Version 0, 32-byte program.
    WitnessV0ScriptHash,
    /// Version 1, 32-byte program.
    WitnessV1Taproot,
    /// Any other witness program of version 1 to 16.
    WitnessUnknown,
}

impl ScriptType {
    /// Core's `GetTxnOutputType` name.
    pub const fn name(self) -> &'static str {
        match self {
            ScriptType::NonStandard => "nonstandard",
            ScriptType::PubKey => "pubkey",
            ScriptType::PubKeyHash => "pubkeyhash",
            ScriptType::ScriptHash => "scripthash",
            ScriptType::Multisig => "multisig",
            ScriptType::NullData => "nulldata",
            ScriptType::Anchor => "anchor",
            ScriptType::WitnessV0KeyHash => "witness_v0_keyhash",
            ScriptType::WitnessV0ScriptHash => "witness_v0_scripthash",
            ScriptType::WitnessV1Taproot => "witness_v1_taproot",
            ScriptType::WitnessUnknown => "witness_unknown",
        }
    }
}

/// A solved scriptPubKey: its type and the data Core's `Solver` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Solution<'a> {
    NonStandard,
    PubKey {
        public_key: &'a [u8],
    },
    PubKeyHash {
        hash: &'a [u8],
    },
    ScriptHash {
        hash: &'a [u8],
    },
    /// `keys` is the part of the script holding the key pushes.
    Multisig {
        required: u8,
        keys: &'a [u8],
    },
    NullData,
    Anchor,
    /// Any witness program with an address: v0 key or script hash, v1
    /// taproot, or an unknown version 1..=16.
    Witness {
        version: u8,
        program: &'a [u8],
    },
}

impl Solution<'_> {
    /// The type of this solution.
    pub(crate) fn script_type(&self) -> ScriptType {
        match *self {
            Solution::NonStandard => ScriptType::NonStandard,
            Solution::PubKey { .. } => ScriptType::PubKey,
            Solution::PubKeyHash { .. } => ScriptType::PubKeyHash,
            Solution::ScriptHash { .. } => ScriptType::ScriptHash,
            Solution::Multisig { .. } => ScriptType::Multisig,
            Solution::NullData => ScriptType::NullData,
            Solution::Anchor => ScriptType::Anchor,
            Solution::Witness { version: 0, program } if program.len() == 20 => {
                ScriptType::WitnessV0KeyHash
            }
            Solution::Witness { version: 0, .. } => ScriptType::WitnessV0ScriptHash,
            Solution::Witness { version: 1, program } if program.len() == 32 => {
                ScriptType::WitnessV1Taproot
            }
            Solution::Witness { .. } => ScriptType::WitnessUnknown,
        }
    }
}

/// The template of `script` (Core's `Solver`).
pub fn classify(script: &[u8]) -> ScriptType {
    solve(script).script_type()
}

/// Core's `Solver`.
pub(crate) fn solve(script: &[u8]) -> Solution<'_> {
    if is_pay_to_script_hash(script) {
        return Solution::ScriptHash { hash: script.get(2..22).unwrap_or_default() };
    }
    if let Some(witness) = witness_program(script) {
        let (version, program) = (witness.version, witness.program);
        return match (version, program.len()) {
            (0, 20 | 32) | (1, 32) => Solution::Witness { version, program },
            (1, 2) if program == [0x4e, 0x73] => Solution::Anchor,
            (0, _) => Solution::NonStandard,
            _ => Solution::Witness { version, program },
        };
    }
    if let Some((&OP_RETURN, rest)) = script.split_first() {
        if is_push_only(rest) {
            return Solution::NullData;
        }
    }
    if let Some(public_key) = pay_to_public_key(script) {
        return Solution::PubKey { public_key };
    }
    if let [OP_DUP, OP_HASH160, 0x14, hash @ .., OP_EQUALVERIFY, OP_CHECKSIG] = script {
        if hash.len() == 20 {
            return Solution::PubKeyHash { hash };
        }
    }
    match multisig(script) {
        Some((required, keys)) => Solution::Multisig { required, keys },
        None => Solution::NonStandard,
    }
}

/// Core's `MatchPayToPubkey`: a 65-byte or 33-byte push whose first byte
/// fits its length, then OP_CHECKSIG.
fn pay_to_public_key(script: &[u8]) -> Option<&[u8]> {
    let (&last, body) = script.split_last()?;
    let (&length, public_key) = body.split_first()?;
    let fits = (length == 65 || length == 33) && usize::from(length) == public_key.len();
    (last == OP_CHECKSIG && fits && is_valid_public_key_length(public_key)).then_some(public_key)
}

/// Core's `GetScriptNumber`: OP_1..OP_16, or a minimal push of a minimal
/// number of at most 4 bytes, within `minimum..=maximum`.
fn script_number(instruction: &Instruction<'_>, minimum: i64, maximum: i64) -> Option<i64> {
    let opcode: Opcode = instruction.opcode;
    let value = if (OP_1..=OP_16).contains(&opcode) {
        i64::from(opcode - (OP_1 - 1))
    } else if opcode <= OP_PUSHDATA4 && is_minimal_push(instruction.data, opcode) {
        ScriptNum::decode(instruction.data, true, 4).ok()?.0
    } else {
        return None;
    };
    (minimum..=maximum).contains(&value).then_some(value)
}

/// Core's `MatchMultisig`: the required count (1..=20), keys of a valid
/// length, the key count (required..=20, equal to the keys found), and the
/// final OP_CHECKMULTISIG right after it. Returns the required count and
/// the bytes holding the key pushes.
fn multisig(script: &[u8]) -> Option<(u8, &[u8])> {
    if script.last() != Some(&OP_CHECKMULTISIG) {
        return None;
    }
    let maximum = MAX_PUBKEYS_PER_MULTISIG as i64;
    let mut instructions = Instructions::new(script);
    let required = script_number(&instructions.next()?.ok()?, 1, maximum)?;
    let keys_start = instructions.position();
    let mut keys_end = keys_start;
    let mut key_count: i64 = 0;
    let count_instruction = loop {
        match instructions.next() {
            Some(Ok(instruction)) if is_valid_public_key_length(instruction.data) => {
                key_count += 1;
                keys_end = instructions.position();
            }
            Some(Ok(instruction)) => break instruction,
            // A truncated push or the end: Core's GetOp fails and leaves
            // OP_INVALIDOPCODE, which is no number.
            Some(Err(_)) | None => return None,
        }
    };
    let declared = script_number(&count_instruction, required, maximum)?;
    let ends_after_count = instructions.position() + 1 == script.len();
    let required = u8::try_from(required).ok()?;
    (declared == key_count && ends_after_count).then(|| (required, &script[keys_start..keys_end]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hex::decode;

    fn type_of(script_hex: &str) -> ScriptType {
        classify(&decode(script_hex).unwrap())
    }

    fn compressed(byte: u8) -> String {
        format!("2102{}", format!("{byte:02x}").repeat(32))
    }

    #[test]
    fn templates() {
        let hash20 = "11".repeat(20);
        let hash32 = "22".repeat(32);
        assert_eq!(type_of(&format!("a914{hash20}87")), ScriptType::ScriptHash);
        assert_eq!(type_of(&format!("76a914{hash20}88ac")), ScriptType::PubKeyHash);
        assert_eq!(type_of(&format!("0014{hash20}")), ScriptType::WitnessV0KeyHash);
        assert_eq!(type_of(&format!("0020{hash32}")), ScriptType::WitnessV0ScriptHash);
        assert_eq!(type_of(&format!("5120{hash32}")), ScriptType::WitnessV1Taproot);
        assert_eq!(type_of("51024e73"), ScriptType::Anchor);
        assert_eq!(type_of("52024e73"), ScriptType::WitnessUnknown);
        assert_eq!(type_of(&format!("5114{hash20}")), ScriptType::WitnessUnknown);
        assert_eq!(type_of("0003aabbcc"), ScriptType::NonStandard, "v0 of another length");
        assert_eq!(type_of("6a"), ScriptType::NullData);
        assert_eq!(type_of("6a0401020304"), ScriptType::NullData);
        assert_eq!(type_of("6a76"), ScriptType::NonStandard, "OP_RETURN then a non-push");
        assert_eq!(type_of(&format!("{}ac", compressed(1))), ScriptType::PubKey);
        assert_eq!(type_of(&format!("4104{}ac", "33".repeat(64))), ScriptType::PubKey);
        assert_eq!(type_of(&format!("4106{}ac", "33".repeat(64))), ScriptType::PubKey, "hybrid");
        assert_eq!(type_of(&format!("2105{}ac", "33".repeat(32))), ScriptType::NonStandard);
        assert_eq!(type_of(""), ScriptType::NonStandard);
        assert_eq!(ScriptType::WitnessUnknown.name(), "witness_unknown");
        assert_eq!(ScriptType::Anchor.name(), "anchor");
    }

    #[test]
    fn multisig_follows_match_multisig() {
        let keys = format!("{}{}", compressed(1), compressed(2));
        assert_eq!(type_of(&format!("51{keys}52ae")), ScriptType::Multisig);
        assert_eq!(type_of(&format!("52{keys}52ae")), ScriptType::Multisig);
        assert_eq!(type_of(&format!("53{keys}52ae")), ScriptType::NonStandard, "m > n");
        assert_eq!(type_of(&format!("51{keys}53ae")), ScriptType::NonStandard, "n != keys");
        assert_eq!(type_of(&format!("00{keys}52ae")), ScriptType::NonStandard, "m = 0");
        assert_eq!(type_of(&format!("0101{keys}52ae")), ScriptType::NonStandard, "non-minimal");
        assert_eq!(type_of(&format!("51{keys}5252ae")), ScriptType::NonStandard, "extra op");
        assert_eq!(type_of("5151ae"), ScriptType::NonStandard, "no keys but one declared");
        let script = decode(&format!("51{keys}52ae")).unwrap();
        let solution = solve(&script);
        match solution {
            Solution::Multisig { required, keys: key_bytes } => {
                assert_eq!(required, 1);
                assert_eq!(key_bytes, decode(&keys).unwrap().as_slice());
            }
            other => panic!("{other:?}"),
        }
        // Counts 17..=20 must be minimal pushes.
        let seventeen: String = (1..=17u8).map(compressed).collect();
        assert_eq!(type_of(&format!("51{seventeen}0111ae")), ScriptType::Multisig);
    }
}
