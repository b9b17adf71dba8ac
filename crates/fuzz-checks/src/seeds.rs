//! Seed inputs for every target, made with the project's own encoders (so
//! they follow the formats as the node writes them) plus hand-picked edge
//! cases. `ibex-fuzz-seeds` writes them to `fuzz/regressions/`, where the
//! `regressions` test replays them and checks they are all there.

use ibex_blockstore::BlockPosition;
use ibex_chainstate::compress::write_script;
use ibex_chainstate::index_store::encode_entry;
use ibex_chainstate::snapshot::{SnapshotMetadata, SnapshotWriter};
use ibex_chainstate::{BlockIndexEntry, BlockStatus, BlockUndo, Coin, TransactionUndo};
use ibex_p2p::addrman::file::encode as encode_address_file;
use ibex_p2p::addrman::{
    AddressCandidate, AddressManager, AddressNetwork, AddressPolicy, AddressSource, PeerAddress,
};
use ibex_p2p::messages::feature::FeatureMessage;
use ibex_p2p::messages::spent_coins::{
    GetSpentCoins, IndexedSpentCoin, SpentCoins, BLOCK_SPENT_COINS_FEATURE_DATA,
    BLOCK_SPENT_COINS_FEATURE_ID,
};
use ibex_p2p::{encode_message, Inventory, InventoryType, NetworkMessage, ServiceFlags};
use ibex_primitives::hints::{HintsVersion, HintsWriter};
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{
    Amount, BlockHash, ChainWork, Header, Height, Network, OutPoint, Params, SpentCoinBuf, Txid,
    MAX_MONEY,
};

use crate::wire::MAGIC;

/// One seed input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// The target it is for.
    pub target: &'static str,
    /// Its file name in `fuzz/regressions/<target>/` (starts with `seed-`).
    pub name: String,
    /// The input.
    pub bytes: Vec<u8>,
}

fn seed(target: &'static str, name: &str, bytes: impl Into<Vec<u8>>) -> Seed {
    Seed { target, name: format!("seed-{name}"), bytes: bytes.into() }
}

/// Every target's seeds.
pub fn all() -> Vec<Seed> {
    let mut seeds = Vec::new();
    seeds.extend(wire_seeds());
    seeds.extend(chain_data_seeds());
    seeds.extend(hints_seeds());
    seeds.extend(block_index_seeds());
    seeds.extend(client_seeds());
    seeds
}

