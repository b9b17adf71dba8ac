//! An incremental frame decoder: bytes go in as the socket delivers them,
//! whole frames come out.
//!
//! Memory: the decoder holds one header (24 bytes) and one payload. The
//! payload buffer grows as its bytes arrive, [`PAYLOAD_ALLOCATION_STEP_BYTES`]
//! ahead at most and never past the declared length, which is checked
//! against [`MESSAGE_PAYLOAD_BYTES_MAX`] first (as Core's `readData`, after
//! the receive-buffer OOM Core disclosed in July 2024): a peer that declares
//! 4 MB and then sends one byte costs 256 KiB, not 4 MB. [`FrameDecoder::push`]
//! takes no more bytes than the current frame needs, so nothing else is
//! buffered: at most 24 + 4,000,000 bytes per peer, plus the frame the caller
//! has not yet taken.

use crate::framing::{
    check_payload, Frame, FrameError, FrameHeader, FRAME_HEADER_BYTES, MAGIC_BYTES,
    MESSAGE_PAYLOAD_BYTES_MAX,
};

/// The payload buffer is allocated this far ahead of the bytes received
/// (Core's `readData` allocates 256 KiB ahead).
pub const PAYLOAD_ALLOCATION_STEP_BYTES: usize = 256 * 1024;

const _: () = assert!(PAYLOAD_ALLOCATION_STEP_BYTES <= MESSAGE_PAYLOAD_BYTES_MAX);

/// Where the decoder is in the stream.
#[derive(Debug)]
enum State {
    /// Filling the header; `received_bytes` of it are in.
    Header { received_bytes: usize },
    /// The header passed its checks; filling the payload.
    Payload { header: FrameHeader, payload: Vec<u8> },
    /// A frame (or an error that drops just that frame) waits for
    /// [`FrameDecoder::next_frame`].
    Ready(Result<Frame, FrameError>),
    /// A header failed a check that disconnects: the stream is out of step.
    Failed(FrameError),
}

/// Reads v1 frames from a byte stream for one network (one magic).
///
/// Feed it with [`push`](FrameDecoder::push) and take frames with
/// [`next_frame`](FrameDecoder::next_frame):
///
/// ```
/// # use ibex_p2p::{encode_frame, Command, FrameDecoder};
/// let magic = [0xf9, 0xbe, 0xb4, 0xd9];
/// let mut wire = Vec::new();
/// encode_frame(magic, Command::VERACK, &[], &mut wire)?;
/// encode_frame(magic, Command::PING, &7u64.to_le_bytes(), &mut wire)?;
///
/// let mut decoder = FrameDecoder::new(magic);
/// let mut input = &wire[..];
/// let mut commands = Vec::new();
/// loop {
///     let consumed = decoder.push(input);
///     input = &input[consumed..];
///     match decoder.next_frame() {
///         Ok(Some(frame)) => commands.push(frame.command),
///         Ok(None) => break, // all of `input` taken, no frame complete
///         Err(error) if error.disconnects() => return Err(error.into()),
///         Err(_dropped) => {} // Core drops this message and reads on
///     }
/// }
/// assert_eq!(commands, [Command::VERACK, Command::PING]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FrameDecoder {
    magic: [u8; MAGIC_BYTES],
    header_bytes: [u8; FRAME_HEADER_BYTES],
    state: State,
}

impl FrameDecoder {
    /// A decoder for frames with `magic` (`Params::message_start`).
    pub fn new(magic: [u8; MAGIC_BYTES]) -> FrameDecoder {
        FrameDecoder {
            magic,
            header_bytes: [0; FRAME_HEADER_BYTES],
            state: State::Header { received_bytes: 0 },
        }
    }

