#!/bin/sh
# bench/qsub.sh -- sequential submission rate of gridspool's qsub.
#
# Builds the release binaries, creates a temporary cell with `sched_d --init`, runs N
# sequential submissions of a small script (default 1000: `qsub job.sh`, a three-line
# script with one `#$` directive, copied into the spool each time, as the issue's benchmark
# asks) and prints submissions per second, for each of ROUNDS rounds (default 3, each in a
# fresh cell) with the best and the median: on a shared VM one round says little. The real
# SGE 8.1.9 on the reference 2-core machine does about 17/s (shared/oracle/sge-figures.md).
# No daemon runs: this measures the client and the spool (fsync included), not scheduling.
#
# Usage: [ROUNDS=3] bench/qsub.sh [N]
# TMPDIR=/dev/shm bench/qsub.sh measures the client alone (tmpfs makes fsync nearly free).
# TMPDIR=DIR puts the cell under DIR. On an ext4 without a journal, creating a file scans past
# every inode of its block group freed in the last minutes: after a test run churned /tmp, each
# job file there costs 0.3-0.6 ms more than in a fresh directory (bench/README.md, qsub row).
set -eu
N=${1:-1000}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
cargo build --release --quiet --bin qsub --bin sched_d
BIN="$HERE/target/release"
ROUNDS=${ROUNDS:-3}
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gridspool-bench.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
printf '#!/bin/sh\n#$ -N small\necho hello\n' > "$ROOT/job.sh"
cd "$ROOT"
round=1
while [ "$round" -le "$ROUNDS" ]; do
    cell="$ROOT/r$round"
    mkdir "$cell"
    "$BIN/sched_d" --init --spool "$cell/default" >/dev/null
    start=$(date +%s.%N)
    SGE_ROOT="$cell" SGE_CELL=default sh -c '
        i=0
        while [ "$i" -lt "$1" ]; do
            "$2/qsub" job.sh >/dev/null
            i=$((i + 1))
        done' sh "$N" "$BIN"
    end=$(date +%s.%N)
    jobs=$(ls "$cell/default/jobs" | grep -c '\.job$')
    [ "$jobs" -eq "$N" ] || { echo "expected $N job files, found $jobs" >&2; exit 1; }
    awk -v n="$N" -v s="$start" -v e="$end" -v r="$round" 'BEGIN {
        t = e - s
        printf "round %d: %d submissions in %.2f s: %.0f submissions/s\n", r, n, t, n / t
        printf "%.0f\n", n / t >> "rates" }'
    rm -rf "$cell"
    round=$((round + 1))
done
sort -n rates | awk -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '{ v[NR] = $1 }
    END { printf "best %d/s, median %d/s of %d rounds (load %s)\n", v[NR], v[int((NR + 1) / 2)], NR, load }'
