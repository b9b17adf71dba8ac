//! The `desc` of a scriptPubKey: Core's `InferDescriptor` with no wallet
//! (`DUMMY_SIGNING_PROVIDER`, `script/descriptor.cpp`) and its
//! `ToString()`, checksum included (`DescriptorChecksum`, BIP380).
//!
//! Without keys or scripts to look up, Core's `InferScript` at the top level
//! infers only what the script itself shows:
//! - `pk(KEY)` for pay-to-pubkey, unless the key is hybrid (0x06/0x07):
//!   `InferPubkey` takes only 0x02, 0x03 and 0x04 keys;
//! - `multi(k,KEY,...)` for bare multisig when every key is such a key;
//! - `rawtr(XONLY)` for taproot when the output key is on the curve
//!   (`XOnlyPubKey::IsFullyValid`, checked here with libsecp256k1);
//! - `addr(ADDRESS)` for every other script with an address: P2PKH, P2SH,
//!   segwit v0, taproot with an invalid key, pay-to-anchor, unknown witness
//!   versions (the key or script behind a hash is unknown);
//! - `raw(HEX)` for everything else (OP_RETURN, nonstandard, multisig or
//!   pay-to-pubkey with a hybrid key).

use std::ops::Range;

use ibex_script::script::Instructions;

use crate::address::{write_address, AddressParams};
use crate::hex::write_hex;
use crate::number::write_u64;
use crate::script_type::Solution;

/// Writes the descriptor of `script` and its `#checksum` (no quotes).
/// Returns where the address is in `out` when the descriptor is `addr()`,
/// so the `address` field can copy it instead of encoding it again.
pub(crate) fn write_descriptor(
    out: &mut Vec<u8>,
    script: &[u8],
    solution: &Solution<'_>,
    params: &AddressParams,
) -> Option<Range<usize>> {
    let start = out.len();
    let address = write_descriptor_body(out, script, solution, params);
    let checksum = descriptor_checksum(out.get(start..).unwrap_or_default());
    out.push(b'#');
    out.extend_from_slice(&checksum);
    address
}

fn write_descriptor_body(
    out: &mut Vec<u8>,
    script: &[u8],
    solution: &Solution<'_>,
    params: &AddressParams,
) -> Option<Range<usize>> {
    match *solution {
        Solution::PubKey { public_key } if is_valid_non_hybrid(public_key) => {
            out.extend_from_slice(b"pk(");
            write_hex(out, public_key);
            out.push(b')');
            return None;
        }
        Solution::Multisig { required, keys } if multisig_keys_valid(keys) => {
            write_multi(out, required, keys);
            return None;
        }
        Solution::Witness { version: 1, program } if is_taproot_output_key(program) => {
            out.extend_from_slice(b"rawtr(");
            write_hex(out, program);
            out.push(b')');
            return None;
        }
        _ => {}
    }
    out.extend_from_slice(b"addr(");
    let address_start = out.len();
    if write_address(out, solution, params) {
        let address = address_start..out.len();
        out.push(b')');
        return Some(address);
    }
    // No address: raw() instead of addr(.
    out.truncate(address_start - b"addr(".len());
    out.extend_from_slice(b"raw(");
    write_hex(out, script);
    out.push(b')');
    None
}

/// `CPubKey::IsValidNonHybrid`: a compressed or uncompressed key (the
/// solver already matched the length to the first byte).
fn is_valid_non_hybrid(public_key: &[u8]) -> bool {
    matches!(public_key.first(), Some(0x02..=0x04))
}

fn multisig_keys(keys: &[u8]) -> impl Iterator<Item = &[u8]> {
    // The solver checked every push in this range is a key.
    Instructions::new(keys).map_while(|instruction| instruction.ok().map(|push| push.data))
}

fn multisig_keys_valid(keys: &[u8]) -> bool {
    multisig_keys(keys).all(is_valid_non_hybrid)
}

fn write_multi(out: &mut Vec<u8>, required: u8, keys: &[u8]) {
    out.extend_from_slice(b"multi(");
    write_u64(out, u64::from(required));
    for key in multisig_keys(keys) {
        out.push(b',');
        write_hex(out, key);
    }
    out.push(b')');
}

/// A taproot output whose key is a valid x-only public key.
fn is_taproot_output_key(program: &[u8]) -> bool {
    <[u8; 32]>::try_from(program)
        .is_ok_and(|key| secp256k1::XOnlyPublicKey::from_byte_array(key).is_ok())
}

/// BIP380's character set: a character's position gives 5 bits (its place
/// in a group of 32) and a group number 0..=2.
const INPUT_CHARSET: &[u8; 95] =
    b"0123456789()[],'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#\"\\ ";
const CHECKSUM_CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";

/// One step of the descriptor checksum's BCH code over GF(32): the
/// generators selected by the five bits shifted out, XORed together ahead
/// of time.
fn descriptor_polymod_step(checksum: u64, value: u64) -> u64 {
    const GENERATOR: [u64; 5] =
        [0xf5_dee5_1989, 0xa9_fdca_3312, 0x1b_ab10_e32d, 0x37_06b1_677a, 0x64_4d62_6ffd];
    const COMBINED: [u64; 32] = {
        let mut table = [0u64; 32];
        let mut top = 0;
        while top < 32 {
            let mut bit = 0;
            while bit < 5 {
                if (top >> bit) & 1 == 1 {
                    table[top] ^= GENERATOR[bit];
                }
                bit += 1;
            }
            top += 1;
        }
        table
    };
    let top = (checksum >> 35) as usize;
    ((checksum & 0x7_ffff_ffff) << 5 ^ value) ^ COMBINED[top & 31]
}

