//! Transactions as Core's `TxToUniv` (`core_write.cpp`) writes them, with
//! `include_hex` set as `getblock` and `getrawtransaction` set it:
//!
//! `txid`, `hash`, `version` (unsigned, as Core 30 keeps it), `size`,
//! `vsize`, `weight`, `locktime`, `vin`, `vout`, `fee` (only with spent
//! coins), `hex`.
//!
//! An input is `coinbase` (for a coinbase) or `txid`, `vout`, `scriptSig`;
//! then `txinwitness` when its witness is not empty (coinbases included),
//! `prevout` at the prevout verbosity when spent coins are given, and
//! `sequence`. An output is `value`, `n`, `scriptPubKey`.

use ibex_primitives::{InputView, OutputView, SpentCoin, TransactionView, Txid, MAX_MONEY};

use crate::address::AddressParams;
use crate::context::TransactionVerbosity;
use crate::error::RpcJsonError;
use crate::json::{boolean, close_object, hash_string, hex_string, key, open_object};
use crate::number::{write_amount, write_u64};
use crate::script_json::{write_script_pub_key, write_script_sig};

/// Writes the fields of a transaction object from `txid` to `hex`, without
/// the braces (the caller adds fields before or after). `spent_coins`, one
/// per input, stand for Core's undo data: with them the inputs get their
/// `prevout` (at [`TransactionVerbosity::DetailsWithPrevouts`]) and the
/// transaction its `fee`. On error `out` may hold a partial object: the
/// public writers cut it off.
pub(crate) fn write_transaction_fields(
    out: &mut Vec<u8>,
    transaction: &TransactionView<'_>,
    spent_coins: Option<&[SpentCoin<'_>]>,
    verbosity: TransactionVerbosity,
    params: &AddressParams,
) -> Result<(), RpcJsonError> {
    let txid = transaction.txid();
    if let Some(coins) = spent_coins {
        if coins.len() != transaction.inputs().len() {
            return Err(RpcJsonError::TransactionSpentCoinCount {
                txid,
                expected: transaction.inputs().len(),
                given: coins.len(),
            });
        }
    }
    out.extend_from_slice(b"\"txid\":");
    hash_string(out, &txid.0);
    key(out, "hash");
    // Without witness data the wtxid is the txid: hash once.
    let wtxid = if transaction.has_witness() { transaction.wtxid().0 } else { txid.0 };
    hash_string(out, &wtxid);
    write_size_fields(out, transaction);
    key(out, "vin");
    let is_coinbase = transaction.is_coinbase();
    let with_prevouts = verbosity == TransactionVerbosity::DetailsWithPrevouts;
    out.push(b'[');
    let mut value_in_satoshis: i128 = 0;
    for (index, input) in transaction.inputs().iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        let coin = spent_coins.and_then(|coins| coins.get(index));
        write_input(out, input, is_coinbase, coin.filter(|_| with_prevouts), params);
        value_in_satoshis += coin.map_or(0, |coin| i128::from(coin.value.to_sat()));
    }
    out.push(b']');
    key(out, "vout");
    let value_out_satoshis = write_outputs(out, transaction.outputs(), params);
    if spent_coins.is_some() {
        write_fee(out, txid, value_in_satoshis - value_out_satoshis)?;
    }
    key(out, "hex");
    hex_string(out, transaction.bytes());
    Ok(())
}

/// `version` to `locktime`.
fn write_size_fields(out: &mut Vec<u8>, transaction: &TransactionView<'_>) {
    key(out, "version");
    // Core 30 keeps the version as a uint32_t.
    write_u64(out, u64::from(transaction.version() as u32));
    key(out, "size");
    write_u64(out, transaction.total_size() as u64);
    let weight = transaction.weight() as u64;
    key(out, "vsize");
    write_u64(out, weight.div_ceil(4));
    key(out, "weight");
    write_u64(out, weight);
    key(out, "locktime");
    write_u64(out, u64::from(transaction.lock_time()));
}

/// One input object; `prevout` is the spent coin to show, if any.
fn write_input(
    out: &mut Vec<u8>,
    input: &InputView<'_>,
    is_coinbase: bool,
    prevout: Option<&SpentCoin<'_>>,
    params: &AddressParams,
) {
    if is_coinbase {
        open_object(out, "coinbase");
        hex_string(out, input.script_sig);
    } else {
        let outpoint = input.previous_output();
        open_object(out, "txid");
        hash_string(out, &outpoint.txid.0);
        key(out, "vout");
        write_u64(out, u64::from(outpoint.vout));
        key(out, "scriptSig");
        write_script_sig(out, input.script_sig);
    }
    if !input.witness.is_empty() {
        key(out, "txinwitness");
        out.push(b'[');
        for (index, item) in input.witness.iter().enumerate() {
            if index != 0 {
                out.push(b',');
            }
            hex_string(out, item);
        }
        out.push(b']');
    }
    if let Some(coin) = prevout {
        key(out, "prevout");
        open_object(out, "generated");
        boolean(out, coin.is_coinbase);
        key(out, "height");
        write_u64(out, u64::from(coin.height));
        key(out, "value");
        write_amount(out, coin.value.to_sat());
        key(out, "scriptPubKey");
        write_script_pub_key(out, coin.script_pubkey, params);
        close_object(out);
    }
    key(out, "sequence");
    write_u64(out, u64::from(input.sequence));
    close_object(out);
}

