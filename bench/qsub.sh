#!/bin/sh
# bench/qsub.sh -- sequential submission rate of gridspool's qsub.
#
# Builds the release binaries, creates a temporary cell with `sched_d --init`, runs N
# sequential `qsub -b y true` (default 1000) and prints submissions per second. The real
# SGE 8.1.9 on the reference 2-core machine does about 17/s (shared/oracle/sge-figures.md).
# No daemon runs: this measures the client and the spool (fsync included), not scheduling.
#
# Usage: bench/qsub.sh [N]
# TMPDIR=/dev/shm bench/qsub.sh measures the client alone (tmpfs makes fsync nearly free).
set -eu
N=${1:-1000}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
cargo build --release --quiet --bin qsub --bin sched_d
BIN="$HERE/target/release"
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gridspool-bench.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
"$BIN/sched_d" --init --spool "$ROOT/default" >/dev/null
export SGE_ROOT="$ROOT" SGE_CELL=default
cd "$ROOT"
start=$(date +%s.%N)
i=0
while [ "$i" -lt "$N" ]; do
    "$BIN/qsub" -b y true >/dev/null
    i=$((i + 1))
done
end=$(date +%s.%N)
jobs=$(ls "$ROOT/default/jobs" | grep -c '\.job$')
[ "$jobs" -eq "$N" ] || { echo "expected $N job files, found $jobs" >&2; exit 1; }
awk -v n="$N" -v s="$start" -v e="$end" \
    'BEGIN { t = e - s; printf "%d submissions in %.2f s: %.0f submissions/s\n", n, t, n / t }'
