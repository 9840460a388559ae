#!/usr/bin/env bash
# Resident memory of the engine with N idle keep-alive connections in its pool, against a
# private nginx on loopback: one run holding 1 connection and one holding N, so the
# difference divided by N - 1 is the user memory one connection costs (kernel socket
# buffers are not part of RSS).
#   usage: Benchmarks/idle-memory.sh [N=10000]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-10000}
salvo=${SALVO:-$here/.build/release/salvo}
[ -x "$salvo" ] || { echo "build first: swift build -c release --product salvo" >&2; exit 1; }
ulimit -n $(( n + 1024 )) 2>/dev/null || { echo "need an open-file limit above $(( n + 1024 ))" >&2; exit 1; }
work=$(mktemp -d /tmp/salvo-idle.XXXXXX)
SALVO_NGINX_CONNECTIONS=$(( n + 100 )) "$here/Tests/Fixtures/start-nginx.sh" "$work/nginx" --lifetime 300 >"$work/out" 2>"$work/err" &
launcher=$!
trap 'kill $(awk "/^PID /{print \$2}" "$work/out") 2>/dev/null || true; wait $launcher 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do grep -q '^PID ' "$work/out" 2>/dev/null && break; sleep 0.1; done
port=$(awk '/^PORT /{print $2}' "$work/out")
measure() {
    "$salvo" demo "http://127.0.0.1:$port/small" -n "$1" -c "$1" --connections "$1" -t 1 --report-memory \
        | awk '/^memory:/{print $2, $5}'
}
read -r one_rss one_heap < <(measure 1)
read -r many_rss many_heap < <(measure "$n")
echo "with 1 idle connection:      ${one_rss} KiB resident, ${one_heap} KiB heap in use"
echo "with $n idle connections: ${many_rss} KiB resident, ${many_heap} KiB heap in use"
echo "per connection: $(( (many_rss - one_rss) * 1024 / (n - 1) )) bytes resident, $(( (many_heap - one_heap) * 1024 / (n - 1) )) bytes of heap"
