#!/usr/bin/env python3
"""AssumeUTXO side by side: `dumptxoutset`, `loadtxoutset`, time to follow
the tip, and Ibex's background validation against its normal IBD of the
same blocks (issue 44's benchmark, figures in docs/benchmarks.md).

    scripts/bench-assumeutxo.py --chain CHAIN --work WORK --height N \
        --ibexd IBEXD --bitcoind BITCOIND [--bitcoind-assumeutxo PATCHED] \
        [--dbcache 450] [--phases import,dump,load,background]

CHAIN is an `ibex gen` output directory (block files and xor.dat), its
chain N blocks long. Phases, each reusing what the earlier ones left in
WORK:
- import: `ibexd` and `bitcoind` reindex CHAIN (not timed; both at once).
- dump: each node restarted with the page cache dropped, then
  `dumptxoutset WORK/<node>.dat latest`, timed; the files' sha256.
- load: an empty node of each kind, the page cache dropped, given every
  header (`submitheader`) and then `loadtxoutset` of its own kind's file:
  times from the process start, VmHWM (peak RSS) after the load. Core
  accepts only compiled entries: PATCHED is a `bitcoind` with the dump's
  entry added (scripts/build-core-bitcoind-assumeutxo prints it; this
  script prints the command when it is missing). Ibex gets
  `-testassumeutxo`.
- background: `--rounds` rounds of: Ibex loads its snapshot into an empty
  node, is given the import node as its peer (`addnode`) and is timed
  until its background chainstate proves the snapshot; an empty `ibexd`
  syncs the same blocks from the same peer (a normal IBD over P2P), timed
  to height N. The order alternates from round to round. Wall and CPU
  seconds (user + system, from /proc) of each. `--side-by-side` runs the
  two at once instead, so that both meet the same machine speed.

Run as root (dropping the page cache needs it). Nodes run at nice -15.
"""

import argparse
import base64
import hashlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

USER, PASSWORD = "bench", "bench"
RPC_PORTS = {"ibex-a": 19501, "core-a": 19502, "ibex-b": 19503, "core-b": 19504, "ibex-c": 19505}
P2P_PORT = 19601


def drop_caches():
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


