//! Peer addresses: the 26-byte service address of `version`, `addr`
//! entries (Core's `CAddress` in the V1 network format) and BIP155 `addrv2`
//! entries (the V2 format).
//!
//! Core reads an address list whole before it compares its length with
//! MAX_ADDR_TO_SEND (1,000), so a list too long that ends early, or holds a
//! bad entry, is a read failure (the message is dropped) rather than
//! misbehaviour.

use crate::messages::error::{Field, MessageError};
use crate::messages::wire::{LimitCheck, ListRule, PayloadReader};
use crate::services::ServiceFlags;
use ibex_primitives::encode::write_compact_size;

/// Entries an `addr` or `addrv2` message may carry (Core's `MAX_ADDR_TO_SEND`).
pub const ADDRESSES_PER_MESSAGE_MAX: usize = 1000;
/// The longest BIP155 address Core reads (`CNetAddr::MAX_ADDRV2_SIZE`), in bytes.
pub const ADDRESS_V2_BYTES_MAX: usize = 512;
/// Bytes of a [`ServiceAddress`]: services, IPv6 address, port.
pub const SERVICE_ADDRESS_BYTES: usize = 8 + 16 + 2;
/// Bytes of an `addr` entry: time and a service address.
pub const ADDRESS_ENTRY_BYTES: usize = 4 + SERVICE_ADDRESS_BYTES;
/// The fewest bytes of an `addrv2` entry: time, services, network id,
/// length, no address, port.
pub const ADDRESS_V2_ENTRY_BYTES_MIN: usize = 4 + 1 + 1 + 1 + 2;

pub(crate) const ADDRESS_LIST: ListRule = ListRule {
    field: Field::Addresses,
    limit: ADDRESSES_PER_MESSAGE_MAX,
    check: LimitCheck::AfterEntries,
    entry_bytes_min: ADDRESS_ENTRY_BYTES,
};

pub(crate) const ADDRESS_V2_LIST: ListRule =
    ListRule { entry_bytes_min: ADDRESS_V2_ENTRY_BYTES_MIN, ..ADDRESS_LIST };

/// Services, a 16-byte address (IPv4 as `::ffff:a.b.c.d`) and a port: the
/// V1 encoding of Core's `CService` with service bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ServiceAddress {
    /// Service bits, 8 bytes little-endian.
    pub services: ServiceFlags,
    /// The address, in network byte order.
    pub ip_bytes: [u8; 16],
    /// The port, sent big-endian.
    pub port: u16,
}

impl ServiceAddress {
    pub(crate) fn decode(
        reader: &mut PayloadReader<'_>,
        field: Field,
    ) -> Result<ServiceAddress, MessageError> {
        let services = ServiceFlags::from_bits(reader.u64(field)?);
        let ip_bytes = reader.array(field)?;
        let port = reader.u16_big_endian(field)?;
        Ok(ServiceAddress { services, ip_bytes, port })
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.services.bits().to_le_bytes());
        out.extend_from_slice(&self.ip_bytes);
        out.extend_from_slice(&self.port.to_be_bytes());
    }
}

/// An `addr` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressEntry {
    /// When the node was last seen, seconds since the Unix epoch.
    pub time_seconds: u32,
    /// The node.
    pub address: ServiceAddress,
}

impl AddressEntry {
    pub(crate) fn decode(reader: &mut PayloadReader<'_>) -> Result<AddressEntry, MessageError> {
        let time_seconds = reader.u32(Field::AddressTime)?;
        let address = ServiceAddress::decode(reader, Field::Addresses)?;
        Ok(AddressEntry { time_seconds, address })
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.time_seconds.to_le_bytes());
        self.address.encode(out);
    }
}

/// A BIP155 network address. Network ids Core does not know (and TORv2, id
/// 3, which Core no longer reads) are kept as [`NetworkAddress::Unknown`]:
/// Core skips their bytes and reads on (`SetNetFromBIP155Network`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NetworkAddress {
    /// Network id 1, 4 bytes.
    Ipv4([u8; 4]),
    /// Network id 2, 16 bytes. Core makes the IPv4-in-IPv6 and TORv2
    /// (OnionCat) prefixes invalid here, and reads the internal prefix as an
    /// internal name; kept raw in this crate.
    Ipv6([u8; 16]),
    /// Network id 4, a 32-byte ed25519 public key.
    TorV3([u8; 32]),
    /// Network id 5, a 32-byte SHA-256 of the destination.
    I2p([u8; 32]),
    /// Network id 6, 16 bytes (fc00::/8).
    Cjdns([u8; 16]),
    /// Any other network id, with at most [`ADDRESS_V2_BYTES_MAX`] bytes.
    Unknown {
        /// The BIP155 network id.
        network_id: u8,
        /// The address bytes.
        address_bytes: Vec<u8>,
    },
}

impl NetworkAddress {
    /// BIP155 id of IPv4.
    pub const IPV4_NETWORK_ID: u8 = 1;
    /// BIP155 id of IPv6.
    pub const IPV6_NETWORK_ID: u8 = 2;
    /// BIP155 id of TORv2 (no longer read by Core).
    pub const TOR_V2_NETWORK_ID: u8 = 3;
    /// BIP155 id of TORv3.
    pub const TOR_V3_NETWORK_ID: u8 = 4;
    /// BIP155 id of I2P.
    pub const I2P_NETWORK_ID: u8 = 5;
    /// BIP155 id of CJDNS.
    pub const CJDNS_NETWORK_ID: u8 = 6;

