#!/bin/bash
# runtime-calls.sh: how many times one request through `salvo bench --api API` calls the
# Swift runtime's reference counting, allocation and task switching — counted, not timed,
# so a noisy machine gives the same numbers as a quiet one (to about ±1 per request: a
# few counts, such as the default executor's hops, depend on how requests bunch up).
#
#   Benchmarks/runtime-calls.sh [API] [URL]      API: callbacks (default), async-loop, async
#   SALVO=path/to/salvo Benchmarks/runtime-calls.sh …   another build (say, before a change)
#   INSECURE=1 Benchmarks/runtime-calls.sh callbacks https://127.0.0.1:18443/small   (self-signed)
#
# Needs perf with uprobes, as root, and a release build of salvo
# (`swift build -c release --product salvo`). Each function is counted over a run of 20,000
# and one of 40,000 requests; the difference ÷ 20,000 is the per-request count, without the
# start-up's. A server must answer at URL (default http://127.0.0.1:18080/small, the
# benchmark nginx of compare.py's setup) with a small response, on keep-alive connections
# that last the whole run (nginx: keepalive_requests well above 40,000 ÷ 8), or the counts
# include reconnecting. Not counted: swift_retain_n / swift_release_n and the
# unknown-object and non-atomic variants, which the engine's paths rarely call.
set -euo pipefail
api=${1:-callbacks}
url=${2:-http://127.0.0.1:18080/small}
here=$(cd "$(dirname "$0")/.." && pwd)
salvo=${SALVO:-$here/.build/release/salvo}

fail() { echo "runtime-calls.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "uprobes need root"
command -v perf >/dev/null || fail "perf is not installed"
[ -x "$salvo" ] || fail "no salvo at $salvo (swift build -c release --product salvo)"
"$salvo" get -s ${INSECURE:+-k} -o /dev/null "$url" || fail "nothing answers at $url"

library() {   # library NAME: the path the binary loads NAME from
    local path
    path=$(ldd "$salvo" | awk -v name="$1" '$1 == name && $3 ~ /^\// { print $3 }')
    [ -n "$path" ] || fail "$salvo does not load $1 (a static Swift runtime cannot be probed this way)"
    echo "$path"
}
core=$(library libswiftCore.so)
concurrency=$(library libswift_Concurrency.so)
libc=$(library libc.so.6)

# Removed on any exit, a failed `perf probe` included.
trap 'perf probe -q -d "salvo_calls:*" >/dev/null 2>&1 || true; rm -f /tmp/runtime-calls.$$.*' EXIT
probes=()
add() {   # add LIBRARY FUNCTION: a uprobe on FUNCTION, kept for the counting below
    local event="salvo_calls:$2"
    perf probe -q -d "$event" >/dev/null 2>&1 || true
    perf probe -q -x "$1" -a "$event=$2" >/dev/null || fail "perf could not probe $2 in $1 (a probe of another name on it?)"
    probes+=("$event")
}
for function in swift_allocObject swift_retain swift_release swift_bridgeObjectRetain \
                swift_bridgeObjectRelease swift_unownedRetainStrong; do
    add "$core" "$function"
done
for function in swift_task_switch swift_task_enqueue swift_continuation_await; do
    add "$concurrency" "$function"
done
add "$libc" malloc

events=$(IFS=,; echo "${probes[*]}")
count() {   # count REQUESTS FILE: "event count" lines of one run, sorted, into FILE
    local output
    output=$(perf stat -x, -e "$events" -- "$salvo" bench -t1 -c8 -n "$1" --api "$api" ${INSECURE:+-k} --json "$url" 2>&1 >/tmp/runtime-calls.$$.json) \
        || fail "the $1-request run failed: $output"
    # Failed requests would be counted as requests: none may fail.
    python3 -c 'import json, sys; errors = json.load(open(sys.argv[1]))["summary"]["errors"]; sys.exit(sum(errors.values()) > 0)' \
        /tmp/runtime-calls.$$.json || fail "the $1-request run had failed requests"
    echo "$output" | awk -F, '/salvo_calls:/ { sub("salvo_calls:", "", $3); print $3, $1 }' | LC_ALL=C sort -k1,1 > "$2"
}
count 20000 /tmp/runtime-calls.$$.short
count 40000 /tmp/runtime-calls.$$.long
echo "calls per request, --api $api"
LC_ALL=C join /tmp/runtime-calls.$$.short /tmp/runtime-calls.$$.long | awk '{ printf "  %-28s %7.2f\n", $1, ($3 - $2) / 20000 }'
