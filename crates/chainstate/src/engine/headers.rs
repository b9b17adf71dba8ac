//! Headers first: before an import reads whole blocks, every header in
//! the files is indexed (proof of work and header context checked, as
//! Core's `AcceptBlockHeader`), so the best header is known from the start.
//! `-assumevalid` needs it: Core skips a block's scripts only when the
//! assumed-valid block and a best header two weeks of work beyond it are
//! already known, which a node syncing from peers learns from headers
//! first, and Core's `-reindex` by indexing every block before connecting.

use std::collections::{HashMap, VecDeque};

use ibex_primitives::{BlockHash, Header};

use super::Chainstate;
use crate::error::ChainstateError;
use crate::stages::headers::header_acceptable;

impl Chainstate {
    /// Indexes the `headers` (in any order) that connect to the index and
    /// pass the header checks; a header failing them is left out with its
    /// descendants (their blocks are judged, and logged, when read).
    /// Returns how many were added.
    pub fn accept_headers(&mut self, headers: &[Header]) -> Result<usize, ChainstateError> {
        let genesis_hash = self.shared.options.params.genesis_hash;
        if self.shared.index.get(&genesis_hash).is_none() {
            if let Some(genesis) = headers.iter().find(|header| header.block_hash() == genesis_hash)
            {
                let id = self.shared.index.insert_header(genesis, genesis_hash)?;
                self.consider_best_header(id);
            }
        }
        let mut children: HashMap<BlockHash, Vec<(BlockHash, &Header)>> = HashMap::new();
        let mut ready = VecDeque::new();
        for header in headers {
            let hash = header.block_hash();
            if self.shared.index.get(&hash).is_some() {
                continue;
            }
            if self.shared.index.get(&header.previous_block_hash).is_some() {
                ready.push_back((hash, header));
            } else {
                children.entry(header.previous_block_hash).or_default().push((hash, header));
            }
        }
        let mut added = 0;
        let now = crate::stages::headers::now_seconds(self.shared.mock_time_seconds);
        while let Some((hash, header)) = ready.pop_front() {
            if self.shared.index.get(&hash).is_some()
                || !header_acceptable(
                    &self.shared.index,
                    &self.shared.options.params,
                    header,
                    &hash,
                    now,
                )
            {
                continue;
            }
            let id = self.shared.index.insert_header(header, hash)?;
            self.consider_best_header(id);
            added += 1;
            ready.extend(children.remove(&hash).unwrap_or_default());
        }
        Ok(added)
    }
}

/// Why `submitheader` refused a header (Core's `RPC_VERIFY_ERROR`s).
#[derive(Debug, thiserror::Error)]
pub enum HeaderRefusal {
    /// Its parent is not indexed.
    #[error("Must submit previous header ({parent}) first")]
    MissingParent {
        /// The parent's hash.
        parent: BlockHash,
    },
    /// It breaks a header rule; the reason is Core's.
    #[error("{}", .rejection.reject_reason())]
    Invalid {
        /// The rule.
        rejection: ibex_consensus::BlockRejection,
    },
    /// Storage failed (the engine stops).
    #[error(transparent)]
    Chainstate(#[from] ChainstateError),
    /// The engine stopped before it could answer.
    #[error("the engine has stopped")]
    EngineStopped,
}

impl Chainstate {
    /// One header given by an operator (Core's `submitheader`): indexed
    /// when its parent is and it passes the header checks, else the
    /// reason, as Core's `ProcessNewBlockHeaders` gives it.
    pub fn submit_header(&mut self, header: &Header) -> Result<(), HeaderRefusal> {
        use ibex_consensus::BlockRejection;
        let hash = header.block_hash();
        let index = &self.shared.index;
        if let Some(id) = index.get(&hash) {
            if index.entry(id).status.is_failed() {
                return Err(HeaderRefusal::Invalid { rejection: BlockRejection::DuplicateInvalid });
            }
            return Ok(());
        }
        let parent = header.previous_block_hash;
        let Some(parent_id) = index.get(&parent) else {
            return Err(HeaderRefusal::MissingParent { parent });
        };
        if index.entry(parent_id).status.is_failed() {
            return Err(HeaderRefusal::Invalid { rejection: BlockRejection::InvalidParent });
        }
        let params = &self.shared.options.params;
        ibex_consensus::check_block_header(header, &hash, params)
            .and_then(|()| self.check_header_context(header, parent_id))
            .map_err(|error| HeaderRefusal::Invalid { rejection: error.into() })?;
        self.offer_headers(std::slice::from_ref(header))?;
        Ok(())
    }
}
