//! Network parameters give Bitcoin Core v30's values: genesis blocks built
//! from their parts hash to Core's, and regtest options parse as Core's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_primitives::params::{
    is_bip30_repeat, is_bip30_unspendable, BuriedDeployment, RegtestOptions, ScriptFlagException,
    TestActivationHeightError, BIP30_REPEAT_BLOCKS, BIP30_UNSPENDABLE_BLOCKS,
    BIP34_IMPLIES_BIP30_LIMIT,
};
use ibex_primitives::pow::{check_proof_of_work, CompactTarget};
use ibex_primitives::{BlockHash, Height, Network, Params};
use std::path::PathBuf;

struct Expected {
    network: Network,
    name: &'static str,
    data_dir: &'static str,
    magic: [u8; 4],
    port: u16,
    genesis_hash: &'static str,
    merkle_root: &'static str,
    time: u32,
    bits: u32,
    nonce: u32,
}

const SATOSHI_MERKLE_ROOT: &str =
    "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b";

const EXPECTED: [Expected; 5] = [
    Expected {
        network: Network::Main,
        name: "main",
        data_dir: "",
        magic: [0xf9, 0xbe, 0xb4, 0xd9],
        port: 8333,
        genesis_hash: "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f",
        merkle_root: SATOSHI_MERKLE_ROOT,
        time: 1_231_006_505,
        bits: 0x1d00_ffff,
        nonce: 2_083_236_893,
    },
    Expected {
        network: Network::Testnet3,
        name: "test",
        data_dir: "testnet3",
        magic: [0x0b, 0x11, 0x09, 0x07],
        port: 18333,
        genesis_hash: "000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943",
        merkle_root: SATOSHI_MERKLE_ROOT,
        time: 1_296_688_602,
        bits: 0x1d00_ffff,
        nonce: 414_098_458,
    },
    Expected {
        network: Network::Testnet4,
        name: "testnet4",
        data_dir: "testnet4",
        magic: [0x1c, 0x16, 0x3f, 0x28],
        port: 48333,
        genesis_hash: "00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043",
        merkle_root: "7aa0a7ae1e223414cb807e40cd57e667b718e42aaf9306db9102fe28912b7b4e",
        time: 1_714_777_860,
        bits: 0x1d00_ffff,
        nonce: 393_743_547,
    },
    Expected {
        network: Network::Signet,
        name: "signet",
        data_dir: "signet",
        magic: [0x0a, 0x03, 0xcf, 0x40],
        port: 38333,
        genesis_hash: "00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6",
        merkle_root: SATOSHI_MERKLE_ROOT,
        time: 1_598_918_400,
        bits: 0x1e03_77ae,
        nonce: 52_613_770,
    },
    Expected {
        network: Network::Regtest,
        name: "regtest",
        data_dir: "regtest",
        magic: [0xfa, 0xbf, 0xb5, 0xda],
        port: 18444,
        genesis_hash: "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206",
        merkle_root: SATOSHI_MERKLE_ROOT,
        time: 1_296_688_602,
        bits: 0x207f_ffff,
        nonce: 2,
    },
];

fn hash(text: &str) -> BlockHash {
    BlockHash::from_hex(text).unwrap()
}

#[test]
fn genesis_blocks_built_from_parts_hash_to_cores() {
    for expected in &EXPECTED {
        let params = Params::for_network(expected.network);
        assert_eq!(params.network, expected.network);
        let genesis = &params.genesis;
        assert_eq!(genesis.block_hash().to_hex(), expected.genesis_hash, "{}", expected.name);
        assert_eq!(params.genesis_hash, genesis.block_hash());
        assert_eq!(genesis.header.merkle_root.to_hex(), expected.merkle_root, "{}", expected.name);
        assert_eq!(genesis.compute_merkle_root().root, genesis.header.merkle_root);
        assert_eq!(genesis.header.time, expected.time);
        assert_eq!(genesis.header.bits, expected.bits);
        assert_eq!(genesis.header.nonce, expected.nonce);
        assert_eq!(genesis.header.version, 1);
        assert_eq!(genesis.header.previous_block_hash, BlockHash::ZERO);
        assert_eq!(genesis.transactions.len(), 1);
        assert!(genesis.transactions[0].is_coinbase());
        assert_eq!(genesis.transactions[0].outputs[0].value, 50 * 100_000_000);
        assert!(check_proof_of_work(
            &params.genesis_hash,
            CompactTarget(genesis.header.bits),
            &params
        ));
    }
}

#[test]
fn mainnet_genesis_serialises_as_core_does() {
    let encoded = Params::main().genesis.encode();
    assert_eq!(encoded.len(), 285);
    let hex = ibex_primitives::hex::encode(&encoded);
    assert!(hex.starts_with("0100000000000000"));
    assert!(hex.ends_with("4104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000"));
}

