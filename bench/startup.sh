#!/bin/sh
# bench/startup.sh -- what one client call costs, as installed: the stripped multicall
# program (scripts/install-multiuser.sh's) started through its links, against the machine's
# fork+exec floor in the same run (`/bin/true`).
#
# Prints, alternated round by round (bench/alternate.py: best, 10th percentile and median
# wall time, median CPU):
#   - /bin/true: the floor;
#   - `qsub -b y true` into a cell with no daemon (the job file is written and synced);
#   - `qstat -u '*'` of an empty cell and of a cell of 500 pending jobs (its listing index
#     in place, as sched_d leaves it);
# then qsub's rate as a share of the floor's. Issue 27's targets: qstat of 500 jobs
# <= 3 ms, qsub >= 0.5 of the floor.
#
# Usage: [ROUNDS=300] [BASELINE=path/to/another/build's/gridspool] bench/startup.sh
# BASELINE runs the same commands with that program too, alternated with this build's in
# the same rounds, each in cells whose configuration snapshot its own `sched_d --init` wrote.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
cargo build --release --quiet --bin gridspool --example qstat_fill
ROUNDS=${ROUNDS:-300}
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gridspool-startup.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
builds=this
[ -z "${BASELINE:-}" ] || builds="this baseline"
set -- /bin/true
for b in $builds; do
    program=target/release/gridspool
    [ "$b" = this ] || program=$BASELINE
    mkdir -p "$ROOT/$b"
    strip -o "$ROOT/$b/gridspool" "$program"
    for c in qsub qstat sched_d; do ln -s gridspool "$ROOT/$b/$c"; done
    "$ROOT/$b/sched_d" --init --spool "$ROOT/$b-submit" >/dev/null
    for n in 0 500; do
        target/release/examples/qstat_fill "$ROOT/$b-$n" "$n" >/dev/null
        # The snapshot of the same default configuration, as this build writes it.
        cp "$ROOT/$b-submit/config.yaml" "$ROOT/$b-submit/config.snapshot" "$ROOT/$b-$n/"
    done
    set -- "$@" -- "$ROOT/$b/qsub" --spool "$ROOT/$b-submit" -o /dev/null -j y -b y true
    set -- "$@" -- "$ROOT/$b/qstat" --spool "$ROOT/$b-0" -u '*'
    set -- "$@" -- "$ROOT/$b/qstat" --spool "$ROOT/$b-500" -u '*'
done
python3 bench/alternate.py "$ROUNDS" "$@" | sed "s|$ROOT/||g" | tee "$ROOT/out"
for b in $builds; do
    awk -v b="$b/qsub" '/: \/bin\/true$/ { floor = $6 } index($0, ": " b " ") { q = $6 }
        END { printf "%s: %.2f of the fork+exec floor (medians %.2f / %.2f ms)\n", b, floor / q, floor, q }' "$ROOT/out"
done
echo "(load average $(cut -d' ' -f1-3 /proc/loadavg))"