    /// Takes bytes from the front of `bytes`, stopping at the end of the
    /// current frame, and returns how many it took. It takes none while a
    /// frame or an error waits for [`next_frame`](FrameDecoder::next_frame),
    /// nor after a header failed a check that disconnects.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let mut consumed_bytes = 0;
        while consumed_bytes < bytes.len() {
            let rest = &bytes[consumed_bytes..];
            let taken = match &mut self.state {
                State::Header { received_bytes } => {
                    let taken = rest.len().min(FRAME_HEADER_BYTES - *received_bytes);
                    self.header_bytes[*received_bytes..*received_bytes + taken]
                        .copy_from_slice(&rest[..taken]);
                    *received_bytes += taken;
                    taken
                }
                State::Payload { header, payload } => {
                    append_payload(header.payload_bytes as usize, payload, rest)
                }
                State::Ready(_) | State::Failed(_) => break,
            };
            consumed_bytes += taken;
            self.advance();
        }
        // An empty payload completes with its header, even with no bytes left.
        self.advance();
        consumed_bytes
    }

    /// The next complete frame, `Ok(None)` if none is complete yet, or why
    /// the frame just read is not one. After an error for which
    /// [`FrameError::disconnects`] holds, every call returns that error.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        match std::mem::replace(&mut self.state, State::Header { received_bytes: 0 }) {
            State::Ready(result) => result.map(Some),
            State::Failed(error) => {
                self.state = State::Failed(error.clone());
                Err(error)
            }
            other => {
                self.state = other;
                Ok(None)
            }
        }
    }

    /// Bytes of the frame in progress received so far (header included).
    pub fn buffered_bytes(&self) -> usize {
        match &self.state {
            State::Header { received_bytes } => *received_bytes,
            State::Payload { payload, .. } => FRAME_HEADER_BYTES + payload.len(),
            State::Ready(Ok(frame)) => FRAME_HEADER_BYTES + frame.payload.len(),
            State::Ready(Err(_)) | State::Failed(_) => 0,
        }
    }

    /// Bytes the decoder has allocated for the frame in progress: the
    /// payload buffer's capacity (the header lives inline). At most
    /// [`PAYLOAD_ALLOCATION_STEP_BYTES`] more than the bytes received, and
    /// never more than the declared length.
    pub fn allocated_bytes(&self) -> usize {
        match &self.state {
            State::Payload { payload, .. } => payload.capacity(),
            State::Ready(Ok(frame)) => frame.payload.capacity(),
            State::Header { .. } | State::Ready(Err(_)) | State::Failed(_) => 0,
        }
    }

    /// Moves to the next state once the header or the payload is complete.
    fn advance(&mut self) {
        match &mut self.state {
            State::Header { received_bytes } if *received_bytes == FRAME_HEADER_BYTES => {
                let header = FrameHeader::decode(&self.header_bytes);
                self.state = match header.check(self.magic) {
                    Err(error) => State::Failed(error),
                    // Nothing is allocated here: the buffer grows with the
                    // bytes (see `append_payload`).
                    Ok(()) => State::Payload { header, payload: Vec::new() },
                };
            }
            State::Payload { header, payload }
                if payload.len() == header.payload_bytes as usize =>
            {
                let header = *header;
                let payload = std::mem::take(payload);
                self.state = State::Ready(check_payload(&header, payload));
            }
            _ => {}
        }
    }
}

/// Appends as much of `bytes` as the payload still needs and returns how
/// much; grows the buffer at most [`PAYLOAD_ALLOCATION_STEP_BYTES`] past the
/// bytes received and never past `declared_bytes`.
pub(crate) fn append_payload(declared_bytes: usize, payload: &mut Vec<u8>, bytes: &[u8]) -> usize {
    let taken = bytes.len().min(declared_bytes - payload.len());
    let needed_bytes = payload.len() + taken;
    if needed_bytes > payload.capacity() {
        let target_bytes =
            declared_bytes.min(needed_bytes.max(payload.len() + PAYLOAD_ALLOCATION_STEP_BYTES));
        payload.reserve_exact(target_bytes - payload.len());
    }
    payload.extend_from_slice(&bytes[..taken]);
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_buffer_grows_with_the_bytes_received() {
        let declared_bytes = MESSAGE_PAYLOAD_BYTES_MAX;
        let mut payload = Vec::new();
        assert_eq!(append_payload(declared_bytes, &mut payload, &[7]), 1);
        assert!(payload.capacity() >= PAYLOAD_ALLOCATION_STEP_BYTES);
        assert!(payload.capacity() < 2 * PAYLOAD_ALLOCATION_STEP_BYTES);
        let chunk = vec![1u8; 3 * PAYLOAD_ALLOCATION_STEP_BYTES];
        assert_eq!(append_payload(declared_bytes, &mut payload, &chunk), chunk.len());
        assert!(payload.capacity() <= declared_bytes);
    }

    #[test]
    fn payload_buffer_never_passes_the_declared_length() {
        let mut payload = Vec::new();
        assert_eq!(append_payload(10, &mut payload, &[0; 100]), 10);
        assert_eq!(payload.len(), 10);
        assert!(payload.capacity() <= 10, "capacity {}", payload.capacity());
        assert_eq!(append_payload(10, &mut payload, &[0; 100]), 0);
    }
}
