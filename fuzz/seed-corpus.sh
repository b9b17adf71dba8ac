#!/bin/sh
# Seeds fuzz/corpus/{transaction,block} from Core's vectors in ../shared (read
# only; the corpus stays out of git). Needs python3. Run from the fuzz directory.
set -eu
shared="${SHARED:-../../shared}"
mkdir -p corpus/transaction corpus/block
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
for entry in json.load(open(f"{vectors}/blockfilters.json"))[1:]:
    write("block", bytes.fromhex(entry[2]))
PY
echo "transactions: $(ls corpus/transaction | wc -l), blocks: $(ls corpus/block | wc -l)"
