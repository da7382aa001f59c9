#!/bin/sh
# bench/throughput.sh -- end-to-end throughput of trivial jobs on the local host.
#
# A fresh cell (sched_d --init) with the local host, a running sched_d, then N jobs
# `qsub -b y true` submitted as fast as qsub goes; prints jobs/s from the first submission
# to the last accounting record, and the submission rate alone. Target (issue 3): >= 200
# jobs/s for 2,000 jobs. Real SGE 8.1.9 at its fastest interval: 1 job/s (sge-figures.md).
#
# Usage: [SLOTS=8] bench/throughput.sh [N]
# SLOTS sets the host's and all.q's slots (default 8: trivial jobs use no CPU to speak of, so
# more slots than CPUs keep the pipeline full; the default cell has as many slots as CPUs).
set -eu
N=${1:-2000}
SLOTS=${SLOTS:-8}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
cargo build --release --quiet
BIN="$HERE/target/release"
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gridspool-throughput.XXXXXX")
"$BIN/sched_d" --init --spool "$ROOT/default" >/dev/null
sed -i "s/^\(    slots:\) [0-9]*/\1 $SLOTS/" "$ROOT/default/config.yaml"
export SGE_ROOT="$ROOT" SGE_CELL=default
"$BIN/sched_d" --spool "$ROOT/default" --log-level warn --retention 1 2>"$ROOT/sched_d.err" &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$ROOT"' EXIT
sleep 0.5
mkdir -p "$ROOT/work" && cd "$ROOT/work"
start=$(date +%s.%N)
i=0
while [ "$i" -lt "$N" ]; do
    "$BIN/qsub" -b y -o /dev/null -e /dev/null true >/dev/null
    i=$((i + 1))
done
submitted=$(date +%s.%N)
acct="$ROOT/default/common/accounting"
while :; do
    done_jobs=$( (grep -vc '^#' "$acct" 2>/dev/null) || echo 0)
    [ "$done_jobs" -ge "$N" ] && break
    sleep 0.05
done
end=$(date +%s.%N)
awk -v n="$N" -v a="$start" -v b="$submitted" -v c="$end" -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
    printf "%d jobs: submitted in %.2f s (%.0f qsub/s); all finished after %.2f s: %.0f jobs/s end to end (load %s)\n",
        n, b - a, n / (b - a), c - a, n / (c - a), l }'