class Node:
    """One node process with its JSON-RPC endpoint."""

    def __init__(self, name, binary, datadir, options):
        self.name, self.datadir, self.port = name, Path(datadir), RPC_PORTS[name]
        self.datadir.mkdir(parents=True, exist_ok=True)
        command = ["nice", "-n", "-15", str(binary), f"-datadir={datadir}", "-regtest",
                   f"-rpcport={self.port}", f"-rpcuser={USER}", f"-rpcpassword={PASSWORD}",
                   "-printtoconsole=0", "-dnsseed=0"] + options
        self.started = time.monotonic()
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = None

    def rpc(self, method, params=None, batch=None):
        body = batch if batch is not None else {"jsonrpc": "1.0", "id": 0, "method": method,
                                                "params": params or []}
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/", json.dumps(body).encode())
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=None) as reply:
                answer = json.load(reply)
        except urllib.error.HTTPError as error:
            answer = json.load(error)
        if batch is not None:
            return answer
        if answer.get("error"):
            raise RuntimeError(f"{self.name} {method}: {answer['error']}")
        return answer["result"]

    def wait_ready(self):
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited")
            try:
                return self.rpc("getblockcount")
            except (OSError, RuntimeError):
                time.sleep(0.1)

    def wait_height(self, height):
        while self.wait_ready() < height:
            time.sleep(0.2)

    def node_pid(self):
        # `nice` execs the node, so the child is the node itself.
        return self.process.pid

    def peak_rss_mib(self):
        for line in Path(f"/proc/{self.node_pid()}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_seconds(self):
        """User and system CPU time of the node so far."""
        fields = Path(f"/proc/{self.node_pid()}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        try:
            self.rpc("stop")
        except (OSError, RuntimeError):
            self.process.send_signal(signal.SIGINT)
        self.process.wait()


def link_blocks(chain, datadir):
    blocks = Path(datadir) / "regtest" / "blocks"
    blocks.mkdir(parents=True, exist_ok=True)
    for file in sorted(Path(chain).iterdir()):
        if file.name.startswith("blk") or file.name == "xor.dat":
            target = blocks / file.name
            if not target.exists():
                target.symlink_to(file.resolve())


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def import_phase(args, work):
    nodes = []
    for name, binary in (("ibex-a", args.ibexd), ("core-a", args.bitcoind)):
        link_blocks(args.chain, work / name)
        extra = ["-connect=0", "-par=2"] if name == "core-a" else []
        nodes.append(Node(name, binary, work / name, ["-reindex", "-listen=0", "-assumevalid=0",
                                                      f"-dbcache={args.dbcache}"] + extra))
    for node in nodes:
        node.wait_height(args.height)
        print(f"{node.name}: imported to {args.height} in {time.monotonic() - node.started:.1f} s",
              flush=True)
    a = nodes[0]
    hashes = a.rpc(None, batch=[{"jsonrpc": "1.0", "id": h, "method": "getblockhash", "params": [h]}
                                for h in range(1, args.height + 1)])
    headers = a.rpc(None, batch=[{"jsonrpc": "1.0", "id": i, "method": "getblockheader",
                                  "params": [answer["result"], False]}
                                 for i, answer in enumerate(hashes)])
    (work / "headers.json").write_text(json.dumps([answer["result"] for answer in headers]))
    for node in nodes:
        node.stop()


def dump_phase(args, work, results):
    for name, binary in (("ibex-a", args.ibexd), ("core-a", args.bitcoind)):
        path = work / f"{name}.dat"
        path.unlink(missing_ok=True)
        drop_caches()
        extra = ["-connect=0"] if name == "core-a" else []
        node = Node(name, binary, work / name, ["-listen=0", f"-dbcache={args.dbcache}"] + extra)
        node.wait_height(args.height)
        started = time.monotonic()
        answer = node.rpc("dumptxoutset", [str(path), "latest"])
        seconds = time.monotonic() - started
        node.stop()
        results[f"dump {name}"] = {"seconds": round(seconds, 2), "answer": answer,
                                   "bytes": path.stat().st_size, "sha256": sha256_of(path)}
        print(f"{name}: dumptxoutset {seconds:.2f} s, {answer['coins_written']} coins, "
              f"{path.stat().st_size} bytes", flush=True)
    (work / "dump.json").write_text(json.dumps(results["dump ibex-a"]["answer"]))
    same = results["dump ibex-a"]["sha256"] == results["dump core-a"]["sha256"]
    print(f"files byte-identical: {same}", flush=True)


def load_one(name, binary, options, work, snapshot, headers):
    datadir = work / name
    subprocess.run(["rm", "-rf", str(datadir)], check=True)
    drop_caches()
    node = Node(name, binary, datadir, options)
    node.wait_ready()
    ready = time.monotonic()
    answers = node.rpc(None, batch=[{"jsonrpc": "1.0", "id": i, "method": "submitheader",
                                     "params": [header]} for i, header in enumerate(headers)])
    refused = [answer for answer in answers if answer.get("error")]
    if refused:
        raise RuntimeError(f"{name}: submitheader refused: {refused[0]}")
    headers_done = time.monotonic()
    loaded = node.rpc("loadtxoutset", [str(snapshot)])
    load_done = time.monotonic()
    figures = {
        "start to RPC [s]": round(ready - node.started, 2),
        "submitheader [s]": round(headers_done - ready, 2),
        "loadtxoutset [s]": round(load_done - headers_done, 2),
        "start to following the tip [s]": round(load_done - node.started, 2),
        "coins": loaded["coins_loaded"],
        "coins/s": round(loaded["coins_loaded"] / (load_done - headers_done)),
        "peak RSS [MiB]": round(node.peak_rss_mib(), 1),
    }
    print(f"{name}: {figures}", flush=True)
    return node, figures


def load_phase(args, work, results):
    dumped = json.loads((work / "dump.json").read_text())
    headers = json.loads((work / "headers.json").read_text())
    entry = (f"{dumped['base_height']}:{dumped['base_hash']}:{dumped['txoutset_hash']}:"
             f"{dumped['nchaintx']}")
    if not args.bitcoind_assumeutxo:
        print("no --bitcoind-assumeutxo: build one with\n  scripts/build-core-bitcoind-assumeutxo "
              f"{entry.replace(':', ' ')} {work}/bitcoind-assumeutxo")
    else:
        node, figures = load_one("core-b", args.bitcoind_assumeutxo,
                                 ["-listen=0", "-connect=0", f"-dbcache={args.dbcache}"],
                                 work, work / "core-a.dat", headers)
        node.stop()
        results["load core"] = figures
    node, figures = load_one("ibex-b", args.ibexd,
                             ["-listen=0", f"-dbcache={args.dbcache}", f"-testassumeutxo={entry}"],
                             work, work / "ibex-a.dat", headers)
    node.stop()
    results["load ibex"] = figures


def background_run(args, work, entry, peer, headers):
    """One load and background validation; its seconds, CPU seconds, coins."""
    node, _ = load_one("ibex-b", args.ibexd,
                       ["-listen=0", f"-dbcache={args.dbcache}", f"-testassumeutxo={entry}"],
                       work, work / "ibex-a.dat", headers)
    cpu_before = node.cpu_seconds()
    started = time.monotonic()
    node.rpc("addnode", [peer, "add"])
    while len(node.rpc("getchainstates")["chainstates"]) != 1:
        time.sleep(0.2)
    seconds = time.monotonic() - started
    cpu = node.cpu_seconds() - cpu_before
    coins = node.rpc("gettxoutsetinfo")["hash_serialized_3"]
    node.stop()
    print(f"ibex-b: background validation to {args.height} in {seconds:.1f} s "
          f"({cpu:.1f} CPU s)", flush=True)
    return seconds, cpu, coins


def ibd_run(args, work, peer):
    """One normal IBD over P2P from `peer`; its seconds, CPU seconds, coins."""
    subprocess.run(["rm", "-rf", str(work / "ibex-c")], check=True)
    drop_caches()
    node = Node("ibex-c", args.ibexd, work / "ibex-c",
                ["-listen=0", f"-dbcache={args.dbcache}", f"-connect={peer}"])
    node.wait_height(args.height)
    seconds = time.monotonic() - node.started
    cpu = node.cpu_seconds()
    coins = node.rpc("gettxoutsetinfo")["hash_serialized_3"]
    node.stop()
    print(f"ibex-c: IBD over P2P to {args.height} in {seconds:.1f} s ({cpu:.1f} CPU s)",
          flush=True)
    return seconds, cpu, coins


def side_by_side(args, work, entry, peer, headers):
    """A background validation and a normal IBD at the same time, from the
    same peer: the machine's speed, which drifts by a quarter between runs
    on a shared VM, is then the same for both."""
    loaded, _ = load_one("ibex-b", args.ibexd,
                         ["-listen=0", f"-dbcache={args.dbcache}", f"-testassumeutxo={entry}"],
                         work, work / "ibex-a.dat", headers)
    subprocess.run(["rm", "-rf", str(work / "ibex-c")], check=True)
    drop_caches()
    fresh = Node("ibex-c", args.ibexd, work / "ibex-c",
                 ["-listen=0", f"-dbcache={args.dbcache}", f"-connect={peer}"])
    fresh.wait_ready()
    cpu_before = loaded.cpu_seconds()
    started = time.monotonic()
    loaded.rpc("addnode", [peer, "add"])
    seconds = {}
    while len(seconds) < 2:
        now = time.monotonic() - started
        if "background" not in seconds and len(loaded.rpc("getchainstates")["chainstates"]) == 1:
            seconds["background"] = (now, loaded.cpu_seconds() - cpu_before)
            print(f"ibex-b: background validation to {args.height} in {now:.1f} s", flush=True)
        if "ibd" not in seconds and fresh.rpc("getblockcount") >= args.height:
            seconds["ibd"] = (now, fresh.cpu_seconds())
            print(f"ibex-c: IBD to {args.height} in {now:.1f} s", flush=True)
        time.sleep(0.2)
    coins_b = loaded.rpc("gettxoutsetinfo")["hash_serialized_3"]
    coins_c = fresh.rpc("gettxoutsetinfo")["hash_serialized_3"]
    loaded.stop()
    fresh.stop()
    (background, background_cpu), (ibd, ibd_cpu) = seconds["background"], seconds["ibd"]
    return {"order": "side by side", "background [s]": round(background, 1),
            "ibd [s]": round(ibd, 1), "ratio": round(background / ibd, 3),
            "background [CPU s]": round(background_cpu, 1), "ibd [CPU s]": round(ibd_cpu, 1),
            "CPU ratio": round(background_cpu / ibd_cpu, 3), "same coins": coins_b == coins_c}


def background_phase(args, work, results):
    """`--rounds` rounds, each a background validation and a normal IBD,
    the order alternating (background first in the first round) so that a
    drift of the machine over the runs falls on both."""
    dumped = json.loads((work / "dump.json").read_text())
    headers = json.loads((work / "headers.json").read_text())
    entry = (f"{dumped['base_height']}:{dumped['base_hash']}:{dumped['txoutset_hash']}:"
             f"{dumped['nchaintx']}")
    peer = f"127.0.0.1:{P2P_PORT}"
    drop_caches()
    server = Node("ibex-a", args.ibexd, work / "ibex-a",
                  ["-listen=1", "-bind=127.0.0.1", f"-port={P2P_PORT}", f"-dbcache={args.dbcache}"])
    server.wait_height(args.height)
    rounds = []
    if args.side_by_side:
        figures = side_by_side(args, work, entry, peer, headers)
        print(f"side by side: {figures}", flush=True)
        rounds.append(figures)
    for number in range(0 if args.side_by_side else args.rounds):
        order = ["background", "ibd"] if number % 2 == 0 else ["ibd", "background"]
        runs = {}
        for kind in order:
            runs[kind] = (background_run(args, work, entry, peer, headers) if kind == "background"
                          else ibd_run(args, work, peer))
        (background, background_cpu, coins_b), (ibd, ibd_cpu, coins_c) = runs["background"], runs["ibd"]
        figures = {"order": ",".join(order), "background [s]": round(background, 1),
                   "ibd [s]": round(ibd, 1), "ratio": round(background / ibd, 3),
                   "background [CPU s]": round(background_cpu, 1), "ibd [CPU s]": round(ibd_cpu, 1),
                   "CPU ratio": round(background_cpu / ibd_cpu, 3), "same coins": coins_b == coins_c}
        print(f"round {number + 1}: {figures}", flush=True)
        rounds.append(figures)
    server.stop()
    results["background"] = rounds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chain", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--height", type=int, required=True)
    parser.add_argument("--ibexd", required=True)
    parser.add_argument("--bitcoind", required=True)
    parser.add_argument("--bitcoind-assumeutxo")
    parser.add_argument("--dbcache", type=int, default=450)
    parser.add_argument("--phases", default="import,dump,load,background")
    parser.add_argument("--rounds", type=int, default=1,
                        help="background phase: rounds of a background validation and an IBD")
    parser.add_argument("--side-by-side", action="store_true",
                        help="background phase: run the two at the same time instead")
    args = parser.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    results_path = work / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    phases = {"import": import_phase, "dump": dump_phase, "load": load_phase,
              "background": background_phase}
    for phase in args.phases.split(","):
        if phase == "import":
            import_phase(args, work)
        else:
            phases[phase](args, work, results)
        results_path.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