fn wire_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for network in Network::ALL {
        let genesis = Params::for_network(network).genesis;
        let name = network.name();
        seeds.push(seed("block", &format!("genesis-{name}"), genesis.encode()));
        let coinbase = genesis.transactions[0].encode();
        seeds.push(seed("transaction", &format!("genesis-coinbase-{name}"), coinbase));
    }
    let genesis = Params::regtest().genesis;
    let mut spending = genesis.transactions[0].clone();
    spending.inputs[0].witness = vec![vec![0x30; 72], vec![0x02; 33]];
    seeds.push(seed("transaction", "with-witness", spending.encode()));
    let messages = [
        ("ping", NetworkMessage::Ping { nonce: 7 }),
        ("verack", NetworkMessage::Verack),
        ("block", NetworkMessage::Block(genesis.encode())),
        (
            "inventory",
            NetworkMessage::Inventory(vec![Inventory {
                inventory_type: InventoryType::BLOCK,
                hash: ibex_primitives::Hash256(Params::regtest().genesis_hash.0),
            }]),
        ),
    ];
    let spent_coins = SpentCoins {
        block_hash: Params::regtest().genesis_hash,
        coins: [
            vec![0x51],
            vec![0x00, 0x14, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7],
        ]
        .into_iter()
        .enumerate()
        .map(|(index, script_pubkey)| IndexedSpentCoin {
            input_index: index as u32,
            coin: SpentCoinBuf {
                value: Amount::from_sat(5_000 * (index as i64 + 1)).expect("in range"),
                script_pubkey,
                height: Height::new(101),
                is_coinbase: index == 0,
            },
        })
        .collect(),
    };
    let mut messages = messages.to_vec();
    messages.extend([
        (
            "feature",
            NetworkMessage::Feature(FeatureMessage::new(
                BLOCK_SPENT_COINS_FEATURE_ID,
                BLOCK_SPENT_COINS_FEATURE_DATA,
            )),
        ),
        (
            "getbspent",
            NetworkMessage::GetSpentCoins(GetSpentCoins {
                block_hash: Params::regtest().genesis_hash,
                cutoff_height: 50,
            }),
        ),
        ("bspent", NetworkMessage::SpentCoins(spent_coins)),
    ]);
    for (name, message) in &messages {
        let mut frame = vec![0];
        encode_message(MAGIC, message, &mut frame).expect("a small message");
        seeds.push(seed("p2p_message_decode", name, frame.clone()));
        frame[0] = 7;
        seeds.push(seed("p2p_message_decode", &format!("{name}-in-pieces"), frame));
    }
    for mode in 0..4u8 {
        let data = [&[mode, 0][..], &[0x02, 0x05, 0x01, 0x02, 0x03, 0x04, 0x05]].concat();
        seeds.push(seed("p2p_v2_handshake", &format!("mode-{mode}"), data));
    }
    let mut manager = AddressManager::new(AddressPolicy::default(), &[3; 32]);
    let candidates: Vec<AddressCandidate> = (1..=20u8)
        .map(|byte| AddressCandidate {
            address: PeerAddress::new(AddressNetwork::Ipv4, &[23, byte, 7, 9], 8333)
                .expect("4 bytes"),
            services: ServiceFlags::NETWORK,
            time_seconds: 1_700_000_000,
        })
        .collect();
    seeds.push(seed("address_file", "empty", encode_address_file(&manager, MAGIC)));
    manager.add(&candidates, AddressSource::named("seed.example"), 0, 1_700_000_100);
    seeds.push(seed("address_file", "twenty-ipv4", encode_address_file(&manager, MAGIC)));
    let bodies = [
        ("getblockcount", r#"{"jsonrpc":"2.0","id":1,"method":"getblockcount"}"#),
        (
            "batch",
            r#"[{"id":1,"method":"getbestblockhash"},{"id":2,"method":"getblockhash","params":[0]}]"#,
        ),
        (
            "getblock",
            r#"{"id":"x","method":"getblock","params":{"blockhash":"0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206","verbosity":2}}"#,
        ),
        ("not-json", "{\"id\":1,"),
    ];
    for (name, body) in bodies {
        seeds.push(seed("rpc_request", name, body));
    }
    seeds
}

fn p2pkh(byte: u8) -> Vec<u8> {
    [&[0x76, 0xa9, 20][..], &[byte; 20], &[0x88, 0xac]].concat()
}

/// Scripts of every compressed form and the uncompressed ones around them.
fn sample_scripts() -> Vec<(&'static str, Vec<u8>)> {
    // The generator point, uncompressed and compressed (on the curve).
    let x = ibex_primitives::hex::decode(
        "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798",
    )
    .expect("hex");
    let y = ibex_primitives::hex::decode(
        "483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8",
    )
    .expect("hex");
    let compressed_key = [&[0x02][..], &x].concat();
    let uncompressed_key = [&[0x04][..], &x, &y].concat();
    vec![
        ("empty", Vec::new()),
        ("p2pkh", p2pkh(0x11)),
        ("p2sh", [&[0xa9, 20][..], &[0x22; 20], &[0x87]].concat()),
        ("p2pk-compressed", [&[33][..], &compressed_key, &[0xac]].concat()),
        ("p2pk-uncompressed", [&[65][..], &uncompressed_key, &[0xac]].concat()),
        ("p2pk-off-curve", [&[65, 0x04][..], &[0x01; 64], &[0xac]].concat()),
        ("p2wpkh", [&[0x00, 20][..], &[0x33; 20]].concat()),
        ("p2tr", [&[0x51, 32][..], &[0x44; 32]].concat()),
        ("op-return", vec![0x6a, 0x04, 1, 2, 3, 4]),
        ("bare-multisig", [&[0x51, 33][..], &compressed_key, &[0x51, 0xae]].concat()),
        ("long", vec![0x61; 300]),
    ]
}

fn coin(satoshis: i64, script: &[u8], height: u32, is_coinbase: bool) -> Coin {
    let amount = Amount::from_sat(satoshis).expect("a valid amount");
    Coin::new(amount, script, height, is_coinbase).expect("a 31-bit height")
}