/// The position of `character` in [`INPUT_CHARSET`], from a table built
/// at compile time.
fn input_position(character: u8) -> Option<u64> {
    const POSITIONS: [u8; 256] = {
        let mut table = [u8::MAX; 256];
        let mut index = 0;
        while index < INPUT_CHARSET.len() {
            table[INPUT_CHARSET[index] as usize] = index as u8;
            index += 1;
        }
        table
    };
    let position = POSITIONS[usize::from(character)];
    (position != u8::MAX).then_some(u64::from(position))
}

/// Core's `DescriptorChecksum`: eight characters. Every descriptor this
/// crate writes uses only characters of the input set; an unexpected one
/// would make Core return an empty checksum, which this mirrors with eight
/// spaces' worth of nothing: it is skipped (and flagged in debug builds).
pub(crate) fn descriptor_checksum(descriptor: &[u8]) -> [u8; 8] {
    let mut checksum = 1u64;
    let (mut groups, mut group_count) = (0u64, 0);
    for &character in descriptor {
        let Some(position) = input_position(character) else {
            debug_assert!(false, "character outside the descriptor set: {character}");
            continue;
        };
        checksum = descriptor_polymod_step(checksum, position & 31);
        groups = groups * 3 + (position >> 5);
        group_count += 1;
        if group_count == 3 {
            checksum = descriptor_polymod_step(checksum, groups);
            (groups, group_count) = (0, 0);
        }
    }
    if group_count > 0 {
        checksum = descriptor_polymod_step(checksum, groups);
    }
    for _ in 0..8 {
        checksum = descriptor_polymod_step(checksum, 0);
    }
    checksum ^= 1;
    let mut text = [0u8; 8];
    for (index, character) in text.iter_mut().enumerate() {
        *character = CHECKSUM_CHARSET[((checksum >> (5 * (7 - index))) & 31) as usize];
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script_type::solve;
    use ibex_primitives::hex::decode;
    use ibex_primitives::Network;

    fn descriptor(script_hex: &str) -> String {
        let script = decode(script_hex).unwrap();
        let mut out = Vec::new();
        let params = AddressParams::for_network(Network::Regtest);
        write_descriptor(&mut out, &script, &solve(&script), &params);
        String::from_utf8(out).unwrap()
    }

    fn body(descriptor: &str) -> &str {
        descriptor.split('#').next().unwrap()
    }

    #[test]
    fn bip380_checksum_vectors() {
        assert_eq!(&descriptor_checksum(b"raw(deadbeef)"), b"89f8spxm");
        // Core's answers for the shared regtest chain.
        assert_eq!(&descriptor_checksum(b"addr(myK3myiBop5QiQyHZRdyVwwuqvniPL3chj)"), b"8d0y5efh");
        assert_eq!(
            &descriptor_checksum(
                b"rawtr(9a255088b040d77c4bf347b31dcf59983a2bbf8741163fe888723018b59056d3)"
            ),
            b"vvq2dqt4"
        );
    }

    #[test]
    fn inferred_from_the_script_alone() {
        let data = descriptor("6a");
        assert_eq!(body(&data), "raw(6a)");
        assert_eq!(data.len(), "raw(6a)#".len() + 8);
        assert_eq!(body(&descriptor("6a0102")), "raw(6a0102)");
        assert_eq!(body(&descriptor("")), "raw()");
        let p2pkh = "76a914c331d92760f0f8826edeea5402aba05eb879de8c88ac";
        assert_eq!(descriptor(p2pkh), "addr(myK3myiBop5QiQyHZRdyVwwuqvniPL3chj)#8d0y5efh");
        let key =
            format!("02{}", "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798");
        assert_eq!(body(&descriptor(&format!("21{key}ac"))), format!("pk({key})"));
        let hybrid = format!("06{}", "11".repeat(64));
        assert_eq!(body(&descriptor(&format!("41{hybrid}ac"))), format!("raw(41{hybrid}ac)"));
        let other = format!("03{}", "22".repeat(32));
        let multisig = format!("5121{key}21{other}52ae");
        assert_eq!(body(&descriptor(&multisig)), format!("multi(1,{key},{other})"));
        let hybrid_multisig = format!("5121{key}41{hybrid}52ae");
        assert_eq!(body(&descriptor(&hybrid_multisig)), format!("raw({hybrid_multisig})"));
        assert_eq!(body(&descriptor("51024e73")), "addr(bcrt1pfeesnyr2tx)");
        assert_eq!(body(&descriptor("6002751e")), "addr(bcrt1sw50qt2uwha)");
    }

    #[test]
    fn taproot_keys_off_the_curve_fall_back_to_addr() {
        let on_curve = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798";
        assert_eq!(body(&descriptor(&format!("5120{on_curve}"))), format!("rawtr({on_curve})"));
        // x = 5 has no point on secp256k1 (5^3 + 7 = 132 is not a square mod p).
        let off_curve = format!("{}05", "00".repeat(31));
        let text = descriptor(&format!("5120{off_curve}"));
        assert!(body(&text).starts_with("addr(bcrt1p"), "{text}");
    }
}
