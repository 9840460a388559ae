#!/bin/bash
# instruction-count.sh: instructions per request of a load run, counted by valgrind's
# callgrind — the same on a noisy machine as on a quiet one (to about ±2%: how responses
# bunch into reads moves a few hundred instructions), so a change of 1% is visible where
# timing runs move by 20%.
#
#   Benchmarks/instruction-count.sh .build/release/salvo bench --api prepared-callbacks -t1 -c8 http://127.0.0.1:18080/small
#   Benchmarks/instruction-count.sh .build/release/salvo bench -t1 -c8 http://127.0.0.1:18080/small
#   Benchmarks/instruction-count.sh .build/release/scripted-load -t1 -c8 http://127.0.0.1:18080/small
#   PROFILE=1 Benchmarks/instruction-count.sh …   also keeps the longer run's profile and prints its
#                                                top functions (callgrind_annotate reads it further)
#
# The command is run twice, with `-n 10000` and `-n 30000` added; the difference ÷ 20,000 is
# the cost of one request, without start-up's and the report's. A server must answer at the
# URL on keep-alive connections that last the run (compare.py's nginx, or any nginx with a
# large keepalive_requests). User space only: the kernel's share is not counted.
#
# Needs valgrind and a C compiler. valgrind 3.19 dies where libdispatch's main thread
# parks itself in sigsuspend (a Swift program whose main is async): a small library put
# before it in the load order parks that thread in sleep instead.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,20p' "$0"; exit 2; }
command -v valgrind >/dev/null || { echo "instruction-count.sh: valgrind is not installed" >&2; exit 1; }
binary=$1; shift
work=$(mktemp -d /tmp/instruction-count.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/park.c" <<'EOF'
#include <signal.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { (void)mask; for (;;) sleep(1000); return -1; }
EOF
cc -shared -fPIC -O2 -o "$work/park.so" "$work/park.c"
# A copy without debug information: valgrind 3.19's reader refuses the Swift toolchain's.
cp "$binary" "$work/program"
strip -g "$work/program"

count() {   # count N ARGS…: total instructions of the program run with ARGS (N names the run)
    local out="$work/callgrind.$1"
    shift
    LD_PRELOAD="$work/park.so" valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$work/program" "$@" >/dev/null 2>&1 &
    local pid=$!
    # The program exits, but the parked main thread can keep valgrind waiting: the profile
    # is complete once its totals are written.
    for _ in $(seq 1800); do
        sleep 1
        if grep -q '^totals' "$out" 2>/dev/null; then break; fi
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep '^totals' "$out" | awk '{ print $2 }'
}
# The request count goes last, after the caller's arguments.
short=$(count 10000 "$@" -n 10000)
long=$(count 30000 "$@" -n 30000)
[ -n "$short" ] && [ -n "$long" ] || { echo "instruction-count.sh: a run did not finish" >&2; exit 1; }
echo "$(basename "$binary") $*: $(( (long - short) / 20000 )) instructions per request"
if [ -n "${PROFILE:-}" ]; then
    cp "$work/callgrind.30000" ./callgrind.out.requests
    echo "profile of the 30,000-request run: ./callgrind.out.requests"
    callgrind_annotate --inclusive=no ./callgrind.out.requests 2>/dev/null | sed -n '20,45p'
fi
