//! Script objects: Core's `ScriptToUniv(script, out, include_hex=true,
//! include_address=true)` for a scriptPubKey, whose keys come in the order
//! `asm`, `desc`, `hex`, `address` (when there is one), `type`; and the
//! scriptSig object `TxToUniv` builds, `asm` (with signature hash types
//! decoded) then `hex`.

use crate::address::{write_address, AddressParams};
use crate::descriptor::write_descriptor;
use crate::json::{close_object, hex_string, key, open_object, plain_string};
use crate::script_asm::write_script_asm;
use crate::script_type::solve;

/// Writes a scriptPubKey object.
pub(crate) fn write_script_pub_key(out: &mut Vec<u8>, script: &[u8], params: &AddressParams) {
    let solution = solve(script);
    open_object(out, "asm");
    out.push(b'"');
    write_script_asm(out, script, false);
    out.push(b'"');
    key(out, "desc");
    out.push(b'"');
    let address_in_descriptor = write_descriptor(out, script, &solution, params);
    out.push(b'"');
    key(out, "hex");
    hex_string(out, script);
    match address_in_descriptor {
        Some(range) => {
            key(out, "address");
            out.push(b'"');
            out.extend_from_within(range);
            out.push(b'"');
        }
        None => {
            // rawtr() carries the key, not the address; other descriptors
            // have no address.
            let before_key = out.len();
            key(out, "address");
            out.push(b'"');
            if write_address(out, &solution, params) {
                out.push(b'"');
            } else {
                out.truncate(before_key);
            }
        }
    }
    key(out, "type");
    plain_string(out, solution.script_type().name().as_bytes());
    close_object(out);
}

/// Writes a non-coinbase input's scriptSig object.
pub(crate) fn write_script_sig(out: &mut Vec<u8>, script: &[u8]) {
    open_object(out, "asm");
    out.push(b'"');
    write_script_asm(out, script, true);
    out.push(b'"');
    key(out, "hex");
    hex_string(out, script);
    close_object(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hex::decode;
    use ibex_primitives::Network;

    fn script_pub_key(script_hex: &str) -> String {
        let mut out = Vec::new();
        let params = AddressParams::for_network(Network::Regtest);
        write_script_pub_key(&mut out, &decode(script_hex).unwrap(), &params);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn objects_in_core_order() {
        assert_eq!(
            script_pub_key("a914ada9762febbe1572df47a2bfaa55afba3245fa6587"),
            "{\"asm\":\"OP_HASH160 ada9762febbe1572df47a2bfaa55afba3245fa65 OP_EQUAL\",\
             \"desc\":\"addr(2N95TtsddudP6rkzo1v6DvbosoWHhMN84u1)#kxnpzv0d\",\
             \"hex\":\"a914ada9762febbe1572df47a2bfaa55afba3245fa6587\",\
             \"address\":\"2N95TtsddudP6rkzo1v6DvbosoWHhMN84u1\",\"type\":\"scripthash\"}"
        );
        let taproot = "9a255088b040d77c4bf347b31dcf59983a2bbf8741163fe888723018b59056d3";
        assert_eq!(
            script_pub_key(&format!("5120{taproot}")),
            format!(
                "{{\"asm\":\"1 {taproot}\",\"desc\":\"rawtr({taproot})#vvq2dqt4\",\
                 \"hex\":\"5120{taproot}\",\
                 \"address\":\"bcrt1pngj4pz9sgrthcjlng7e3mn6enqazh0u8gytrl6ygwgcp3dvs2mfsure33c\",\
                 \"type\":\"witness_v1_taproot\"}}"
            )
        );
        let nulldata = script_pub_key("6a");
        assert!(nulldata.starts_with("{\"asm\":\"OP_RETURN\",\"desc\":\"raw(6a)#"), "{nulldata}");
        assert!(nulldata.ends_with(",\"hex\":\"6a\",\"type\":\"nulldata\"}"), "{nulldata}");
    }

    #[test]
    fn script_sig_object() {
        let mut out = Vec::new();
        write_script_sig(&mut out, &[]);
        assert_eq!(out, b"{\"asm\":\"\",\"hex\":\"\"}");
    }
}
