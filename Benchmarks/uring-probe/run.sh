#!/usr/bin/env bash
# Builds the probe and runs its three I/O paths in turn against an HTTP server on loopback,
# client pinned to CPU 1: epoll, io_uring (batched submission, registered files) and
# io_uring with multishot receive into provided buffers.
#
#   Benchmarks/uring-probe/run.sh PORT [CONNECTIONS=64] [ROUNDS=5] [SECONDS=4] [PATH=/small]
#
# Start a server first, e.g. the test nginx (pin its worker to CPU 0 for steadier numbers):
#   bash Tests/Fixtures/start-nginx.sh /tmp/probe-nginx --lifetime 600   # prints PORT …
set -euo pipefail
port=${1:?usage: run.sh PORT [CONNECTIONS] [ROUNDS] [SECONDS] [PATH]}
connections=${2:-64}
rounds=${3:-5}
seconds=${4:-4}
path=${5:-/small}
here="$(cd "$(dirname "$0")" && pwd)"
binary="${TMPDIR:-/tmp}/salvo-uring-probe"
gcc -O2 -Wall -Wextra -o "$binary" "$here/probe.c" -luring
for _ in $(seq "$rounds"); do
  for mode in epoll uring uring-ms; do
    taskset -c 1 "$binary" "$mode" 127.0.0.1 "$port" "$path" "$connections" "$seconds"
  done
done
