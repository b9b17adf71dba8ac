//! Fuzzes the address manager's file reader: any input is refused with a
//! typed error or read; a file that reads writes back to bytes that read
//! to the same addresses. The input is tried as it is and with a valid
//! checksum appended, so the entries' parser is reached too.
#![no_main]

use ibex_p2p::addrman::file::{decode, encode};
use ibex_p2p::addrman::AddressPolicy;
use ibex_primitives::hash::sha256d;
use libfuzzer_sys::fuzz_target;

const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

fn check(bytes: &[u8], policy: AddressPolicy) {
    let Ok(decoded) = decode(bytes, MAGIC, policy, &[0; 32]) else {
        return;
    };
    assert!(decoded.manager.len() <= decoded.entries);
    let written = encode(&decoded.manager, MAGIC);
    let again = decode(&written, MAGIC, policy, &[1; 32]).expect("our own file reads back");
    assert_eq!(again.manager.len(), decoded.manager.len());
    assert_eq!(encode(&again.manager, MAGIC), written, "writing is stable");
}

fuzz_target!(|data: &[u8]| {
    for policy in [AddressPolicy::default(), AddressPolicy { loopback_allowed: true }] {
        check(data, policy);
        let mut with_checksum = data.to_vec();
        with_checksum.extend_from_slice(&sha256d(data));
        check(&with_checksum, policy);
    }
});
