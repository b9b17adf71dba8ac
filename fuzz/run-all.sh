#!/usr/bin/env bash
# Runs every fuzz target (script_differential aside: it needs Bitcoin Core's
# kernel) for a fixed time each, one after the other, each starting from its
# committed inputs in fuzz/regressions/<target>/ and a corpus kept beside
# the fuzz build. A crash fails the run and leaves the input in
# fuzz/artifacts/<target>/. Needs cargo-fuzz (`cargo install cargo-fuzz`).
#
#   fuzz/run-all.sh [seconds per target, default 10] [target ...]
#
# RocksDB (which ibex-chainstate links) is not rebuilt for the fuzz build
# when the main workspace's build holds one: its static library is linked
# instead (ROCKSDB_LIB_DIR), which saves a ~15-minute C++ build.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-10}"
shift || true
main_target_dir="${CARGO_TARGET_DIR:-$HOME/.cache/ibex-target}"
fuzz_target_dir="${IBEX_FUZZ_TARGET_DIR:-$HOME/.cache/ibex-fuzz-target}"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$fuzz_target_dir"

rocksdb_version() { grep -A1 '^name = "librocksdb-sys"$' "$1" | sed -n 's/^version = "\(.*\)"$/\1/p'; }
built_rocksdb=$(ls -t "$main_target_dir"/{ci,release,debug}/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -1 || true)
# Only the same RocksDB version as the fuzz build's bindings.
if [ -n "$built_rocksdb" ] && [ "$(rocksdb_version Cargo.lock)" = "$(rocksdb_version fuzz/Cargo.lock)" ]; then
    mkdir -p "$fuzz_target_dir/rocksdb-lib"
    # Copied only when it changed, so the fuzz build stays warm.
    cmp -s "$built_rocksdb" "$fuzz_target_dir/rocksdb-lib/librocksdb.a" \
        || cp "$built_rocksdb" "$fuzz_target_dir/rocksdb-lib/librocksdb.a"
    export ROCKSDB_LIB_DIR="$fuzz_target_dir/rocksdb-lib" ROCKSDB_STATIC=1
fi

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list | grep -v '^script_differential$')
fi
cargo fuzz build
for target in "${targets[@]}"; do
    corpus="$fuzz_target_dir/corpus/$target"
    mkdir -p "$corpus"
    echo "fuzz: $target for ${seconds} s"
    # The first directory is the corpus libFuzzer adds to; the committed
    # inputs are read only.
    log="$fuzz_target_dir/last-run-$target.log"
    if ! cargo fuzz run "$target" "$corpus" "fuzz/regressions/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
        tail -40 "$log" >&2
        echo "fuzz: $target failed (input in fuzz/artifacts/$target/, log $log)" >&2
        exit 1
    fi
    grep -E '^#[0-9]+[[:space:]]+DONE|^stat::(number_of_executed_units|peak_rss_mb)' "$log" || true
done
echo "fuzz: ${#targets[@]} targets ran ${seconds} s each without a failure"
