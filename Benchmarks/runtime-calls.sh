#!/bin/bash
# runtime-calls.sh: how many times one request through `salvo bench --api API` calls the
# Swift runtime's reference counting, allocation and task switching — counted, not timed,
# so the numbers are the same on a quiet machine and a noisy one.
#
#   Benchmarks/runtime-calls.sh [API] [URL]      API: callbacks (default), async-loop, async
#   SALVO=path/to/salvo Benchmarks/runtime-calls.sh …   another build (say, before a change)
#
# Needs perf and uprobes (run as root). Each function is counted over a run of 20,000 and
# one of 40,000 requests; the difference ÷ 20,000 is the per-request count, without the
# start-up's. A server must answer at URL (default http://127.0.0.1:18080/small, the
# benchmark nginx of compare.py's setup; any small response will do).
set -euo pipefail
api=${1:-callbacks}
url=${2:-http://127.0.0.1:18080/small}
here=$(cd "$(dirname "$0")/.." && pwd)
salvo=${SALVO:-$here/.build/release/salvo}
[ -x "$salvo" ] || (cd "$here" && swift build -c release --product salvo >/dev/null)

library() { ldd "$salvo" | awk -v name="$1" '$1 == name { print $3 }'; }
core=$(library libswiftCore.so)
concurrency=$(library libswift_Concurrency.so)
libc=$(library libc.so.6)

probes=()
add() {   # add LIBRARY FUNCTION: a uprobe on FUNCTION, kept for the counting below
    local event="salvo_calls:$2"
    perf probe -q -d "$event" >/dev/null 2>&1 || true
    perf probe -q -x "$1" -a "$event=$2" >/dev/null
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
trap 'perf probe -q -d "salvo_calls:*" >/dev/null 2>&1 || true' EXIT

events=$(IFS=,; echo "${probes[*]}")
count() {   # count REQUESTS: "event count" lines for one run
    perf stat -x, -e "$events" -- "$salvo" bench -t1 -c8 -n "$1" --api "$api" "$url" 2>&1 >/dev/null \
        | awk -F, '/salvo_calls:/ { sub("salvo_calls:", "", $3); print $3, $1 }'
}
echo "calls per request, --api $api"
join <(count 20000 | sort) <(count 40000 | sort) | awk '{ printf "  %-28s %7.2f\n", $1, ($3 - $2) / 20000 }'
