//! The v1 transport behind the common interface: [`FrameDecoder`] in,
//! [`encode_message`] out.

use crate::command::Command;
use crate::decoder::FrameDecoder;
use crate::framing::{payload_checksum, write_header, Frame, MAGIC_BYTES};
use crate::messages::{encode_message, NetworkMessage};
use crate::transport::{TransportError, V1_PREFIX_BYTES};

/// A message given before the transport knew how to send it, kept as its
/// command and payload (at most `MESSAGE_PAYLOAD_BYTES_MAX` bytes, checked
/// when queued).
pub(crate) struct QueuedMessage {
    pub command: Command,
    pub payload: Vec<u8>,
    pub payload_bytes: u32,
}

/// Core's `V1Transport`: 24-byte headers, checksums, no encryption.
#[derive(Debug)]
pub struct V1Transport {
    magic: [u8; MAGIC_BYTES],
    decoder: FrameDecoder,
    output: Vec<u8>,
}

impl V1Transport {
    /// A v1 transport for the network with `magic`.
    pub fn new(magic: [u8; MAGIC_BYTES]) -> V1Transport {
        V1Transport { magic, decoder: FrameDecoder::new(magic), output: Vec::new() }
    }

    /// A v2 responder's fallback: the 16 bytes the peer sent (its first
    /// header's magic and command) go to the decoder first, as Core feeds
    /// them to `m_v1_fallback`, and messages queued meanwhile become frames.
    pub(crate) fn after_v2_fallback(
        magic: [u8; MAGIC_BYTES],
        prefix: [u8; V1_PREFIX_BYTES],
        queued: Vec<QueuedMessage>,
    ) -> V1Transport {
        let mut transport = V1Transport::new(magic);
        // Shorter than a header, so the decoder takes all of it.
        let taken = transport.decoder.push(&prefix);
        debug_assert_eq!(taken, V1_PREFIX_BYTES);
        for message in queued {
            let checksum = payload_checksum(&message.payload);
            write_header(
                magic,
                message.command,
                message.payload_bytes,
                checksum,
                &mut transport.output,
            );
            transport.output.extend_from_slice(&message.payload);
        }
        transport
    }

    /// Takes bytes up to the end of the current frame; see
    /// [`FrameDecoder::push`].
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        self.decoder.push(bytes)
    }

    /// The next complete frame; see [`FrameDecoder::next_frame`].
    pub fn next_message(&mut self) -> Result<Option<Frame>, TransportError> {
        Ok(self.decoder.next_frame()?)
    }

    /// Appends any bytes still to send, then `message`'s frame, to `out`.
    pub fn encode(
        &mut self,
        message: &NetworkMessage,
        out: &mut Vec<u8>,
    ) -> Result<(), TransportError> {
        self.take_output(out);
        Ok(encode_message(self.magic, message, out)?)
    }

    /// Bytes allocated for the frame in progress; see
    /// [`FrameDecoder::allocated_bytes`].
    pub fn allocated_bytes(&self) -> usize {
        self.decoder.allocated_bytes()
    }

    /// Appends the bytes the transport has to send on its own (frames of
    /// messages queued before a v2 responder fell back to v1).
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.output);
    }
}