fn chain_data_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let amounts = [0, 1, 546, 5_000_000_000, 2_099_999_997_690_000, MAX_MONEY];
    let heights = [0, 1, 840_000, ibex_chainstate::COIN_HEIGHT_MAX];
    let mut spent = Vec::new();
    for (index, (name, script)) in sample_scripts().into_iter().enumerate() {
        let satoshis = amounts[index % amounts.len()];
        let height = heights[index % heights.len()];
        let coin = coin(satoshis, &script, height, index % 3 == 0);
        seeds.push(seed("coin", name, coin.encode()));
        let mut compressed = Vec::new();
        write_script(&mut compressed, &script);
        seeds.push(seed("compressed_script", &format!("compressed-{name}"), compressed));
        seeds.push(seed("compressed_script", &format!("script-{name}"), script));
        spent.push(coin);
    }
    for satoshis in amounts {
        let compressed = ibex_chainstate::compress::compress_amount(satoshis as u64);
        seeds.push(seed(
            "compressed_amount",
            &format!("amount-{satoshis}"),
            satoshis.to_le_bytes(),
        ));
        seeds.push(seed(
            "compressed_amount",
            &format!("compressed-{satoshis}"),
            compressed.to_le_bytes(),
        ));
    }
    let undo = |transactions: &[&[Coin]]| {
        let transactions =
            transactions.iter().map(|spent| TransactionUndo { spent: spent.to_vec() }).collect();
        BlockUndo { transactions }.encode()
    };
    seeds.extend(snapshot_seeds(&spent));
    seeds.push(seed("undo_record", "empty", undo(&[])));
    seeds.push(seed("undo_record", "one-coin", undo(&[&spent[1..2]])));
    seeds.push(seed("undo_record", "every-script", undo(&[&spent[..4], &spent[4..], &[]])));
    seeds
}

/// A chain of `length` regtest headers from genesis, each one above the last.
fn header_chain(length: u32) -> Vec<(BlockHash, Header)> {
    let mut header = Params::regtest().genesis.header;
    let mut chain = Vec::new();
    for height in 0..length {
        if height > 0 {
            header = Header {
                previous_block_hash: header.block_hash(),
                time: header.time + 600,
                nonce: height,
                ..header
            };
        }
        chain.push((header.block_hash(), header));
    }
    chain
}

fn index_entry(hash: BlockHash, header: Header, height: u32) -> BlockIndexEntry {
    let mut status = BlockStatus::new_header(None);
    let stored = height % 2 == 0;
    if stored {
        status.set_have_data();
        status.set_have_undo();
        status.raise_validity(BlockStatus::VALID_SCRIPTS);
    }
    let position = BlockPosition { file_number: height / 3, data_offset: u64::from(height) * 285 };
    BlockIndexEntry {
        hash,
        header,
        height,
        chain_work: ChainWork::ZERO,
        parent: None,
        status,
        transaction_count: if stored { 1 + height } else { 0 },
        chain_transaction_count: 0,
        block_position: stored.then_some(position),
        undo_position: (stored && height > 0).then_some(position),
        sequence: u64::from(height) + 1,
    }
}

fn block_index_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let chain = header_chain(5);
    let mut records = Vec::new();
    for (height, (hash, header)) in (0u32..).zip(&chain) {
        let value = encode_entry(&index_entry(*hash, *header, height));
        let entry = [&hash.0[..], &value].concat();
        seeds.push(seed("block_index_entry", &format!("height-{height}"), entry));
        records.extend_from_slice(&hash.0);
        records.push(u8::try_from(value.len()).expect("a record is under 256 bytes"));
        records.extend_from_slice(&value);
    }
    seeds.push(seed("block_index_records", "chain-of-5", records.clone()));
    // A fork: a second block at height 1 beside the chain's.
    let (genesis_hash, genesis_header) = chain[0];
    let sibling = Header { previous_block_hash: genesis_hash, nonce: 99, ..genesis_header };
    let value = encode_entry(&index_entry(sibling.block_hash(), sibling, 1));
    records.extend_from_slice(&sibling.block_hash().0);
    records.push(u8::try_from(value.len()).expect("a record is under 256 bytes"));
    records.extend_from_slice(&value);
    seeds.push(seed("block_index_records", "chain-of-5-and-a-fork", records));
    seeds
}

