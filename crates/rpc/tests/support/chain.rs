//! The shared regtest chain Bitcoin Core 30 made (`../shared/chains/
//! core-wallet-mix/blocks/blk00000.dat`), with what a node's block index
//! and undo data would give the JSON writers: heights, the active chain,
//! median time past, chain work, and the coin each input spends (found by
//! indexing the outputs of the active chain's blocks, all in this file).

use ibex_blockstore::{block_file_path, read_block_file, read_obfuscation_key, Records};
use ibex_primitives::{
    Amount, BlockHash, BlockView, ChainWork, Height, OutPoint, Params, SpentCoin, Txid,
};
use ibex_rpc::BlockContext;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// The chain's directory in `../shared`.
pub fn chain_directory() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix")
}

/// The de-obfuscated `blk00000.dat`.
pub fn block_file_image() -> Vec<u8> {
    let blocks = chain_directory().join("blocks");
    let obfuscation = read_obfuscation_key(&blocks).unwrap();
    read_block_file(&block_file_path(&blocks, 0), &obfuscation).unwrap()
}

/// An output a later input may spend (its script copied: a transaction
/// view lends its scripts only as long as the block view).
struct Coin {
    value_satoshis: i64,
    script_pubkey: Vec<u8>,
    height: u32,
    is_coinbase: bool,
}

/// Every block of the file, parsed, with the active chain worked out.
pub struct Chain<'a> {
    blocks: HashMap<BlockHash, BlockView<'a>>,
    heights: HashMap<BlockHash, u32>,
    /// The active chain, by height.
    active: Vec<BlockHash>,
    coins: HashMap<OutPoint, Coin>,
    /// Outputs the active chain's blocks spend.
    spent: HashSet<OutPoint>,
}

/// An output as the coins database would hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoinRecord {
    pub value_satoshis: i64,
    pub script_pubkey: Vec<u8>,
    pub height: u32,
    pub is_coinbase: bool,
}

impl<'a> Chain<'a> {
    /// Parses every record of `image` and indexes the active chain.
    pub fn load(image: &'a [u8]) -> Chain<'a> {
        let magic = Params::regtest().message_start;
        let blocks: HashMap<BlockHash, BlockView<'a>> = Records::new(image, magic)
            .map(|record| BlockView::parse(record.bytes).unwrap())
            .map(|block| (block.block_hash(), block))
            .collect();
        let mut heights = HashMap::new();
        for hash in blocks.keys() {
            height_of(*hash, &blocks, &mut heights);
        }
        let tip = heights.iter().max_by_key(|(hash, height)| (**height, **hash)).unwrap().0;
        let mut active = vec![*tip];
        while let Some(parent) =
            blocks.get(active.last().unwrap()).map(|b| b.header().previous_block_hash)
        {
            if !blocks.contains_key(&parent) {
                break;
            }
            active.push(parent);
        }
        active.reverse();
        assert_eq!(heights[&active[0]], 0, "the active chain starts at genesis");
        let mut chain =
            Chain { blocks, heights, active, coins: HashMap::new(), spent: HashSet::new() };
        chain.index_coins();
        chain
    }

    fn index_coins(&mut self) {
        for (height, hash) in self.active.iter().enumerate() {
            let block = &self.blocks[hash];
            for (index, transaction) in block.transactions().enumerate() {
                if index != 0 {
                    self.spent
                        .extend(transaction.inputs().iter().map(|input| input.previous_output()));
                }
                let txid: Txid = transaction.txid();
                for (vout, output) in transaction.outputs().iter().enumerate() {
                    let coin = Coin {
                        value_satoshis: output.value,
                        script_pubkey: output.script_pubkey.to_vec(),
                        height: height as u32,
                        is_coinbase: index == 0,
                    };
                    self.coins.insert(OutPoint { txid, vout: vout as u32 }, coin);
                }
            }
        }
    }

    /// The block with this hash.
    pub fn block(&self, hash: &BlockHash) -> &BlockView<'a> {
        &self.blocks[hash]
    }

    /// The active chain's hashes, by height.
    pub fn active(&self) -> &[BlockHash] {
        &self.active
    }

    /// Every block of the file, stale branches included.
    pub fn hashes(&self) -> impl Iterator<Item = &BlockHash> {
        self.blocks.keys()
    }

    /// The height of any block of the file.
    pub fn height(&self, hash: &BlockHash) -> Option<u32> {
        self.heights.get(hash).copied()
    }

    /// A block's parent, when the file holds it.
    pub fn parent(&self, hash: &BlockHash) -> Option<BlockHash> {
        let parent = self.blocks.get(hash)?.header().previous_block_hash;
        self.blocks.contains_key(&parent).then_some(parent)
    }

    /// Whether a block is in the active chain.
    pub fn is_active(&self, hash: &BlockHash) -> bool {
        self.height(hash).is_some_and(|height| self.active.get(height as usize) == Some(hash))
    }

