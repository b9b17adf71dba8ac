//! Genesis blocks, built from their parts as Core's `CreateGenesisBlock`
//! builds them: one coinbase whose scriptSig pushes 486604799, 4 and a
//! message, paying 50 BTC to a pay-to-pubkey script.

use crate::amount::COIN;
use crate::hash::{BlockHash, Hash256};
use crate::header::Header;
use crate::owned::{Block, Transaction, TxInput, TxOutput};
use crate::transaction::OutPoint;

/// `OP_PUSHDATA1`: the next byte is the push's length.
const OP_PUSHDATA1: u8 = 0x4c;
/// `OP_PUSHDATA2`: the next two bytes are the push's length.
const OP_PUSHDATA2: u8 = 0x4d;
/// `OP_PUSHDATA4`: the next four bytes are the push's length.
const OP_PUSHDATA4: u8 = 0x4e;
/// `OP_CHECKSIG`.
const OP_CHECKSIG: u8 = 0xac;
/// The first number every genesis coinbase pushes (0x1d00ffff, mainnet's
/// genesis `nBits`).
const GENESIS_SCRIPT_SIG_NUMBER: i64 = 486_604_799;
/// The second number every genesis coinbase pushes.
const GENESIS_SCRIPT_SIG_SMALL_NUMBER: i64 = 4;

/// The headline in mainnet's (and testnet3's, signet's, regtest's) genesis coinbase.
pub const SATOSHI_GENESIS_MESSAGE: &str =
    "The Times 03/Jan/2009 Chancellor on brink of second bailout for banks";

/// The uncompressed public key mainnet's genesis output pays.
pub const SATOSHI_GENESIS_PUBLIC_KEY: &str = "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f";

/// Everything that makes a genesis block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenesisSpecification {
    /// The message the coinbase scriptSig pushes.
    pub message: Vec<u8>,
    /// The public key the only output pays (pay-to-pubkey).
    pub public_key: Vec<u8>,
    /// Header `nTime`.
    pub time: u32,
    /// Header `nNonce`.
    pub nonce: u32,
    /// Header `nBits`.
    pub bits: u32,
    /// Header `nVersion`.
    pub version: i32,
    /// The output's value in satoshis.
    pub reward_satoshis: i64,
}

impl GenesisSpecification {
    /// Satoshi's message and public key, a 50 BTC reward and version 1, with
    /// the given time, nonce and bits (Core's short `CreateGenesisBlock`).
    pub fn satoshi(time: u32, nonce: u32, bits: u32) -> GenesisSpecification {
        GenesisSpecification {
            message: SATOSHI_GENESIS_MESSAGE.as_bytes().to_vec(),
            // The constant is valid hex; an empty key would fail the genesis tests.
            public_key: crate::hex::decode(SATOSHI_GENESIS_PUBLIC_KEY).unwrap_or_default(),
            time,
            nonce,
            bits,
            version: 1,
            reward_satoshis: 50 * COIN,
        }
    }

    /// The genesis block, its merkle root computed.
    pub fn build(&self) -> Block {
        let mut script_sig = Vec::with_capacity(self.message.len() + 16);
        push_data(&mut script_sig, &script_number(GENESIS_SCRIPT_SIG_NUMBER));
        push_data(&mut script_sig, &script_number(GENESIS_SCRIPT_SIG_SMALL_NUMBER));
        push_data(&mut script_sig, &self.message);
        let mut script_pubkey = Vec::with_capacity(self.public_key.len() + 2);
        push_data(&mut script_pubkey, &self.public_key);
        script_pubkey.push(OP_CHECKSIG);
        let coinbase = Transaction {
            version: 1,
            inputs: vec![TxInput {
                previous_output: OutPoint::NULL,
                script_sig,
                sequence: u32::MAX,
                witness: Vec::new(),
            }],
            outputs: vec![TxOutput { value: self.reward_satoshis, script_pubkey }],
            lock_time: 0,
        };
        let mut block = Block {
            header: Header {
                version: self.version,
                previous_block_hash: BlockHash::ZERO,
                merkle_root: Hash256::ZERO,
                time: self.time,
                bits: self.bits,
                nonce: self.nonce,
            },
            transactions: vec![coinbase],
        };
        block.header.merkle_root = block.compute_merkle_root().root;
        block
    }
}

/// Appends a push of `data` with the shortest push opcode for its length
/// (Core's `CScript << std::vector<unsigned char>`).
fn push_data(script: &mut Vec<u8>, data: &[u8]) {
    let length = data.len();
    if length < usize::from(OP_PUSHDATA1) {
        script.push(length as u8);
    } else if let Ok(length) = u8::try_from(length) {
        script.extend_from_slice(&[OP_PUSHDATA1, length]);
    } else if let Ok(length) = u16::try_from(length) {
        script.push(OP_PUSHDATA2);
        script.extend_from_slice(&length.to_le_bytes());
    } else {
        script.push(OP_PUSHDATA4);
        script.extend_from_slice(&(length as u32).to_le_bytes());
    }
    script.extend_from_slice(data);
}

/// The minimal little-endian sign-magnitude encoding of a script number
/// (Core's `CScriptNum::serialize`).
fn script_number(value: i64) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(9);
    let mut magnitude = value.unsigned_abs();
    while magnitude > 0 {
        bytes.push((magnitude & 0xff) as u8);
        magnitude >>= 8;
    }
    match bytes.last_mut() {
        Some(last) if *last & 0x80 != 0 => bytes.push(if value < 0 { 0x80 } else { 0 }),
        Some(last) if value < 0 => *last |= 0x80,
        _ => {}
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_numbers_are_minimal() {
        assert_eq!(script_number(0), Vec::<u8>::new());
        assert_eq!(script_number(4), vec![4]);
        assert_eq!(script_number(0x80), vec![0x80, 0]);
        assert_eq!(script_number(-1), vec![0x81]);
        assert_eq!(script_number(-0x80), vec![0x80, 0x80]);
        assert_eq!(script_number(GENESIS_SCRIPT_SIG_NUMBER), vec![0xff, 0xff, 0x00, 0x1d]);
    }

    #[test]
    fn pushes_use_the_shortest_opcode() {
        let mut script = Vec::new();
        push_data(&mut script, &[7; 75]);
        assert_eq!(script[0], 75);
        script.clear();
        push_data(&mut script, &[7; 76]);
        assert_eq!(&script[..2], &[OP_PUSHDATA1, 76]);
        script.clear();
        push_data(&mut script, &[7; 256]);
        assert_eq!(&script[..3], &[OP_PUSHDATA2, 0, 1]);
    }

    #[test]
    fn mainnet_coinbase_script_sig_is_cores() {
        let block =
            GenesisSpecification::satoshi(1_231_006_505, 2_083_236_893, 0x1d00_ffff).build();
        let script_sig = &block.transactions[0].inputs[0].script_sig;
        assert_eq!(
            crate::hex::encode(script_sig),
            "04ffff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73"
        );
    }
}
