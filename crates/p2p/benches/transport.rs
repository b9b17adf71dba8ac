//! What a transport costs per message: a 4 MB `block` and a `ping`, v1
//! (24-byte header, double SHA-256 checksum) against BIP324 v2
//! (ChaCha20-Poly1305, FSChaCha20 lengths), and a whole v2 handshake. The
//! figures are in the `transport` module docs.
//!
//! - `block_4mb/v1`, `block_4mb/v2`: encode, then push and take the
//!   message on the other side (both directions' work for one message).
//! - `block_4mb/v2_encode`: the sending side alone.
//! - `ping/v1`, `ping/v2`: the same for an 8-byte payload.
//! - `handshake/v2`: secrets from given bytes, both sides' keys, ECDH,
//!   garbage (100 bytes each way), version packets.
//!
//! Run: `cargo bench -p ibex-p2p --profile ci --bench transport -- --warm-up-time 1 --measurement-time 5`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ibex_p2p::{HandshakeSecrets, NetworkMessage, Transport};

const MAGIC: [u8; 4] = [0xf9, 0xbe, 0xb4, 0xd9];

fn secrets(seed: u8) -> HandshakeSecrets {
    HandshakeSecrets::new([seed; 32], [seed ^ 0x5a; 32], vec![seed; 100]).unwrap()
}

/// Two v2 transports after their handshake.
fn v2_pair() -> (Transport, Transport) {
    let mut initiator = Transport::v2_initiator(MAGIC, secrets(1));
    let mut responder = Transport::v2_responder(MAGIC, secrets(2));
    for _round in 0..3 {
        let mut wire = Vec::new();
        initiator.take_output(&mut wire);
        assert_eq!(responder.push(&wire), wire.len());
        wire.clear();
        responder.take_output(&mut wire);
        assert_eq!(initiator.push(&wire), wire.len());
    }
    (initiator, responder)
}

/// Sends `message` from `sender` to `receiver` and returns its payload size.
fn cross(
    sender: &mut Transport,
    receiver: &mut Transport,
    message: &NetworkMessage,
    wire: &mut Vec<u8>,
) -> usize {
    wire.clear();
    sender.encode(message, wire).unwrap();
    assert_eq!(receiver.push(wire), wire.len());
    receiver.next_message().unwrap().unwrap().payload.len()
}

fn per_message(criterion: &mut Criterion, name: &str, message: NetworkMessage, payload_bytes: u64) {
    let mut group = criterion.benchmark_group(name);
    group.throughput(Throughput::Bytes(payload_bytes));
    let mut wire = Vec::new();
    let (mut v1_sender, mut v1_receiver) = (Transport::v1(MAGIC), Transport::v1(MAGIC));
    group.bench_function("v1", |bencher| {
        bencher.iter(|| black_box(cross(&mut v1_sender, &mut v1_receiver, &message, &mut wire)))
    });
    let (mut sender, mut receiver) = v2_pair();
    group.bench_function("v2", |bencher| {
        bencher.iter(|| black_box(cross(&mut sender, &mut receiver, &message, &mut wire)))
    });
    let (mut sender, _) = v2_pair();
    group.bench_function("v2_encode", |bencher| {
        bencher.iter(|| {
            wire.clear();
            sender.encode(&message, &mut wire).unwrap();
            black_box(wire.len())
        })
    });
    group.finish();
}

fn block(criterion: &mut Criterion) {
    per_message(criterion, "block_4mb", NetworkMessage::Block(vec![0x42; 4_000_000]), 4_000_000);
}

fn ping(criterion: &mut Criterion) {
    per_message(criterion, "ping", NetworkMessage::Ping { nonce: 7 }, 8);
}

fn handshake(criterion: &mut Criterion) {
    criterion.bench_function("handshake/v2", |bencher| {
        bencher.iter(|| black_box(v2_pair().0.session_id()))
    });
}

criterion_group!(benches, block, ping, handshake);
criterion_main!(benches);
