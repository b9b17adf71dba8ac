#!/bin/bash
# SwiftSync stopped in the middle of its pass, then started again: what the
# stop costs and how long the second run takes to the tip.
#
# usage: scripts/bench-swiftsync-resume.sh IBEXD SERVER_DATADIR HINTS ASSUMEVALID HEIGHT DBCACHE DELAY_S WORK [SIGNAL]
#   SERVER_DATADIR  a synced regtest data directory, served on loopback
#   ASSUMEVALID     the assumevalid block, or 0: the fully validating mode
#                   (the server then serves spent coins, BIP 455)
#   DELAY_S         seconds after `[swiftsync] accounting` when the client is signalled
#   SIGNAL          TERM (default: a checkpoint is kept) or KILL (none)
set -euo pipefail
ibexd=$1 server=$2 hints=$3 assumevalid=$4 height=$5 dbcache=$6 delay=$7 work=$8 signal=${9:-TERM}
port=24559
server_log="$server/regtest/debug.log"
loaded_before=$(grep -c "Done loading" "$server_log" 2>/dev/null || true)
serving=()
if [ "$assumevalid" = 0 ]; then serving=(-peerblockspentcoins); fi
"$ibexd" -regtest -datadir="$server" -printtoconsole=0 -server=0 -connect=0 -listen=1 \
    -bind=127.0.0.1 -port=$port "${serving[@]}" &
server_pid=$!
# Waited for, so that the next run can lock its directory.
trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true' EXIT
until [ "$(grep -c "Done loading" "$server_log" 2>/dev/null || true)" -gt "$loaded_before" ]; do
    sleep 0.2
done
client="$work/resume-client"
rm -rf "$client"
mkdir -p "$client"
args=(-regtest -datadir="$client" -printtoconsole=0 -server=0 -connect=127.0.0.1:$port -listen=0
    -dbcache="$dbcache" -assumevalid="$assumevalid" -swiftsync="$hints" -stopatheight="$height")
started=$(date +%s.%N)
"$ibexd" "${args[@]}" >/dev/null 2>&1 &
client_pid=$!
until grep -q "\[swiftsync\] accounting" "$client/regtest/debug.log" 2>/dev/null; do sleep 0.05; done
sleep "$delay"
signalled=$(date +%s.%N)
kill -"$signal" $client_pid
wait $client_pid || true
stopped=$(date +%s.%N)
echo "first run $(echo "$signalled - $started" | bc) s, stopping took $(echo "$stopped - $signalled" | bc) s"
grep -h "checkpoint kept" "$client/regtest/debug.log" | sed 's/.*\] //' || true
restarted=$(date +%s.%N)
"$ibexd" "${args[@]}" >/dev/null 2>&1
finished=$(date +%s.%N)
grep -h "resuming from\|swiftsync\] the aggregate" "$client/regtest/debug.log" | sed 's/.*\] //'
echo "second run $(echo "$finished - $restarted" | bc) s"
