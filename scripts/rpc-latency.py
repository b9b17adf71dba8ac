#!/usr/bin/env python3
"""getblockcount latency while something else loads the node (issue 15's
p99 figure): one keep-alive client, a call every 10 ms, user "u" password
"p"; prints n, p50 to p99.9, max and the calls over 2 and 5 ms on SIGTERM.

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
        at = lambda share: samples[min(n - 1, int(n * share))] * 1000
        over = lambda seconds: sum(sample > seconds for sample in samples)
        print(f"getblockcount n={n} p50={at(.5):.2f} p90={at(.9):.2f} p95={at(.95):.2f} "
              f"p99={at(.99):.2f} p99.9={at(.999):.2f} max={samples[-1]*1000:.2f} ms "
              f">2ms={over(0.002)} >5ms={over(0.005)}")
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
