//! Addresses as Core's `EncodeDestination` writes them (`key_io.cpp`):
//! Base58Check for P2PKH and P2SH, Bech32 (BIP173) for witness version 0,
//! Bech32m (BIP350) for versions 1 to 16 (taproot, pay-to-anchor, unknown
//! versions). Written straight into the output buffer: Base58 works on a
//! stack array, Bech32 streams its 5-bit groups.

use ibex_primitives::hash::sha256d;
use ibex_primitives::Network;

use crate::script_type::Solution;

/// The prefixes a network's addresses carry (Core's `base58Prefixes` and
/// `bech32_hrp` in `kernel/chainparams.cpp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressParams {
    /// Base58Check version byte of P2PKH addresses.
    pub pubkey_hash_prefix: u8,
    /// Base58Check version byte of P2SH addresses.
    pub script_hash_prefix: u8,
    /// Human-readable part of segwit addresses.
    pub human_readable_part: &'static str,
}

impl AddressParams {
    /// The prefixes of `network`: mainnet `1`/`3`/`bc`, testnets and signet
    /// `m or n`/`2`/`tb`, regtest `m or n`/`2`/`bcrt`.
    pub const fn for_network(network: Network) -> AddressParams {
        let (pubkey_hash_prefix, script_hash_prefix, human_readable_part) = match network {
            Network::Main => (0, 5, "bc"),
            Network::Testnet3 | Network::Testnet4 | Network::Signet => (111, 196, "tb"),
            Network::Regtest => (111, 196, "bcrt"),
        };
        AddressParams { pubkey_hash_prefix, script_hash_prefix, human_readable_part }
    }
}

/// Writes the address of a solved script, if Core's `ExtractDestination`
/// gives it one (P2PKH, P2SH, every witness program, pay-to-anchor).
/// Returns whether it wrote anything. Pay-to-pubkey has no address in
/// Core's RPC output (`ScriptToUniv` skips `PubKeyDestination`).
pub(crate) fn write_address(
    out: &mut Vec<u8>,
    solution: &Solution<'_>,
    params: &AddressParams,
) -> bool {
    match *solution {
        Solution::PubKeyHash { hash } => write_base58_check(out, params.pubkey_hash_prefix, hash),
        Solution::ScriptHash { hash } => write_base58_check(out, params.script_hash_prefix, hash),
        Solution::Witness { version, program } => {
            write_segwit(out, params.human_readable_part, version, program)
        }
        Solution::Anchor => write_segwit(out, params.human_readable_part, 1, &[0x4e, 0x73]),
        Solution::NonStandard
        | Solution::PubKey { .. }
        | Solution::Multisig { .. }
        | Solution::NullData => return false,
    }
    true
}

const BASE58_ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
/// Version byte, 20-byte hash, 4-byte checksum.
const BASE58_PAYLOAD_BYTES: usize = 25;
/// The payload as big-endian 32-bit limbs (25 bytes fit in 7).
const BASE58_LIMBS: usize = 7;
/// Enough Base58 digits for 7 limbs in groups of five (log 256 / log 58 =
/// 1.37 digits per byte: 38 for 28 bytes, rounded up to whole groups).
const BASE58_DIGITS_MAX: usize = 40;
/// 58^5, the largest power of 58 below 2^32: one long division of the
/// limbs by it yields five digits.
const BASE58_FIVE_DIGITS: u64 = 58 * 58 * 58 * 58 * 58;
const _: () = assert!(BASE58_FIVE_DIGITS < 1 << 32);
const _: () = assert!(BASE58_PAYLOAD_BYTES <= 4 * BASE58_LIMBS);

/// Base58Check of a version byte and a 20-byte hash (Core's `EncodeBase58Check`).
fn write_base58_check(out: &mut Vec<u8>, version: u8, hash: &[u8]) {
    let mut payload = [0u8; BASE58_PAYLOAD_BYTES];
    payload[0] = version;
    let hash_end = 1 + hash.len().min(20);
    payload[1..hash_end].copy_from_slice(hash.get(..hash_end - 1).unwrap_or_default());
    let checksum = sha256d(&payload[..hash_end]);
    payload[hash_end..hash_end + 4].copy_from_slice(&checksum[..4]);
    write_base58(out, &payload[..hash_end + 4]);
}