#[test]
fn regtest_genesis_is_the_shared_chains_genesis() {
    let path = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix/getblock/000000.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let raw = json["verbosity0"].as_str().unwrap();
    let encoded = ibex_primitives::hex::encode(&Params::regtest().genesis.encode());
    assert_eq!(encoded, raw);
}

#[test]
fn names_ports_magic_and_data_directories() {
    for expected in &EXPECTED {
        let network = expected.network;
        assert_eq!(network.name(), expected.name);
        assert_eq!(network.to_string(), expected.name);
        assert_eq!(expected.name.parse::<Network>().unwrap(), network);
        assert_eq!(network.data_dir_name(), expected.data_dir);
        let params = Params::for_network(network);
        assert_eq!(params.message_start, expected.magic, "{}", expected.name);
        assert_eq!(params.default_port, expected.port);
    }
    assert_eq!(Network::Main.default_rpc_port(), 8332);
    assert_eq!(Network::Regtest.default_rpc_port(), 18443);
    for unknown in ["testnet", "Main", "mainnet", "testnet3", ""] {
        assert!(unknown.parse::<Network>().is_err(), "{unknown:?}");
    }
}

#[test]
fn custom_signet_derives_magic_from_its_challenge() {
    // OP_TRUE: anyone can sign.
    let params = Params::custom_signet(vec![0x51]);
    assert_eq!(params.signet_challenge.as_deref(), Some(&[0x51][..]));
    assert_eq!(params.genesis_hash, Params::signet().genesis_hash);
    assert_ne!(params.message_start, Params::signet().message_start);
    // The first four bytes of sha256d(0x01 0x51).
    let digest = ibex_primitives::hash::sha256d(&[0x01, 0x51]);
    assert_eq!(params.message_start, [digest[0], digest[1], digest[2], digest[3]]);
    assert!(params.default_assume_valid.is_none());
    assert!(params.minimum_chain_work.to_u256().is_zero());
    assert_eq!(
        ibex_primitives::hex::encode(Params::signet().signet_challenge.as_deref().unwrap()),
        ibex_primitives::params::DEFAULT_SIGNET_CHALLENGE
    );
}

#[test]
fn proof_of_work_settings() {
    let main = Params::main();
    assert_eq!(main.pow_limit.to_compact(), CompactTarget(0x1d00_ffff));
    assert_eq!(main.pow_target_spacing_seconds, 600);
    assert_eq!(main.pow_target_timespan_seconds, 14 * 24 * 60 * 60);
    assert_eq!(main.difficulty_adjustment_interval(), 2016);
    assert!(!main.allow_min_difficulty_blocks && !main.no_retargeting && !main.enforce_bip94);
    let testnet3 = Params::testnet3();
    assert!(testnet3.allow_min_difficulty_blocks && !testnet3.enforce_bip94);
    let testnet4 = Params::testnet4();
    assert!(testnet4.allow_min_difficulty_blocks && testnet4.enforce_bip94);
    let signet = Params::signet();
    assert_eq!(signet.pow_limit.to_compact(), CompactTarget(0x1e03_77ae));
    assert!(!signet.allow_min_difficulty_blocks);
    let regtest = Params::regtest();
    assert_eq!(regtest.pow_limit.to_compact(), CompactTarget(0x207f_ffff));
    assert_eq!(regtest.difficulty_adjustment_interval(), 144);
    assert!(regtest.no_retargeting && regtest.allow_min_difficulty_blocks);
    assert_eq!(regtest.subsidy_halving_interval, 150);
    assert_eq!(main.subsidy_halving_interval, 210_000);
}

#[test]
fn buried_deployment_heights() {
    let main = Params::main();
    let heights: Vec<u32> = BuriedDeployment::ALL
        .iter()
        .map(|&deployment| main.deployment_height(deployment))
        .collect();
    assert_eq!(heights, [227_931, 388_381, 363_725, 419_328, 481_824]);
    assert_eq!(
        main.bip34_hash,
        Some(hash("000000000000024b89b42a942fe0d9fea3bb44ab7bd1b19115dd6a759c0808b8"))
    );
    assert!(!main.deployment_active_at(BuriedDeployment::Segwit, Height::new(481_823)));
    assert!(main.deployment_active_at(BuriedDeployment::Segwit, Height::new(481_824)));
    let testnet3 = Params::testnet3();
    let heights: Vec<u32> = BuriedDeployment::ALL
        .iter()
        .map(|&deployment| testnet3.deployment_height(deployment))
        .collect();
    assert_eq!(heights, [21_111, 581_885, 330_776, 770_112, 834_624]);
    for network in [Network::Testnet4, Network::Signet] {
        let params = Params::for_network(network);
        for deployment in BuriedDeployment::ALL {
            assert_eq!(params.deployment_height(deployment), 1);
        }
        assert_eq!(params.bip34_hash, None);
    }
    let regtest = Params::regtest();
    let heights: Vec<u32> = BuriedDeployment::ALL
        .iter()
        .map(|&deployment| regtest.deployment_height(deployment))
        .collect();
    assert_eq!(heights, [1, 1, 1, 1, 0]);
}

