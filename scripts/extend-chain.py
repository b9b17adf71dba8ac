#!/usr/bin/env python3
"""Appends coinbase-only regtest blocks to a chain, as a `-loadblock` file.

SwiftSync's assumevalid mode needs its terminal block two weeks of work
below the best header (Core's `-assumevalid` margin: 2,016 regtest
blocks). The benchmark chains end at their interesting height; this
writes blocks on top of their tip, each with a coinbase paying nothing to
`OP_TRUE` (BIP34 height in its scriptSig), so that a terminal height at
the old tip is covered.

    scripts/extend-chain.py --headers HEADERS.json --blocks 2100 --out extend.dat

HEADERS.json is a JSON list of the chain's block headers (hex, heights 1
to the tip, as `getblockheader <hash> false` answers). The file written
holds raw blocks with regtest's network magic, unobfuscated, as
`-loadblock` reads them.
"""

import argparse
import hashlib
import json
import struct

REGTEST_MAGIC = bytes.fromhex("fabfb5da")
REGTEST_BITS = 0x207FFFFF
TARGET = 0x7FFFFF << (8 * (0x20 - 3))


def sha256d(data: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def script_number(value: int) -> bytes:
    """CScriptNum's minimal little-endian encoding (positive values)."""
    encoded = bytearray()
    while value:
        encoded.append(value & 0xFF)
        value >>= 8
    if encoded and encoded[-1] & 0x80:
        encoded.append(0)
    return bytes(encoded)


def coinbase(height: int) -> bytes:
    number = script_number(height)
    # BIP34: the height pushed first; a second push keeps the scriptSig at
    # the 2-byte minimum even for one-byte heights.
    script_sig = bytes([len(number)]) + number + b"\x01\x00"
    return (
        struct.pack("<i", 1)
        + b"\x01"
        + b"\x00" * 32
        + b"\xff\xff\xff\xff"
        + bytes([len(script_sig)])
        + script_sig
        + b"\xff\xff\xff\xff"
        + b"\x01"
        + struct.pack("<q", 0)
        + b"\x01\x51"
        + struct.pack("<I", 0)
    )


def mine(previous_hash: bytes, merkle_root: bytes, time: int) -> bytes:
    for nonce in range(1 << 32):
        header = (
            struct.pack("<I", 0x20000000)
            + previous_hash
            + merkle_root
            + struct.pack("<III", time, REGTEST_BITS, nonce)
        )
        if int.from_bytes(sha256d(header), "little") <= TARGET:
            return header
    raise RuntimeError("no nonce found")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headers", required=True, help="JSON list of headers, heights 1 to the tip")
    parser.add_argument("--blocks", type=int, required=True, help="blocks to append")
    parser.add_argument("--out", required=True, help="the -loadblock file to write")
    arguments = parser.parse_args()
    with open(arguments.headers) as file:
        headers = [bytes.fromhex(text) for text in json.load(file)]
    tip = headers[-1]
    previous_hash = sha256d(tip)
    time = struct.unpack("<I", tip[68:72])[0]
    height = len(headers)
    with open(arguments.out, "wb") as out:
        for _ in range(arguments.blocks):
            height += 1
            time += 1
            transaction = coinbase(height)
            header = mine(previous_hash, sha256d(transaction), time)
            block = header + b"\x01" + transaction
            out.write(REGTEST_MAGIC + struct.pack("<I", len(block)) + block)
            previous_hash = sha256d(header)
    print(f"tip {previous_hash[::-1].hex()} at height {height}")


if __name__ == "__main__":
    main()