/// Base58 of at most 25 bytes: each leading zero byte is a `1`, the rest is
/// the number in base 58 (Core's `EncodeBase58`). The number is divided by
/// 58^5 as 32-bit limbs, five digits per pass: ~50 word divisions for an
/// address instead of ~850 digit steps byte by byte.
fn write_base58(out: &mut Vec<u8>, bytes: &[u8]) {
    let bytes = bytes.get(..BASE58_PAYLOAD_BYTES.min(bytes.len())).unwrap_or_default();
    let zeros = bytes.iter().take_while(|byte| **byte == 0).count();
    let mut padded = [0u8; 4 * BASE58_LIMBS];
    padded[4 * BASE58_LIMBS - bytes.len()..].copy_from_slice(bytes);
    let mut limbs = [0u32; BASE58_LIMBS];
    for (limb, chunk) in limbs.iter_mut().zip(padded.chunks_exact(4)) {
        *limb = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    // Little-endian base-58 digits.
    let mut digits = [0u8; BASE58_DIGITS_MAX];
    let mut digit_count = 0;
    let mut first = limbs.iter().position(|limb| *limb != 0).unwrap_or(BASE58_LIMBS);
    while first < BASE58_LIMBS && digit_count + 5 <= BASE58_DIGITS_MAX {
        let mut remainder = 0u64;
        for limb in limbs.iter_mut().skip(first) {
            let value = remainder << 32 | u64::from(*limb);
            *limb = (value / BASE58_FIVE_DIGITS) as u32;
            remainder = value % BASE58_FIVE_DIGITS;
        }
        while first < BASE58_LIMBS && limbs[first] == 0 {
            first += 1;
        }
        for digit in digits.iter_mut().skip(digit_count).take(5) {
            *digit = (remainder % 58) as u8;
            remainder /= 58;
        }
        digit_count += 5;
    }
    while digit_count > 0 && digits[digit_count - 1] == 0 {
        digit_count -= 1;
    }
    out.extend(std::iter::repeat_n(b'1', zeros));
    out.extend(
        digits[..digit_count].iter().rev().map(|digit| BASE58_ALPHABET[usize::from(*digit)]),
    );
}

const BECH32_CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
/// BIP173's checksum constant; BIP350's for Bech32m.
const BECH32_CONSTANT: u32 = 1;
const BECH32M_CONSTANT: u32 = 0x2bc8_30a3;

/// One step of the BCH code shared by Bech32 and Bech32m: the generators
/// selected by the five bits shifted out, XORed together ahead of time.
fn bech32_polymod_step(checksum: u32, value: u8) -> u32 {
    const GENERATOR: [u32; 5] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3];
    const COMBINED: [u32; 32] = {
        let mut table = [0u32; 32];
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
    let top = (checksum >> 25) as usize;
    ((checksum & 0x01ff_ffff) << 5 ^ u32::from(value)) ^ COMBINED[top & 31]
}

/// A segwit address: `hrp`, `1`, the version, the program regrouped into
/// 5-bit values, and the six checksum characters (Bech32 for version 0,
/// Bech32m otherwise).
fn write_segwit(out: &mut Vec<u8>, human_readable_part: &str, version: u8, program: &[u8]) {
    let hrp = human_readable_part.as_bytes();
    let mut checksum = 1u32;
    for byte in hrp {
        checksum = bech32_polymod_step(checksum, byte >> 5);
    }
    checksum = bech32_polymod_step(checksum, 0);
    for byte in hrp {
        checksum = bech32_polymod_step(checksum, byte & 0x1f);
    }
    out.extend_from_slice(hrp);
    out.push(b'1');
    let mut emit = |value: u8, out: &mut Vec<u8>| {
        checksum = bech32_polymod_step(checksum, value);
        out.push(BECH32_CHARSET[usize::from(value & 0x1f)]);
    };
    emit(version, out);
    // Core's ConvertBits<8, 5, true>: pad the last group with zero bits.
    let (mut accumulator, mut bits) = (0u32, 0u32);
    for byte in program {
        accumulator = (accumulator << 8 | u32::from(*byte)) & 0xfff;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            emit(((accumulator >> bits) & 0x1f) as u8, out);
        }
    }
    if bits > 0 {
        emit(((accumulator << (5 - bits)) & 0x1f) as u8, out);
    }
    for _ in 0..6 {
        checksum = bech32_polymod_step(checksum, 0);
    }
    checksum ^= if version == 0 { BECH32_CONSTANT } else { BECH32M_CONSTANT };
    for index in 0..6 {
        out.push(BECH32_CHARSET[((checksum >> (5 * (5 - index))) & 0x1f) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script_type::solve;
    use ibex_primitives::hex::decode;

    fn address(script_hex: &str, network: Network) -> Option<String> {
        let script = decode(script_hex).unwrap();
        let mut out = Vec::new();
        let written =
            write_address(&mut out, &solve(&script), &AddressParams::for_network(network));
        written.then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn base58_addresses() {
        // Core's getblock answers for the shared regtest chain.
        let p2pkh = "76a914c331d92760f0f8826edeea5402aba05eb879de8c88ac";
        assert_eq!(address(p2pkh, Network::Regtest).unwrap(), "myK3myiBop5QiQyHZRdyVwwuqvniPL3chj");
        let p2sh = "a914ada9762febbe1572df47a2bfaa55afba3245fa6587";
        assert_eq!(address(p2sh, Network::Regtest).unwrap(), "2N95TtsddudP6rkzo1v6DvbosoWHhMN84u1");
        // The genesis coinbase key's hash on mainnet: 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa.
        let genesis = "76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac";
        assert_eq!(address(genesis, Network::Main).unwrap(), "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa");
        // A zero hash keeps its leading zero bytes as '1's.
        let zero = format!("76a914{}88ac", "00".repeat(20));
        assert_eq!(address(&zero, Network::Main).unwrap(), "1111111111111111111114oLvT2");
        let ones = format!("a914{}87", "ff".repeat(20));
        assert_eq!(address(&ones, Network::Main).unwrap(), reference_base58_check(5, &[0xff; 20]));
    }

    /// Base58Check digit by digit, the textbook way, to check the limb
    /// division against.
    fn reference_base58_check(version: u8, hash: &[u8]) -> String {
        let mut payload = vec![version];
        payload.extend_from_slice(hash);
        let checksum = sha256d(&payload);
        payload.extend_from_slice(&checksum[..4]);
        let mut digits: Vec<u8> = Vec::new();
        for byte in &payload {
            let mut carry = u32::from(*byte);
            for digit in digits.iter_mut() {
                carry += u32::from(*digit) << 8;
                *digit = (carry % 58) as u8;
                carry /= 58;
            }
            while carry > 0 {
                digits.push((carry % 58) as u8);
                carry /= 58;
            }
        }
        let zeros = payload.iter().take_while(|byte| **byte == 0).count();
        let text: String =
            digits.iter().rev().map(|digit| BASE58_ALPHABET[usize::from(*digit)] as char).collect();
        "1".repeat(zeros) + &text
    }

    #[test]
    fn base58_limb_division_matches_the_textbook_way() {
        for seed in 0..=255u8 {
            let hash: Vec<u8> =
                (0..20u8).map(|index| index.wrapping_mul(seed).wrapping_add(seed)).collect();
            for version in [0u8, 5, 111, 196] {
                let mut out = Vec::new();
                write_base58_check(&mut out, version, &hash);
                assert_eq!(String::from_utf8(out).unwrap(), reference_base58_check(version, &hash));
            }
        }
    }

    #[test]
    fn segwit_addresses() {
        let p2wpkh = "0014625b670c29f523399142f84a756a9c188b8a2f4d";
        assert_eq!(
            address(p2wpkh, Network::Regtest).unwrap(),
            "bcrt1qvfdkwrpf753nny2zlp98265urz9c5t6dnp5a4d"
        );
        let p2tr = "51209a255088b040d77c4bf347b31dcf59983a2bbf8741163fe888723018b59056d3";
        assert_eq!(
            address(p2tr, Network::Regtest).unwrap(),
            "bcrt1pngj4pz9sgrthcjlng7e3mn6enqazh0u8gytrl6ygwgcp3dvs2mfsure33c"
        );
        // BIP173 / BIP350 test vectors.
        let bip173 = "0014751e76e8199196d454941c45d1b3a323f1433bd6";
        assert_eq!(
            address(bip173, Network::Main).unwrap(),
            "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"
        );
        let bip350 =
            "5128751e76e8199196d454941c45d1b3a323f1433bd6751e76e8199196d454941c45d1b3a323f1433bd6";
        assert_eq!(
            address(bip350, Network::Main).unwrap(),
            "bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y"
        );
        assert_eq!(address("6002751e", Network::Main).unwrap(), "bc1sw50qgdz25j");
        // Pay-to-anchor (BIP 431's ephemeral anchor).
        assert_eq!(address("51024e73", Network::Main).unwrap(), "bc1pfeessrawgf");
        assert_eq!(address("51024e73", Network::Regtest).unwrap(), "bcrt1pfeesnyr2tx");
    }

    #[test]
    fn no_address_for_bare_keys_data_and_nonstandard() {
        let p2pk = format!("2102{}ac", "11".repeat(32));
        assert_eq!(address(&p2pk, Network::Main), None);
        assert_eq!(address("6a", Network::Main), None);
        assert_eq!(address("76", Network::Main), None);
        assert_eq!(AddressParams::for_network(Network::Signet).human_readable_part, "tb");
    }
}
