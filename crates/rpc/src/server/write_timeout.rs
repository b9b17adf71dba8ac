//! A connection whose writes fail once the client has taken no byte of a
//! reply for `-rpcservertimeout`, as libevent's write timeout (Core's
//! `evhttp_set_timeout` sets the one timeout for reads and writes): hyper
//! has no write timeout of its own, and a client that asks for a reply and
//! never reads would otherwise keep its connection, and the reply, for
//! ever. The error ends hyper's connection, which drops the reply and
//! closes the socket.
//!
//! The clock runs only while a write or flush is blocked, and restarts on
//! every byte the socket takes: a slow reader that keeps reading is not
//! cut off, and the memory it can hold is bounded by the reply budget
//! (`reply_budget`), not by this timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A stream whose blocked writes time out.
pub(crate) struct WriteTimeoutStream<S> {
    inner: S,
    timeout: Duration,
    /// Armed while a write is blocked; `None` until the first one blocks.
    deadline: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl<S> WriteTimeoutStream<S> {
    /// `inner`, whose writes fail after `timeout` without progress.
    pub(crate) fn new(inner: S, timeout: Duration) -> WriteTimeoutStream<S> {
        WriteTimeoutStream { inner, timeout, deadline: None, armed: false }
    }

    /// Called with the outcome of a write or flush: progress disarms the
    /// clock; a blocked write arms it (if not armed) and fails once it has
    /// run out.
    fn watch<T>(
        &mut self,
        context: &mut Context<'_>,
        outcome: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if outcome.is_ready() {
            self.armed = false;
            return outcome;
        }
        let deadline = Instant::now() + self.timeout;
        if !self.armed {
            self.armed = true;
            match &mut self.deadline {
                Some(sleep) => sleep.as_mut().reset(deadline),
                None => self.deadline = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        let expired = match &mut self.deadline {
            Some(sleep) => sleep.as_mut().poll(context).is_ready(),
            None => false,
        };
        if expired {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "reply write timed out",
            )));
        }
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeoutStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(context, buffer)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeoutStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.inner).poll_write(context, buffer);
        this.watch(context, outcome)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.inner).poll_write_vectored(context, buffers);
        this.watch(context, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let outcome = Pin::new(&mut this.inner).poll_flush(context);
        this.watch(context, outcome)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn a_write_nobody_reads_fails_after_the_timeout_and_a_read_one_does_not() {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build();
        runtime.unwrap().block_on(async {
            let (client, server) = tokio::io::duplex(1024);
            // The client end stays open and unread until the end.
            let mut stream = WriteTimeoutStream::new(server, Duration::from_secs(5));
            let reply = vec![1u8; 64 * 1024];
            // Nobody reads: the write blocks once 1 KiB is buffered, then
            // fails at the timeout (the paused clock jumps to it).
            let started = Instant::now();
            let error = stream.write_all(&reply).await.unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::TimedOut);
            assert_eq!(started.elapsed(), Duration::from_secs(5));
            // A reader that keeps taking bytes, each a second apart, never
            // lets the clock run out, though the whole takes longer.
            let (reader_end, writer_end) = tokio::io::duplex(1024);
            let mut stream = WriteTimeoutStream::new(writer_end, Duration::from_secs(5));
            let reader = tokio::spawn(async move {
                let mut reader_end = reader_end;
                let mut total = 0;
                let mut buffer = [0u8; 1024];
                while total < 16 * 1024 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    total += reader_end.read(&mut buffer).await.unwrap();
                }
                total
            });
            let started = Instant::now();
            stream.write_all(&reply[..16 * 1024]).await.unwrap();
            assert!(started.elapsed() >= Duration::from_secs(10));
            assert_eq!(reader.await.unwrap(), 16 * 1024);
            drop(client);
        });
    }
}
