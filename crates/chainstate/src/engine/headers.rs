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