    /// The BIP155 network id.
    pub fn network_id(&self) -> u8 {
        match self {
            NetworkAddress::Ipv4(_) => Self::IPV4_NETWORK_ID,
            NetworkAddress::Ipv6(_) => Self::IPV6_NETWORK_ID,
            NetworkAddress::TorV3(_) => Self::TOR_V3_NETWORK_ID,
            NetworkAddress::I2p(_) => Self::I2P_NETWORK_ID,
            NetworkAddress::Cjdns(_) => Self::CJDNS_NETWORK_ID,
            NetworkAddress::Unknown { network_id, .. } => *network_id,
        }
    }

    /// The address bytes.
    pub fn address_bytes(&self) -> &[u8] {
        match self {
            NetworkAddress::Ipv4(bytes) => bytes,
            NetworkAddress::Ipv6(bytes) | NetworkAddress::Cjdns(bytes) => bytes,
            NetworkAddress::TorV3(bytes) | NetworkAddress::I2p(bytes) => bytes,
            NetworkAddress::Unknown { address_bytes, .. } => address_bytes,
        }
    }

    /// The length Core requires for a known network id.
    fn expected_bytes(network_id: u8) -> Option<usize> {
        match network_id {
            Self::IPV4_NETWORK_ID => Some(4),
            Self::IPV6_NETWORK_ID | Self::CJDNS_NETWORK_ID => Some(16),
            Self::TOR_V3_NETWORK_ID | Self::I2P_NETWORK_ID => Some(32),
            _ => None,
        }
    }

    /// Core's `UnserializeV2Stream`: network id, compact-size length (at most
    /// MAX_SIZE, then at most 512), the bytes; a known network's address
    /// must have that network's length.
    fn decode(reader: &mut PayloadReader<'_>) -> Result<NetworkAddress, MessageError> {
        let network_id = reader.u8(Field::NetworkId)?;
        let length_bytes = reader.compact_size(Field::AddressBytes)?;
        if length_bytes > ADDRESS_V2_BYTES_MAX as u64 {
            return Err(MessageError::TooLong {
                command: reader.command(),
                field: Field::AddressBytes,
                length_bytes,
                limit_bytes: ADDRESS_V2_BYTES_MAX,
            });
        }
        let expected_bytes = Self::expected_bytes(network_id);
        if let Some(expected_bytes) = expected_bytes.filter(|&bytes| bytes as u64 != length_bytes) {
            return Err(MessageError::AddressLengthMismatch {
                command: reader.command(),
                network_id,
                length_bytes,
                expected_bytes,
            });
        }
        // `length_bytes <= 512`.
        let bytes = reader.bytes(length_bytes as usize, Field::AddressBytes)?;
        Ok(Self::from_parts(network_id, bytes))
    }

    /// The address for `network_id` and `bytes` of that network's length.
    fn from_parts(network_id: u8, bytes: &[u8]) -> NetworkAddress {
        let known = match network_id {
            Self::IPV4_NETWORK_ID => bytes.try_into().ok().map(NetworkAddress::Ipv4),
            Self::IPV6_NETWORK_ID => bytes.try_into().ok().map(NetworkAddress::Ipv6),
            Self::TOR_V3_NETWORK_ID => bytes.try_into().ok().map(NetworkAddress::TorV3),
            Self::I2P_NETWORK_ID => bytes.try_into().ok().map(NetworkAddress::I2p),
            Self::CJDNS_NETWORK_ID => bytes.try_into().ok().map(NetworkAddress::Cjdns),
            _ => None,
        };
        known.unwrap_or_else(|| NetworkAddress::Unknown {
            network_id,
            address_bytes: bytes.to_vec(),
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.network_id());
        let bytes = self.address_bytes();
        write_compact_size(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    }
}

/// An `addrv2` entry (BIP155).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AddressV2Entry {
    /// When the node was last seen, seconds since the Unix epoch.
    pub time_seconds: u32,
    /// Service bits, sent as a compact size (any 64-bit value: Core reads
    /// it without the MAX_SIZE check, but it must be canonical).
    pub services: ServiceFlags,
    /// The address.
    pub address: NetworkAddress,
    /// The port, sent big-endian.
    pub port: u16,
}

impl AddressV2Entry {
    pub(crate) fn decode(reader: &mut PayloadReader<'_>) -> Result<AddressV2Entry, MessageError> {
        let time_seconds = reader.u32(Field::AddressTime)?;
        let services = ServiceFlags::from_bits(reader.compact_size_unbounded(Field::Services)?);
        let address = NetworkAddress::decode(reader)?;
        let port = reader.u16_big_endian(Field::Port)?;
        Ok(AddressV2Entry { time_seconds, services, address, port })
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.time_seconds.to_le_bytes());
        write_compact_size(out, self.services.bits());
        self.address.encode(out);
        out.extend_from_slice(&self.port.to_be_bytes());
    }
}
