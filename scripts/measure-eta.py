#!/usr/bin/env python3
"""Runs ibexd on a regtest datadir and times its plain `progress:` lines
against the moment the tip reaches the target height (its `UpdateTip` line in
debug.log, polled every 5 ms): for each tenth of the height, the ETA printed
against the time really left, and what the same 30 s average over blocks
instead of bytes would have said. Writes OUT_PREFIX-lines.txt (each stderr
line with its time) and OUT_PREFIX-table.md. See docs/benchmarks.md.

usage: measure-eta.py IBEXD DATADIR TARGET_HEIGHT OUT_PREFIX -- ibexd options...
e.g.   measure-eta.py ibexd D 2400 run -- -regtest -reindex -assumevalid=T \
           -stopatheight=2400 -dbcache=450 -printtoconsole=0 -progressinterval=250
"""
import os
import re
import subprocess
import sys
import threading
import time

ibexd, datadir, target, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
options = sys.argv[sys.argv.index("--") + 1:]
log_path = os.path.join(datadir, "regtest", "debug.log")
if os.path.exists(log_path):
    os.remove(log_path)

started = time.monotonic()
process = subprocess.Popen([ibexd, f"-datadir={datadir}"] + options,
                           stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
lines = []


def read_stderr():
    for line in process.stderr:
        lines.append((time.monotonic() - started, line.rstrip("\n")))


reader = threading.Thread(target=read_stderr)
reader.start()
needle = f" height={target} "
reached = None
offset = 0
while process.poll() is None or reached is None:
    if os.path.exists(log_path):
        with open(log_path, "r", errors="replace") as log:
            log.seek(offset)
            chunk = log.read()
            offset += len(chunk.encode("utf-8", errors="replace"))
            if reached is None and "UpdateTip:" in chunk and needle in chunk:
                reached = time.monotonic() - started
    if process.poll() is not None and reached is None:
        break
    time.sleep(0.005)
process.wait()
reader.join()
ended = time.monotonic() - started


def seconds(text):
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?", text)
    if not match or text in ("", "-", "?"):
        return None
    hours, minutes, secs = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(secs or 0)


with open(prefix + "-lines.txt", "w") as out:
    for at, line in lines:
        out.write(f"{at:.3f} {line}\n")
# The same smoothing over blocks instead of bytes, for comparison: what an
# estimate counting blocks would have printed at each line.
import math
blocks_eta = {}
numerator = denominator = 0.0
previous = None
for at, line in lines:
    match = re.match(r"progress: height (\d+)/(\d+) ", line)
    if not match:
        continue
    height = int(match.group(1))
    if previous is not None and at > previous[0]:
        decay = math.exp(-(at - previous[0]) / 30.0)
        numerator = numerator * decay + max(height - previous[1], 0)
        denominator = denominator * decay + (at - previous[0])
    previous = (at, height)
    if denominator > 0 and numerator > 0:
        blocks_eta[at] = (target - height) / (numerator / denominator)
rows = []
for tenth in range(1, 10):
    threshold = target * tenth / 10
    for at, line in lines:
        match = re.match(r"progress: height (\d+)/(\d+) .* ETA (\S+)$", line)
        if match and int(match.group(1)) >= threshold:
            eta = seconds(match.group(3))
            real = reached - at
            error = None if eta is None else (eta - real) / real * 100
            by_blocks = blocks_eta.get(at)
            rows.append((tenth * 10, int(match.group(1)), at, match.group(3), real, error, by_blocks))
            break
with open(prefix + "-table.md", "w") as out:
    out.write(f"target reached at {reached:.2f} s, process ended at {ended:.2f} s\n\n")
    out.write("| done | height | at (s) | ETA printed | real remaining (s) | error | by blocks instead | its error |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    for done, height, at, eta, real, error, by_blocks in rows:
        error_text = "-" if error is None else f"{error:+.1f} %"
        blocks_text = "-" if by_blocks is None else f"{by_blocks:.1f}s | {(by_blocks - real) / real * 100:+.1f} %"
        out.write(f"| {done} % | {height} | {at:.2f} | {eta} | {real:.2f} | {error_text} | {blocks_text} |\n")
print(open(prefix + "-table.md").read())
