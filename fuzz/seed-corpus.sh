#!/bin/sh
# Seeds fuzz/corpus/{transaction,block} from Core's vectors in ../shared (read
# only; the corpus stays out of git). Needs python3. Run from the fuzz directory.
set -eu
shared="${SHARED:-../../shared}"
mkdir -p corpus/transaction corpus/block corpus/script_differential
python3 - "$shared/vectors/bitcoin-core" <<'PY'
import hashlib, json, sys
vectors = sys.argv[1]
def write(kind, data):
    name = hashlib.sha1(data).hexdigest()
    with open(f"corpus/{kind}/{name}", "wb") as out:
        out.write(data)
for file in ("tx_valid.json", "tx_invalid.json"):
    for entry in json.load(open(f"{vectors}/{file}")):
        if len(entry) == 3:
            write("transaction", bytes.fromhex(entry[1]))
# script_differential: each transaction in raw mode (selector 0xff: all
# consensus flags), spending OP_TRUE, a P2WPKH and a P2TR output.
spent_scripts = (b"\x51", b"\x00\x14" + bytes(20), b"\x51\x20" + bytes(range(32)))
for file in ("tx_valid.json", "tx_invalid.json"):
    for entry in json.load(open(f"{vectors}/{file}")):
        if len(entry) == 3:
            for script in spent_scripts:
                header = b"\xff" + (100000).to_bytes(8, "little") + len(script).to_bytes(2, "little")
                write("script_differential", header + script + bytes.fromhex(entry[1]))
for entry in json.load(open(f"{vectors}/blockfilters.json"))[1:]:
    write("block", bytes.fromhex(entry[2]))
PY
echo "transactions: $(ls corpus/transaction | wc -l), blocks: $(ls corpus/block | wc -l)," \
    "script_differential: $(ls corpus/script_differential | wc -l)"
