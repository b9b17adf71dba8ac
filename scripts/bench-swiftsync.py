#!/usr/bin/env python3
"""SwiftSync benchmark: IBD over P2P from a local Ibex peer, with and without hints.

A serving node (a synced data directory, started here with `-listen`)
holds the chain; each round starts a fresh client that syncs from it with
`-assumevalid` at the server's tip, once with `-swiftsync=HINTS` and once
without (alternated, because this VM's speed drifts between minutes), and
times it from start to the `UpdateTip` line of `--height`, with the CPU
seconds it used (/proc). Optionally `bitcoind` clients (Core v30 and
master, each `--bitcoind NAME=PATH`) sync the same way in the same minutes.

With `--full` every client runs with `-assumevalid=0` (every script
checked) and the server serves spent coins (`-peerblockspentcoins`, BIP
455), so `-swiftsync` runs its fully validating mode.

    scripts/bench-swiftsync.py --ibexd BIN/ibexd --server DATADIR --hints FILE \\
        --assumevalid HASH --height 4100 --dbcache 100 --rounds 1 --work DIR \\
        [--bitcoind v30=CORE30/bitcoind --bitcoind master=CORE/bitcoind]
    scripts/bench-swiftsync.py --full --ibexd BIN/ibexd --server DATADIR --hints FILE \\
        --height 2000 --dbcache 450 --rounds 2 --work DIR

Prints one JSON line per run and a summary with the ratios.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def wait_for_line(log_path: str, needle: str, process: subprocess.Popen, timeout_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if process.poll() is not None:
            raise RuntimeError(f"exited before {needle!r}: see {log_path}")
        try:
            with open(log_path, errors="replace") as file:
                if needle in file.read():
                    return time.monotonic()
        except FileNotFoundError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"no {needle!r} in {timeout_s} s: see {log_path}")


def run_client(name, command, log_path, needle, timeout_s):
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        reached = wait_for_line(log_path, needle, process, timeout_s)
        cpu = cpu_seconds(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=600)
    return {"run": name, "wall_s": round(reached - started, 1), "cpu_s": round(cpu, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ibexd", required=True)
    parser.add_argument("--server", required=True, help="synced regtest data directory to serve from")
    parser.add_argument("--hints", required=True)
    parser.add_argument("--assumevalid", help="the clients' -assumevalid (not with --full)")
    parser.add_argument("--full", action="store_true",
                        help="-assumevalid=0 everywhere; the server serves spent coins")
    parser.add_argument("--height", type=int, required=True, help="the tip the clients sync to")
    parser.add_argument("--dbcache", type=int, default=450)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work", required=True)
    parser.add_argument("--bitcoind", action="append", default=[], metavar="[NAME=]PATH",
                        help="a Core bitcoind to time beside (repeat for several: v30=PATH master=PATH)")
    parser.add_argument("--timeout", type=float, default=7200)
    arguments = parser.parse_args()
    if arguments.full == (arguments.assumevalid is not None):
        parser.error("give either --assumevalid or --full")
    assume_valid = "0" if arguments.full else arguments.assumevalid
    cores = {}
    for given in arguments.bitcoind:
        name, _, path = given.rpartition("=")
        cores[f"bitcoind-{name}" if name else "bitcoind"] = path

    os.makedirs(arguments.work, exist_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [arguments.ibexd, "-regtest", f"-datadir={arguments.server}", "-printtoconsole=0",
         "-server=0", "-connect=0", "-listen=1", "-bind=127.0.0.1", f"-port={port}"]
        + (["-peerblockspentcoins"] if arguments.full else []),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = []
    try:
        wait_for_line(os.path.join(arguments.server, "regtest/debug.log"), "init message: Done loading",
                      server, 600)
        time.sleep(1)
        needle = f"height={arguments.height} "
        for round_number in range(arguments.rounds):
            kinds = ["swiftsync", "ibex"] if round_number % 2 else ["ibex", "swiftsync"]
            kinds.extend(cores)
            for kind in kinds:
                datadir = os.path.join(arguments.work, f"client-{kind}")
                shutil.rmtree(datadir, ignore_errors=True)
                os.makedirs(datadir)
                common = ["-regtest", f"-datadir={datadir}", "-printtoconsole=0", "-server=0",
                          f"-connect=127.0.0.1:{port}", "-listen=0", f"-dbcache={arguments.dbcache}",
                          f"-assumevalid={assume_valid}"]
                if kind in cores:
                    command = [cores[kind]] + common
                else:
                    command = [arguments.ibexd] + common
                    if kind == "swiftsync":
                        command.append(f"-swiftsync={arguments.hints}")
                log = os.path.join(datadir, "regtest/debug.log")
                server_cpu = cpu_seconds(server.pid)
                result = run_client(kind, command, log, needle, arguments.timeout)
                # The server shares the machine: its CPU counts against the client's.
                result["server_cpu_s"] = round(cpu_seconds(server.pid) - server_cpu, 1)
                result.update({"round": round_number, "dbcache": arguments.dbcache})
                if kind == "swiftsync":
                    with open(log, errors="replace") as file:
                        result["swiftsync_line"] = next(
                            (line.strip() for line in file if "[swiftsync] the aggregate is zero" in line
                             or "[swiftsync] given up" in line), None)
                print(json.dumps(result), flush=True)
                results.append(result)
                shutil.rmtree(datadir, ignore_errors=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=600)
    walls = {}
    for result in results:
        walls.setdefault(result["run"], []).append(result["wall_s"])
    summary = {kind: sum(values) / len(values) for kind, values in walls.items()}
    if "ibex" in summary and "swiftsync" in summary:
        summary["ibex_over_swiftsync"] = round(summary["ibex"] / summary["swiftsync"], 2)
    for kind in cores:
        if kind in summary and "swiftsync" in summary:
            summary[f"{kind}_over_swiftsync"] = round(summary[kind] / summary["swiftsync"], 2)
        if kind in summary and "ibex" in summary:
            summary[f"{kind}_over_ibex"] = round(summary[kind] / summary["ibex"], 2)
    print(json.dumps({"summary": summary}), flush=True)


if __name__ == "__main__":
    main()