fn client_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let files = [
        (
            "sections",
            "# comment\nregtest=1\n[regtest]\nrpcport=18443\ndbcache=300\n[main]\nnolisten=1\n",
        ),
        ("prefixed", "regtest.dbcache=100\nmain.maxconnections=8\nnoblocksonly=0\n"),
        ("password", "rpcuser=alice\nrpcpassword=secret\n"),
        ("errors", "-regtest=1\n"),
    ];
    for (name, text) in files {
        seeds.push(seed("config_file", name, text));
    }
    let command_lines = [
        ("regtest", "-regtest\n-dbcache=64\n-assumevalid=0\0[regtest]\nrpcport=18999\n"),
        ("signet", "-signet\n-par=2\n-stopatheight=10\0"),
        ("negated", "-nolisten\n-noconnect=0\0listen=1\n"),
        ("conflicting", "-regtest\n-chain=main\0"),
        ("help", "-help\n-version\0"),
    ];
    for (name, text) in command_lines {
        seeds.push(seed("command_line", name, text));
    }
    let genesis = Params::regtest().genesis_hash.to_hex();
    let coinbase = Params::regtest().genesis.transactions[0].txid();
    let coinbase_hex = coinbase.to_hex();
    let paths = [
        ("chaininfo", "/rest/chaininfo.json".to_owned()),
        ("headers-query", format!("/rest/headers/{genesis}.json?count=3")),
        ("headers-old", format!("/rest/headers/2/{genesis}.hex")),
        ("block", format!("/rest/block/{genesis}.json")),
        ("block-txids", format!("/rest/block/notxdetails/{genesis}.bin")),
        ("height", "/rest/blockhashbyheight/0.hex".to_owned()),
        ("utxos-path", format!("/rest/getutxos/checkmempool/{coinbase_hex}-0.json")),
        ("unknown", "/rest/mempool/info.json".to_owned()),
    ];
    for (name, path) in paths {
        seeds.push(seed("rest_request", name, path));
    }
    let mut body = vec![2];
    for vout in [0u32, 1] {
        body.extend_from_slice(coinbase.as_bytes());
        body.extend_from_slice(&vout.to_le_bytes());
    }
    let path_and_body = [&b"/rest/getutxos.bin\0"[..], &body].concat();
    seeds.push(seed("rest_request", "utxos-body", path_and_body));
    seeds.push(seed("getutxos_body", "two-outpoints", body));
    let mut sixteen = vec![16];
    for vout in 0..16u32 {
        sixteen.extend_from_slice(coinbase.as_bytes());
        sixteen.extend_from_slice(&vout.to_le_bytes());
    }
    seeds.push(seed("getutxos_body", "sixteen-outpoints", sixteen));
    seeds.push(seed("getutxos_body", "count-beyond-bytes", [0xfd, 0xff, 0x00]));
    seeds
}

/// Snapshots of `coins` (every sample script), grouped by transaction as
/// Core writes them, and an empty one.
fn snapshot_seeds(coins: &[Coin]) -> Vec<Seed> {
    let snapshot = |coins: &[(OutPoint, Coin)]| {
        let metadata = SnapshotMetadata {
            message_start: Params::regtest().message_start,
            base_block: Params::regtest().genesis_hash,
            coin_count: coins.len() as u64,
        };
        let mut writer = SnapshotWriter::new(Vec::new(), &metadata).expect("a header writes");
        for (outpoint, coin) in coins {
            writer.add(outpoint, coin).expect("coins in key order");
        }
        writer.finish().expect("writing to memory").0
    };
    // Two coins a transaction, transaction ids ascending; only coins a
    // snapshot based at the target's height can hold.
    let keyed: Vec<(OutPoint, Coin)> = coins
        .iter()
        .filter(|coin| {
            !is_unspendable(coin.script_pubkey())
                && coin.height() <= crate::chain_data::SNAPSHOT_BASE_HEIGHT
        })
        .enumerate()
        .map(|(index, coin)| {
            let txid = Txid([(index / 2) as u8 + 1; 32]);
            (OutPoint { txid, vout: (index % 2) as u32 }, coin.clone())
        })
        .collect();
    vec![
        seed("utxo_snapshot", "empty", snapshot(&[])),
        seed("utxo_snapshot", "every-script", snapshot(&keyed)),
    ]
}

/// Hints files in both codings: a few blocks with no, one and many unspent
/// outputs (consecutive runs, gaps over a byte, one large index).
fn hints_seeds() -> Vec<Seed> {
    let blocks: Vec<Vec<u32>> =
        vec![vec![0], vec![], (0..40).collect(), (0..200).step_by(7).collect(), vec![3, 60_000]];
    [(HintsVersion::EliasFano, "elias-fano"), (HintsVersion::GapList, "gap-list")]
        .into_iter()
        .map(|(version, name)| {
            let mut writer = HintsWriter::new(version, blocks.len() as u32);
            for indices in &blocks {
                writer.push_block(indices);
            }
            seed("hints_file", name, writer.finish().expect("every block written"))
        })
        .collect()
}