#[test]
fn assume_valid_and_minimum_chain_work() {
    let cases = [
        (
            Params::main(),
            "00000000000000000000611fd22f2df7c8fbd0688745c3a6c3bb5109cc2a12cb",
            "0000000000000000000000000000000000000000dee8e2a309ad8a9820433c68",
        ),
        (
            Params::testnet3(),
            "0000000000000065c6c38258e201971a3fdfcc2ceee0dd6e85a6c022d45dee34",
            "0000000000000000000000000000000000000000000016dd270dd94fac1d7632",
        ),
        (
            Params::testnet4(),
            "000000000000000180a58e7fa3b0db84b5ea76377524894f53660d93ac839d9b",
            "00000000000000000000000000000000000000000000034a4690fe592dc49c7c",
        ),
        (
            Params::signet(),
            "000000128586e26813922680309f04e1de713c7542fee86ed908f56368aefe2e",
            "0000000000000000000000000000000000000000000000000000067d328e681a",
        ),
    ];
    for (params, assume_valid, work) in cases {
        assert_eq!(params.default_assume_valid, Some(hash(assume_valid)), "{}", params.network);
        assert_eq!(params.minimum_chain_work.to_string(), work, "{}", params.network);
    }
    let regtest = Params::regtest();
    assert_eq!(regtest.default_assume_valid, None);
    assert!(regtest.minimum_chain_work.to_u256().is_zero());
}

#[test]
fn script_flag_exceptions() {
    let main = Params::main();
    let bip16 = hash("00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22");
    let taproot = hash("0000000000000000000f14c35b2d841e986ab5441de8c585d5ffe55ea1e395ad");
    assert_eq!(main.script_flag_exception(&bip16), Some(ScriptFlagException::NoBaseFlags));
    assert_eq!(main.script_flag_exception(&taproot), Some(ScriptFlagException::P2shAndWitnessOnly));
    assert_eq!(main.script_flag_exception(&main.genesis_hash), None);
    let none = ScriptFlagException::NoBaseFlags;
    assert!(!none.verify_p2sh() && !none.verify_witness() && !none.verify_taproot());
    let p2sh_witness = ScriptFlagException::P2shAndWitnessOnly;
    assert!(p2sh_witness.verify_p2sh() && p2sh_witness.verify_witness());
    assert!(!p2sh_witness.verify_taproot());
    let testnet3 = Params::testnet3();
    let testnet_bip16 = hash("00000000dd30457c001f4095d208cc1296b0eed002427aa599874af7a432b105");
    assert_eq!(
        testnet3.script_flag_exception(&testnet_bip16),
        Some(ScriptFlagException::NoBaseFlags)
    );
    assert_eq!(testnet3.script_flag_exceptions.len(), 1);
    for network in [Network::Testnet4, Network::Signet, Network::Regtest] {
        assert!(Params::for_network(network).script_flag_exceptions.is_empty());
    }
}