/// The `vout` array; returns the outputs' total value.
fn write_outputs(out: &mut Vec<u8>, outputs: &[OutputView<'_>], params: &AddressParams) -> i128 {
    out.push(b'[');
    let mut total_satoshis: i128 = 0;
    for (index, output) in outputs.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        open_object(out, "value");
        write_amount(out, output.value);
        key(out, "n");
        write_u64(out, index as u64);
        key(out, "scriptPubKey");
        write_script_pub_key(out, output.script_pubkey, params);
        close_object(out);
        total_satoshis += i128::from(output.value);
    }
    out.push(b']');
    total_satoshis
}

fn write_fee(out: &mut Vec<u8>, txid: Txid, fee_satoshis: i128) -> Result<(), RpcJsonError> {
    let fee = i64::try_from(fee_satoshis)
        .ok()
        .filter(|fee| (0..=MAX_MONEY).contains(fee))
        .ok_or(RpcJsonError::FeeOutOfRange { txid, fee_satoshis })?;
    key(out, "fee");
    write_amount(out, fee);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hex::decode;
    use ibex_primitives::{Amount, Height, Network, ParsedTransaction};

    /// A one-input, one-output legacy transaction spending outpoint
    /// (0x11.., 1) with an empty scriptSig, paying 1,000 satoshis to OP_TRUE.
    fn simple_transaction() -> Vec<u8> {
        let outpoint = "11".repeat(32);
        decode(&format!("0100000001{outpoint}0100000000ffffffff01e803000000000000015100000000"))
            .unwrap()
    }

    fn written(
        bytes: &[u8],
        coins: Option<&[SpentCoin<'_>]>,
        verbosity: TransactionVerbosity,
    ) -> Result<String, RpcJsonError> {
        let parsed = ParsedTransaction::parse(bytes).unwrap();
        let mut out = Vec::new();
        let params = AddressParams::for_network(Network::Regtest);
        write_transaction_fields(&mut out, &parsed.view(), coins, verbosity, &params)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn fee_and_prevout_come_from_spent_coins() {
        let bytes = simple_transaction();
        let plain = written(&bytes, None, TransactionVerbosity::Details).unwrap();
        assert!(!plain.contains("\"fee\"") && !plain.contains("prevout"), "{plain}");
        assert!(
            plain.contains("\"version\":1,\"size\":61,\"vsize\":61,\"weight\":244,\"locktime\":0")
        );
        let coin = SpentCoin {
            value: Amount::from_sat_u32(1_500),
            script_pubkey: &[0x51],
            height: Height::new(7),
            is_coinbase: true,
        };
        let with_fee = written(&bytes, Some(&[coin]), TransactionVerbosity::Details).unwrap();
        assert!(with_fee.contains("],\"fee\":0.00000500,\"hex\":"), "{with_fee}");
        assert!(!with_fee.contains("prevout"));
        let with_prevout =
            written(&bytes, Some(&[coin]), TransactionVerbosity::DetailsWithPrevouts).unwrap();
        assert!(
            with_prevout.contains(
                "\"prevout\":{\"generated\":true,\"height\":7,\"value\":0.00001500,\"scriptPubKey\":{\"asm\":\"1\","
            ),
            "{with_prevout}"
        );
        assert!(with_prevout.contains("\"type\":\"nonstandard\"}},\"sequence\":4294967295}"));
    }

    #[test]
    fn caller_mistakes_are_errors() {
        let bytes = simple_transaction();
        let coin = SpentCoin {
            value: Amount::from_sat_u32(999),
            script_pubkey: &[],
            height: Height::new(1),
            is_coinbase: false,
        };
        let negative = written(&bytes, Some(&[coin]), TransactionVerbosity::Details);
        assert!(matches!(negative, Err(RpcJsonError::FeeOutOfRange { fee_satoshis: -1, .. })));
        let missing = written(&bytes, Some(&[]), TransactionVerbosity::Details);
        assert!(matches!(
            missing,
            Err(RpcJsonError::TransactionSpentCoinCount { expected: 1, given: 0, .. })
        ));
    }

    #[test]
    fn version_is_unsigned() {
        let mut bytes = simple_transaction();
        bytes[..4].copy_from_slice(&(-1i32).to_le_bytes());
        let text = written(&bytes, None, TransactionVerbosity::Details).unwrap();
        assert!(text.contains("\"version\":4294967295,"), "{text}");
    }
}
