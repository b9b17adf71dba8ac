//! A node that holds the regtest genesis block and nothing else: the
//! backend the JSON-RPC and REST targets answer from.

use std::time::Duration;

use ibex_primitives::txoutset::{TxOutSetHashType, TxOutSetHasher};
use ibex_primitives::{Amount, BlockHash, ChainWork, Height, OutPoint, Params};
use ibex_rpc::backend::UnspentOutput;
use ibex_rpc::backend::{
    BackendError, BlockData, BlockEntry, BlockchainInfo, ChainTip, ChainTipStatus, CoinsAnswer,
    CoinsCacheSizes, DeploymentInfo, NetTotals, NetworkInfo, NodeBackend, PeerReport, StoredBlock,
    TipRef, TxOutSetInfo,
};
use ibex_rpc::deployment::{deployment_info, Ancestry};

/// A node that has the regtest genesis block and nothing else.
pub(crate) struct GenesisNode {
    params: Params,
    genesis_bytes: Vec<u8>,
}

impl GenesisNode {
    pub(crate) fn new() -> GenesisNode {
        let params = Params::regtest();
        let genesis_bytes = params.genesis.encode();
        GenesisNode { params, genesis_bytes }
    }

    fn tip_ref(&self) -> TipRef {
        TipRef { hash: self.params.genesis_hash, height: 0 }
    }

    fn entry(&self) -> BlockEntry {
        let header = self.params.genesis.header;
        BlockEntry {
            hash: self.params.genesis_hash,
            header,
            height: 0,
            chain_work: ChainWork::from_bits(header.bits.into()),
            median_time_past: i64::from(header.time),
            transaction_count: 1,
            data: BlockData::Stored { have_undo: false },
            in_active_chain: true,
            next_block_hash: None,
            tip_height: 0,
        }
    }
}

impl Ancestry for GenesisNode {
    fn version(&self, _height: u32) -> i32 {
        self.params.genesis.header.version
    }

    fn median_time_past(&self, _height: u32) -> i64 {
        i64::from(self.params.genesis.header.time)
    }
}

impl NodeBackend for GenesisNode {
    fn tip(&self) -> Result<TipRef, BackendError> {
        Ok(self.tip_ref())
    }

    fn block_hash_at(&self, height: u32) -> Result<Option<BlockHash>, BackendError> {
        Ok((height == 0).then_some(self.params.genesis_hash))
    }

    fn block_entry(&self, hash: &BlockHash) -> Result<Option<BlockEntry>, BackendError> {
        Ok((*hash == self.params.genesis_hash).then(|| self.entry()))
    }

    fn block(
        &self,
        hash: &BlockHash,
        _include_spent_coins: bool,
    ) -> Result<Option<StoredBlock>, BackendError> {
        Ok((*hash == self.params.genesis_hash).then(|| StoredBlock {
            entry: self.entry(),
            bytes: self.genesis_bytes.clone(),
            spent_coins: None,
        }))
    }

    fn blockchain_info(&self) -> Result<BlockchainInfo, BackendError> {
        Ok(BlockchainInfo {
            tip: self.entry(),
            best_header_height: Some(0),
            verification_progress: 1.0,
            initial_block_download: true,
            size_on_disk_bytes: self.genesis_bytes.len() as u64,
            prune: None,
            signet_challenge: None,
            warnings: Vec::new(),
        })
    }

    fn chain_tips(&self) -> Result<Vec<ChainTip>, BackendError> {
        let hash = self.params.genesis_hash;
        Ok(vec![ChainTip { height: 0, hash, branch_length: 0, status: ChainTipStatus::Active }])
    }

    fn coins(
        &self,
        outpoints: &[OutPoint],
        _include_mempool: bool,
    ) -> Result<CoinsAnswer, BackendError> {
        // The genesis coinbase's output is the one coin, so that replies
        // with coins are reached too.
        let genesis_coinbase = &self.params.genesis.transactions[0];
        let coinbase_txid = genesis_coinbase.txid();
        let coins = outpoints
            .iter()
            .map(|outpoint| {
                let output = genesis_coinbase.outputs.get(outpoint.vout as usize)?;
                let value = Amount::from_sat(output.value).ok()?;
                (outpoint.txid == coinbase_txid).then(|| UnspentOutput {
                    value,
                    script_pubkey: output.script_pubkey.clone(),
                    height: Some(Height::ZERO),
                    is_coinbase: true,
                })
            })
            .collect();
        Ok(CoinsAnswer { tip: self.tip_ref(), coins })
    }

    fn wait_for_tip_change(
        &self,
        _known_tip: &BlockHash,
        _timeout: Duration,
    ) -> Result<TipRef, BackendError> {
        Ok(self.tip_ref())
    }

    fn txoutset_info(&self, hash_type: TxOutSetHashType) -> Result<TxOutSetInfo, BackendError> {
        Ok(TxOutSetInfo {
            height: 0,
            best_block: self.params.genesis_hash,
            stats: TxOutSetHasher::new(hash_type).finish(),
            disk_size_bytes: 0,
        })
    }

    fn deployment_info(
        &self,
        hash: Option<&BlockHash>,
    ) -> Result<Option<DeploymentInfo>, BackendError> {
        let genesis = self.params.genesis_hash;
        if hash.is_some_and(|hash| *hash != genesis) {
            return Ok(None);
        }
        Ok(Some(deployment_info(&self.params, genesis, 0, self)))
    }

    fn coins_cache_sizes(&self) -> CoinsCacheSizes {
        CoinsCacheSizes { coins_database_bytes: 8 << 20, coins_tip_bytes: 440 << 20 }
    }

    fn network_info(&self) -> Result<NetworkInfo, BackendError> {
        Err(BackendError::P2pDisabled)
    }

    fn peers(&self) -> Result<Vec<PeerReport>, BackendError> {
        Err(BackendError::P2pDisabled)
    }

    fn net_totals(&self) -> Result<NetTotals, BackendError> {
        Err(BackendError::P2pDisabled)
    }

    fn connection_count(&self) -> Result<usize, BackendError> {
        Err(BackendError::P2pDisabled)
    }

    fn request_shutdown(&self) {}
}