    /// The block and its ancestors in the file, newest first.
    pub fn ancestry(&self, hash: &BlockHash) -> Vec<BlockHash> {
        let mut ancestry = vec![*hash];
        while let Some(parent) = ancestry.last().and_then(|last| self.parent(last)) {
            ancestry.push(parent);
        }
        ancestry
    }

    /// Total work of the chain ending at any block of the file.
    pub fn chain_work(&self, hash: &BlockHash) -> ChainWork {
        self.ancestry(hash).iter().fold(ChainWork::ZERO, |total, ancestor| {
            total.wrapping_add(ChainWork::from_bits(self.blocks[ancestor].header().bits.into()))
        })
    }

    /// Median time past of any block of the file and its ten ancestors.
    pub fn median_time_past(&self, hash: &BlockHash) -> i64 {
        let mut times: Vec<i64> = std::iter::successors(Some(*hash), |block| self.parent(block))
            .take(11)
            .map(|ancestor| i64::from(self.blocks[&ancestor].header().time))
            .collect();
        times.sort_unstable();
        times[times.len() / 2]
    }

    /// The output at `outpoint` if the active chain created it and did not
    /// spend it.
    pub fn unspent(&self, outpoint: &OutPoint) -> Option<CoinRecord> {
        if self.spent.contains(outpoint) {
            return None;
        }
        self.coins.get(outpoint).map(|coin| CoinRecord {
            value_satoshis: coin.value_satoshis,
            script_pubkey: coin.script_pubkey.clone(),
            height: coin.height,
            is_coinbase: coin.is_coinbase,
        })
    }

    /// Every coin of the UTXO set at the tip, in outpoint order: the
    /// active chain's outputs it did not spend, less the genesis block's
    /// (never spendable) and the provably unspendable ones (never added).
    pub fn unspent_coins(&self) -> Vec<(OutPoint, CoinRecord)> {
        let mut coins: Vec<(OutPoint, CoinRecord)> = self
            .coins
            .iter()
            .filter(|(outpoint, coin)| {
                !self.spent.contains(outpoint)
                    && coin.height > 0
                    && coin.script_pubkey.first() != Some(&0x6a)
                    && coin.script_pubkey.len() <= 10_000
            })
            .map(|(outpoint, _)| (*outpoint, self.unspent(outpoint).unwrap()))
            .collect();
        coins.sort_by_key(|(outpoint, _)| *outpoint);
        coins
    }

    /// Number of blocks in the file, stale branches included.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// What the block index says about an active-chain block.
    pub fn context(&self, hash: &BlockHash) -> BlockContext {
        let height = self.heights[hash];
        assert_eq!(self.active[height as usize], *hash, "sample blocks are in the active chain");
        let ancestors = &self.active[..=height as usize];
        let mut times: Vec<i64> = ancestors
            .iter()
            .rev()
            .take(11)
            .map(|ancestor| i64::from(self.blocks[ancestor].header().time))
            .collect();
        times.sort_unstable();
        let chain_work = ancestors.iter().fold(ChainWork::ZERO, |total, ancestor| {
            total.wrapping_add(ChainWork::from_bits(self.blocks[ancestor].header().bits.into()))
        });
        BlockContext {
            height,
            confirmations: self.active.len() as i64 - i64::from(height),
            median_time_seconds: times[times.len() / 2],
            chain_work,
            next_block_hash: self.active.get(height as usize + 1).copied(),
            transaction_count: self.blocks[hash].transaction_count() as u64,
        }
    }

    /// The coins the block's non-coinbase inputs spend, in block order
    /// (what Core's undo data holds).
    pub fn spent_coins(&self, hash: &BlockHash) -> Vec<SpentCoin<'_>> {
        let block = &self.blocks[hash];
        block
            .transactions()
            .skip(1)
            .flat_map(|transaction| {
                transaction.inputs().iter().map(|input| input.previous_output())
            })
            .map(|outpoint| {
                let coin = &self.coins[&outpoint];
                SpentCoin {
                    value: Amount::from_sat(coin.value_satoshis).unwrap(),
                    script_pubkey: &coin.script_pubkey,
                    height: Height::new(coin.height),
                    is_coinbase: coin.is_coinbase,
                }
            })
            .collect()
    }
}

/// The height of `hash`, from its ancestors' (iteratively: chains are long).
fn height_of(
    hash: BlockHash,
    blocks: &HashMap<BlockHash, BlockView<'_>>,
    heights: &mut HashMap<BlockHash, u32>,
) -> u32 {
    let mut path = Vec::new();
    let mut cursor = hash;
    let mut base = loop {
        if let Some(height) = heights.get(&cursor) {
            break *height;
        }
        path.push(cursor);
        match blocks.get(&cursor).map(|block| block.header().previous_block_hash) {
            Some(parent) if blocks.contains_key(&parent) => cursor = parent,
            // Genesis: its parent is not in the file.
            _ => {
                let genesis = path.pop().unwrap();
                heights.insert(genesis, 0);
                break 0;
            }
        }
    };
    for ancestor in path.into_iter().rev() {
        base += 1;
        heights.insert(ancestor, base);
    }
    heights[&hash]
}
