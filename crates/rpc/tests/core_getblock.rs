//! Our `getblock` / `getblockheader` answers for the 18 blocks whose answers
//! Bitcoin Core 30 gave (`../shared/chains/core-wallet-mix/getblock/`):
//! equal by value (same keys, same strings, numerically equal numbers,
//! amounts exactly), in Core's key order, and in Core's number formats.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ibex_primitives::{BlockHash, Network};
use ibex_rpc::{
    write_block_hex_json, write_block_json, write_header_hex_json, write_header_json,
    write_transaction_json, BlockVerbosity, ChainPosition, TransactionBlockContext,
    TransactionVerbosity,
};
use support::chain::{block_file_image, chain_directory, Chain};
use support::compare::assert_same_value;
use support::json::{parse, Json};
use support::order::assert_core_key_order;

fn text(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap()
}

struct Sample {
    name: String,
    core: Json,
}

fn samples() -> Vec<Sample> {
    let mut paths: Vec<_> = std::fs::read_dir(chain_directory().join("getblock"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| Sample {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            core: parse(&std::fs::read_to_string(&path).unwrap()),
        })
        .collect()
}

const VERBOSITIES: [(BlockVerbosity, &str); 3] = [
    (BlockVerbosity::TransactionIds, "verbosity1"),
    (BlockVerbosity::Transactions, "verbosity2"),
    (BlockVerbosity::TransactionsWithPrevouts, "verbosity3"),
];

#[test]
fn getblock_and_getblockheader_match_core_30() {
    let image = block_file_image();
    let chain = Chain::load(&image);
    assert!(chain.block_count() > 1_190, "the file holds the chain and its stale branches");
    let samples = samples();
    assert_eq!(samples.len(), 18);
    let mut answers_matched = 0;
    for sample in &samples {
        let hash = BlockHash::from_hex(sample.core.get("hash").unwrap().as_str().unwrap()).unwrap();
        let block = chain.block(&hash);
        let context = chain.context(&hash);
        let core_height = sample.core.get("height").unwrap();
        assert_eq!(core_height, &Json::Number(context.height.to_string()), "{}", sample.name);

        let mut out = Vec::new();
        write_header_json(&mut out, block.header(), &context);
        let header = parse(&text(out));
        assert_same_value(&header, sample.core.get("header").unwrap(), &sample.name);
        assert_core_key_order(&header, "header");

        let mut out = Vec::new();
        write_header_hex_json(&mut out, block.header());
        assert_eq!(parse(&text(out)), *sample.core.get("header_hex").unwrap());
        let mut out = Vec::new();
        write_block_hex_json(&mut out, block);
        assert_eq!(parse(&text(out)), *sample.core.get("verbosity0").unwrap());
        answers_matched += 3;

        let coins = chain.spent_coins(&hash);
        for (verbosity, name) in VERBOSITIES {
            let mut out = Vec::new();
            write_block_json(&mut out, block, &context, verbosity, Some(&coins), Network::Regtest)
                .unwrap();
            let ours = parse(&text(out));
            assert_same_value(
                &ours,
                sample.core.get(name).unwrap(),
                &format!("{}.{name}", sample.name),
            );
            assert_core_key_order(&ours, "block");
            answers_matched += 1;
        }
    }
    eprintln!("{answers_matched} answers matched Core's for {} blocks", samples.len());
    assert_eq!(answers_matched, 18 * 6);
}

#[test]
fn core_number_formats_in_our_text() {
    let image = block_file_image();
    let chain = Chain::load(&image);
    let sample = &samples()[4];
    let hash = BlockHash::from_hex(sample.core.get("hash").unwrap().as_str().unwrap()).unwrap();
    let coins = chain.spent_coins(&hash);
    let mut out = Vec::new();
    let context = chain.context(&hash);
    let verbosity = BlockVerbosity::TransactionsWithPrevouts;
    write_block_json(
        &mut out,
        chain.block(&hash),
        &context,
        verbosity,
        Some(&coins),
        Network::Regtest,
    )
    .unwrap();
    let ours = text(out);
    assert!(ours.contains("\"difficulty\":4.656542373906925e-10,"));
    assert!(ours.contains("\"value\":0.00000000,"), "amounts keep eight decimals");
    assert!(ours.contains(",\"fee\":0.0000"), "fees keep eight decimals");
    // No whitespace outside strings, as Core's compact UniValue::write.
    let without_strings: String = ours.split('"').step_by(2).collect();
    assert!(!without_strings.contains(' ') && !without_strings.contains('\n'));
}

/// `getrawtransaction` at verbosity 1 gives each transaction as `getblock`
/// verbosity 2 does, without the fee, followed by the block fields.
#[test]
fn getrawtransaction_agrees_with_getblock() {
    let image = block_file_image();
    let chain = Chain::load(&image);
    let sample = &samples()[5];
    let hash = BlockHash::from_hex(sample.core.get("hash").unwrap().as_str().unwrap()).unwrap();
    let block = chain.block(&hash);
    let context = chain.context(&hash);
    let Json::Array(core_transactions) = sample.core.get("verbosity2").unwrap().get("tx").unwrap()
    else {
        panic!("tx is an array")
    };
    let block_context = TransactionBlockContext {
        block_hash: hash,
        in_active_chain: None,
        position: ChainPosition::Active {
            confirmations: context.confirmations,
            block_time_seconds: i64::from(block.header().time),
        },
    };
    for (transaction, core) in block.transactions().zip(core_transactions) {
        let mut out = Vec::new();
        let verbosity = TransactionVerbosity::Details;
        write_transaction_json(
            &mut out,
            &transaction,
            None,
            verbosity,
            Some(&block_context),
            Network::Regtest,
        )
        .unwrap();
        let Json::Object(mut fields) = parse(&text(out)) else { panic!("an object") };
        let tail: Vec<_> =
            fields.split_off(fields.len() - 4).into_iter().map(|(key, _)| key).collect();
        assert_eq!(tail, ["blockhash", "confirmations", "time", "blocktime"]);
        let Json::Object(mut core_fields) = core.clone() else { panic!("an object") };
        core_fields.retain(|(key, _)| key != "fee");
        assert_same_value(&Json::Object(fields), &Json::Object(core_fields), "getrawtransaction");
    }
}
