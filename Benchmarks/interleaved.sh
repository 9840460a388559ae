#!/bin/bash
# interleaved.sh: two or more builds of salvo, timed against each other in alternating short
# runs, so that a noisy machine's slow minutes fall on all of them alike.
#
#   Benchmarks/interleaved.sh ROUNDS API SALVO...      API: native, callbacks, async-loop, async
#   C=256 D=2s URL=http://127.0.0.1:18080/small Benchmarks/interleaved.sh 10 callbacks old/salvo new/salvo
#   URL=https://127.0.0.1:18443/small ARGS=-k Benchmarks/interleaved.sh 6 callbacks old/salvo new/salvo
#
# Each round runs every build once (`salvo bench -t1 -cC -dD`, pinned to CPU 1 with taskset),
# then prints, per build, the minimum and median user CPU µs per request, the median system
# CPU µs (from the process's rusage, via /usr/bin/time), and the maximum and median requests
# per second. A server must answer at URL (compare.py's benchmark nginx, or any on CPU 0);
# ARGS adds arguments to every run (-k for a self-signed certificate).
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
rounds=$1; api=$2; shift 2
connections=${C:-64}; duration=${D:-2s}; url=${URL:-http://127.0.0.1:18080/small}
read -r -a extra <<< "${ARGS:-}"
[ -x /usr/bin/time ] || { echo "interleaved.sh: needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 1; }
apiargs=(); [ "$api" = native ] || apiargs=(--api "$api")
results=$(mktemp); timing=$(mktemp); report=$(mktemp)
trap 'rm -f "$results" "$timing" "$report"' EXIT
for _ in $(seq "$rounds"); do
    for salvo in "$@"; do
        /usr/bin/time -f "%U %S" -o "$timing" taskset -c 1 "$salvo" bench -t1 -c"$connections" -d"$duration" --json \
            "${apiargs[@]}" ${extra[@]+"${extra[@]}"} "$url" > "$report" 2>/dev/null
        python3 - "$salvo" "$report" "$timing" >> "$results" <<'PY'
import json, sys
salvo, report, timing = sys.argv[1:]
summary = json.load(open(report))
summary = summary.get("summary", summary)
user, system = (float(x) for x in open(timing).read().split())
requests = summary["requests"]
if requests == 0:
    sys.exit(f"interleaved.sh: {salvo} made no requests")
print(salvo, summary["requests_per_second"], user * 1e6 / requests, system * 1e6 / requests)
PY
    done
done
python3 - "$results" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    salvo, rate, user, system = line.split()
    rows[salvo].append((float(rate), float(user), float(system)))
for salvo, runs in rows.items():
    users = sorted(run[1] for run in runs)
    systems = sorted(run[2] for run in runs)
    rates = sorted(run[0] for run in runs)
    print(f"{salvo:40} user µs/request min {users[0]:.2f} median {statistics.median(users):.2f}"
          f"   system median {statistics.median(systems):.2f}"
          f"   req/s max {rates[-1]:.0f} median {statistics.median(rates):.0f}   ({len(runs)} runs)")
PY