#[test]
fn bip30_exceptions_and_the_bip34_shortcut() {
    assert_eq!(BIP34_IMPLIES_BIP30_LIMIT, 1_983_702);
    assert_eq!(BIP30_REPEAT_BLOCKS.map(|block| block.height), [91_842, 91_880]);
    assert_eq!(BIP30_UNSPENDABLE_BLOCKS.map(|block| block.height), [91_722, 91_812]);
    let repeat = hash("00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec");
    assert!(is_bip30_repeat(91_842, &repeat));
    assert!(!is_bip30_repeat(91_843, &repeat));
    let unspendable = hash("00000000000af0aed4792b1acee3d966af36cf5def14935db8de83d6f9306f2f");
    assert!(is_bip30_unspendable(91_812, &unspendable));
    assert!(!is_bip30_unspendable(91_812, &repeat));

    let main = Params::main();
    let some_block = hash("000000000000000000000c835b2adcaedc20fdf6ee440009c249452c726dafae");
    let bip34_block = main.bip34_hash.unwrap();
    // Before BIP34 every block is checked, except the two repeats.
    assert!(main.bip30_check_required(100_000, &some_block, None));
    assert!(!main.bip30_check_required(91_842, &repeat, None));
    // On the chain through Core's BIP34 block, checks stop...
    assert!(!main.bip30_check_required(702_861, &some_block, Some(&bip34_block)));
    // ...but not on another chain...
    assert!(main.bip30_check_required(702_861, &some_block, Some(&some_block)));
    // ...and start again at the limit.
    assert!(main.bip30_check_required(1_983_702, &some_block, Some(&bip34_block)));
    assert!(!main.bip30_check_required(1_983_701, &some_block, Some(&bip34_block)));
    // Chains without a BIP34 hash always check.
    let regtest = Params::regtest();
    assert!(regtest.bip30_check_required(500, &some_block, Some(&some_block)));
    // Where BIP34 binds every block after genesis, a repeated txid cannot
    // be valid: the engine looks BIP30 up only for failing blocks.
    for network in [Network::Testnet4, Network::Signet, Network::Regtest] {
        assert!(Params::for_network(network).bip34_from_first_block(), "{network:?}");
    }
    for network in [Network::Main, Network::Testnet3] {
        assert!(!Params::for_network(network).bip34_from_first_block(), "{network:?}");
    }
    let later = RegtestOptions::new().test_activation_height("bip34@2").unwrap().build();
    assert!(!later.bip34_from_first_block());
    let zero = RegtestOptions::new().test_activation_height("bip34@0").unwrap().build();
    assert!(zero.bip34_from_first_block());
}

#[test]
fn regtest_test_activation_heights() {
    let params = RegtestOptions::new()
        .test_activation_height("segwit@432")
        .unwrap()
        .test_activation_height("bip34@2")
        .unwrap()
        .test_activation_height("dersig@3")
        .unwrap()
        .test_activation_height("cltv@4")
        .unwrap()
        .test_activation_height("csv@5")
        .unwrap()
        .test_activation_height("csv@6")
        .unwrap()
        .build();
    assert_eq!(params.segwit_height, 432);
    assert_eq!(params.bip34_height, 2);
    assert_eq!(params.bip66_height, 3);
    assert_eq!(params.bip65_height, 4);
    // A later value for the same deployment wins.
    assert_eq!(params.csv_height, 6);
    assert_eq!(params.genesis_hash, Params::regtest().genesis_hash);
    assert_eq!(RegtestOptions::new().build(), Params::regtest());
    let bip94 = RegtestOptions::new().enforce_bip94(true).build();
    assert!(bip94.enforce_bip94);
    let maximum = RegtestOptions::new().test_activation_height("csv@2147483646").unwrap().build();
    assert_eq!(maximum.csv_height, 2_147_483_646);
    let zero = RegtestOptions::new().test_activation_height("bip34@0").unwrap().build();
    assert_eq!(zero.bip34_height, 0);
}

#[test]
fn regtest_test_activation_height_errors() {
    let error =
        |argument: &str| RegtestOptions::new().test_activation_height(argument).unwrap_err();
    assert!(matches!(error("segwit"), TestActivationHeightError::MissingSeparator { .. }));
    assert!(matches!(error("segwit@"), TestActivationHeightError::InvalidHeight { .. }));
    assert!(matches!(error("segwit@-1"), TestActivationHeightError::InvalidHeight { .. }));
    assert!(matches!(error("segwit@+1"), TestActivationHeightError::InvalidHeight { .. }));
    assert!(matches!(error("segwit@2147483647"), TestActivationHeightError::InvalidHeight { .. }));
    assert!(matches!(error("segwit@1@2"), TestActivationHeightError::InvalidHeight { .. }));
    // Height is checked before the name, as in Core.
    assert!(matches!(error("taproot@x"), TestActivationHeightError::InvalidHeight { .. }));
    assert!(matches!(error("taproot@1"), TestActivationHeightError::UnknownDeployment { .. }));
    assert!(matches!(error("bip65@1"), TestActivationHeightError::UnknownDeployment { .. }));
    assert!(matches!(error("SEGWIT@1"), TestActivationHeightError::UnknownDeployment { .. }));
    assert_eq!(
        error("nope@1").to_string(),
        "-testactivationheight=nope@1: name must be segwit, bip34, dersig, cltv or csv"
    );
}

#[test]
fn deployment_names() {
    let names: Vec<&str> =
        BuriedDeployment::ALL.iter().map(|deployment| deployment.name()).collect();
    assert_eq!(names, ["bip34", "bip65", "bip66", "csv", "segwit"]);
    for deployment in BuriedDeployment::ALL {
        let name = deployment.test_activation_name();
        assert_eq!(BuriedDeployment::from_test_activation_name(name), Some(deployment));
    }
}
