#!/usr/bin/env python3
"""getblockcount latency while something else loads the node (issue 15's
p99 figure): one keep-alive client, a call every 10 ms, user "u" password
"p"; prints n, p50, p99 and max on SIGTERM.

    scripts/rpc-latency.py RPCPORT > latency.txt & ab -n 2000 -c 12 URL; kill %1
"""
import base64, http.client, signal, sys, time
port = int(sys.argv[1])
auth = "Basic " + base64.b64encode(b"u:p").decode()
samples = []
def report(*_):
    samples.sort()
    n = len(samples)
    if n:
        print(f"getblockcount n={n} p50={samples[n//2]*1000:.2f} ms p99={samples[min(n-1, n*99//100)]*1000:.2f} ms max={samples[-1]*1000:.2f} ms")
    sys.stdout.flush()
    sys.exit(0)
signal.signal(signal.SIGTERM, report)
connection = http.client.HTTPConnection("127.0.0.1", port)
body = '{"method":"getblockcount","id":1}'
while True:
    started = time.perf_counter()
    connection.request("POST", "/", body, {"Authorization": auth, "Content-Type": "application/json"})
    answer = connection.getresponse().read()
    samples.append(time.perf_counter() - started)
    time.sleep(0.01)
