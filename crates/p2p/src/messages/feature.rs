//! BIP 434 (draft) `feature`: a peer names a feature it supports, with
//! feature-specific data, between `version` and `verack`.
//!
//! The payload is a `featureid` string of 4 to 80 bytes and a `featuredata`
//! byte vector of at most 512 bytes, both CompactSize-prefixed. A node that
//! implements the BIP announces protocol version 70017 or higher, sends
//! `feature` only to peers announcing that much, and ignores feature ids it
//! does not know. Over BIP324 the message may come with the one-byte type
//! 37 (`transport::message_type`).

use ibex_primitives::encode::write_var_bytes;

use crate::messages::error::{Field, MessageError};
use crate::messages::wire::PayloadReader;

/// The protocol version from which peers take `feature` messages (BIP 434:
/// a node announcing less is sent none).
pub const FEATURE_NEGOTIATION_VERSION: i32 = 70_017;
/// Fewest bytes of a `featureid` (BIP 434: "BIPx").
pub const FEATURE_ID_BYTES_MIN: usize = 4;
/// Most bytes of a `featureid`.
pub const FEATURE_ID_BYTES_MAX: usize = 80;
/// Most bytes of a `featuredata`.
pub const FEATURE_DATA_BYTES_MAX: usize = 512;

/// A `feature` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureMessage {
    /// The feature's globally unique id (printable ASCII by BIP 434's
    /// advice; not required of a peer).
    pub feature_id: Vec<u8>,
    /// Its configuration data.
    pub feature_data: Vec<u8>,
}

impl FeatureMessage {
    /// A message for `feature_id` with `feature_data`.
    pub fn new(feature_id: &[u8], feature_data: &[u8]) -> FeatureMessage {
        FeatureMessage { feature_id: feature_id.to_vec(), feature_data: feature_data.to_vec() }
    }

    /// Appends the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        write_var_bytes(out, &self.feature_id);
        write_var_bytes(out, &self.feature_data);
    }

    /// Reads a payload: both lengths within BIP 434's bounds, checked
    /// before anything is copied.
    pub(crate) fn decode(reader: &mut PayloadReader<'_>) -> Result<FeatureMessage, MessageError> {
        let feature_id = bounded_bytes(reader, Field::FeatureId, FEATURE_ID_BYTES_MAX)?;
        if feature_id.len() < FEATURE_ID_BYTES_MIN {
            return Err(MessageError::TooShort {
                command: reader.command(),
                field: Field::FeatureId,
                length_bytes: feature_id.len() as u64,
                minimum_bytes: FEATURE_ID_BYTES_MIN,
            });
        }
        let feature_data = bounded_bytes(reader, Field::FeatureData, FEATURE_DATA_BYTES_MAX)?;
        Ok(FeatureMessage { feature_id: feature_id.to_vec(), feature_data: feature_data.to_vec() })
    }

    /// Whether this announces `feature_id` with exactly `feature_data`.
    pub fn is(&self, feature_id: &[u8], feature_data: &[u8]) -> bool {
        self.feature_id == feature_id && self.feature_data == feature_data
    }
}

/// A CompactSize-prefixed byte string of at most `limit_bytes`.
fn bounded_bytes<'a>(
    reader: &mut PayloadReader<'a>,
    field: Field,
    limit_bytes: usize,
) -> Result<&'a [u8], MessageError> {
    let length_bytes = reader.compact_size(field)?;
    if length_bytes > limit_bytes as u64 {
        return Err(MessageError::TooLong {
            command: reader.command(),
            field,
            length_bytes,
            limit_bytes,
        });
    }
    // Within `limit_bytes`, a usize.
    reader.bytes(length_bytes as usize, field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Command;
    use crate::messages::NetworkMessage;

    fn decode(payload: &[u8]) -> Result<NetworkMessage, MessageError> {
        NetworkMessage::decode(Command::FEATURE, payload)
    }

    #[test]
    fn a_feature_round_trips_and_its_lengths_are_bounded() {
        let message = FeatureMessage::new(b"blockspentcoinsv1", &[0]);
        let mut payload = Vec::new();
        message.encode(&mut payload);
        assert_eq!(payload[0], 17);
        assert_eq!(decode(&payload), Ok(NetworkMessage::Feature(message.clone())));
        assert!(message.is(b"blockspentcoinsv1", &[0]));
        assert!(!message.is(b"blockspentcoinsv1", &[]));

        let mut short = Vec::new();
        FeatureMessage::new(b"BIP", &[]).encode(&mut short);
        assert!(matches!(decode(&short), Err(MessageError::TooShort { minimum_bytes: 4, .. })));
        let mut long = Vec::new();
        FeatureMessage::new(&[b'a'; 81], &[]).encode(&mut long);
        assert!(matches!(decode(&long), Err(MessageError::TooLong { limit_bytes: 80, .. })));
        let mut big_data = Vec::new();
        FeatureMessage::new(b"BIP434", &[7; 513]).encode(&mut big_data);
        assert!(matches!(decode(&big_data), Err(MessageError::TooLong { limit_bytes: 512, .. })));
        let mut most = Vec::new();
        FeatureMessage::new(&[b'a'; 80], &[7; 512]).encode(&mut most);
        assert!(decode(&most).is_ok());
        // A missing `featuredata` is a read failure: the field is not optional.
        assert!(matches!(decode(&payload[..18]), Err(MessageError::Malformed { .. })));
    }
}
