//! A reply's body as hyper sends it: handed over in chunks of
//! [`REPLY_CHUNK_BYTES`], so that the reply stays in this body (and its
//! [`ReplyReservation`] counted) until the socket has taken all but the
//! last chunks; a body given to hyper whole would leave it at once and sit
//! uncounted in hyper's write queue for as long as the client does not
//! read.
//!
//! hyper asks for another chunk only when its write queue holds less than
//! its buffer limit (the connection's 64 KiB), so each chunk handed over
//! is written before the one after next is asked for. The last two
//! chunks are copies, not slices of the reply: a slice keeps the whole
//! reply's allocation alive, and once the body (with its reservation) is
//! dropped nothing but at most these two copies may remain.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::reply_budget::ReplyReservation;

/// Bytes handed to hyper at a time; at least the connection's buffer
/// limit, so that a chunk handed over is written before the one after next
/// is asked for.
pub(crate) const REPLY_CHUNK_BYTES: usize = 64 << 10;

/// A reply's bytes not yet handed to hyper, and the budget they hold.
#[derive(Debug)]
pub(crate) struct ReplyBody {
    remaining: Bytes,
    _reservation: Option<ReplyReservation>,
}

impl ReplyBody {
    /// A body of `bytes`, counted by `reservation` until it is dropped.
    pub(crate) fn new(bytes: Bytes, reservation: Option<ReplyReservation>) -> ReplyBody {
        ReplyBody { remaining: bytes, _reservation: reservation }
    }

    /// An empty body.
    pub(crate) fn empty() -> ReplyBody {
        ReplyBody::new(Bytes::new(), None)
    }

    /// The next chunk: a slice of the reply while more than two chunks
    /// remain, a copy after (see the module docs).
    fn next_chunk(&mut self) -> Bytes {
        let length = self.remaining.len().min(REPLY_CHUNK_BYTES);
        if self.remaining.len() > 2 * REPLY_CHUNK_BYTES {
            return self.remaining.split_to(length);
        }
        let chunk = Bytes::copy_from_slice(&self.remaining[..length]);
        if length == self.remaining.len() {
            self.remaining = Bytes::new();
        } else {
            self.remaining = Bytes::copy_from_slice(&self.remaining[length..]);
        }
        chunk
    }
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.remaining.is_empty() {
            return Poll::Ready(None);
        }
        Poll::Ready(Some(Ok(Frame::data(this.next_chunk()))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn chunks_rebuild_the_reply_and_the_last_two_are_copies() {
        let reply: Vec<u8> = (0..5 * REPLY_CHUNK_BYTES + 7).map(|index| index as u8).collect();
        let original = Bytes::from(reply.clone());
        let mut body = ReplyBody::new(original.clone(), None);
        assert_eq!(body.size_hint().exact(), Some(reply.len() as u64));
        let mut chunks = Vec::new();
        while !body.is_end_stream() {
            chunks.push(body.next_chunk());
        }
        assert_eq!(chunks.concat(), reply);
        assert!(chunks.iter().all(|chunk| chunk.len() <= REPLY_CHUNK_BYTES));
        // The reply's allocation is shared only by the slices before the
        // last two chunks.
        let inside = |chunk: &Bytes| {
            let start = original.as_ptr() as usize;
            (start..start + original.len()).contains(&(chunk.as_ptr() as usize))
        };
        let last_two = &chunks[chunks.len() - 2..];
        assert!(last_two.iter().all(|chunk| !inside(chunk)));
        assert!(chunks[..chunks.len() - 2].iter().all(inside));
    }

    #[test]
    fn hyper_reads_the_whole_body() {
        let reply = vec![7u8; 3 * REPLY_CHUNK_BYTES + 1];
        let body = ReplyBody::new(Bytes::from(reply.clone()), None);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let collected = runtime.block_on(body.collect()).unwrap().to_bytes();
        assert_eq!(collected, reply);
        assert!(ReplyBody::empty().is_end_stream());
    }
}
