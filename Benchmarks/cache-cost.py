#!/usr/bin/env python3
"""What a cache hit costs next to a round trip: typed-load --mode cache against a private
nginx serving compare.py's JSON document, over several rounds.

    python3 Benchmarks/cache-cost.py [--rounds 5] [--duration 6]

Each round runs typed-load once (pinned to --client-cpu; nginx on --server-cpu): calls one
after another through a client without a cache (a round trip to nginx each), with a memory
cache and with a disk cache holding a fresh copy; it reports the CPU time (user+sys of the
client process) per call of each, and the hits' ratios to the round trip. Needs
`swift build -c release --product typed-load`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (its private nginx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=6.0, help="seconds per round (a third per client)")
    ap.add_argument("--typed-load", default=os.path.join(compare.REPO, ".build/release/typed-load"))
    ap.add_argument("--nginx", default="/usr/sbin/nginx")
    ap.add_argument("--server-cpu", type=int, default=0)
    ap.add_argument("--client-cpu", type=int, default=1)
    opts = ap.parse_args()
    nginx = compare.Nginx(opts.nginx, opts.server_cpu)
    rows = []
    try:
        nginx.start()
        url = nginx.url("http", "/user.json")
        for round in range(opts.rounds):
            out = subprocess.run(["taskset", "-c", str(opts.client_cpu), opts.typed_load, "--mode", "cache",
                                  "--url", url, "--duration", str(opts.duration)],
                                 capture_output=True, text=True, timeout=opts.duration * 4 + 30)
            if out.returncode != 0:
                sys.exit("typed-load failed: " + out.stderr)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"round {round + 1}: {row}", file=sys.stderr)
    finally:
        nginx.stop()
    median = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
    print("| client | CPU per call (µs, median of %d) | vs a round trip |" % len(rows))
    print("|---|---|---|")
    print("| no cache: a round trip to nginx | %.2f | 1 |" % (median["network_cpu_ns"] / 1000))
    print("| answered at once in process, no middleware | %.2f | %.1f%% |" % (
        median["bare_cpu_ns"] / 1000, median["bare_cpu_ns"] / median["network_cpu_ns"] * 100))
    print("| floor: answered at once in process, behind one middleware | %.2f | %.1f%% |" % (
        median["floor_cpu_ns"] / 1000, median["floor_cpu_ns"] / median["network_cpu_ns"] * 100))
    print("| memory cache, fresh hit | %.2f | %.1f%% |" % (median["memory_cpu_ns"] / 1000, median["memory_ratio"] * 100))
    print("| disk cache, fresh hit | %.2f | %.1f%% |" % (median["disk_cpu_ns"] / 1000, median["disk_ratio"] * 100))


if __name__ == "__main__":
    main()
