#!/bin/sh
# bench/daemon-memory.sh -- sched_d's resident memory empty, holding N pending jobs, and once
# they are gone (issue 27: "sched_d keeps 31 MB after holding 10,000 jobs against 10 MB
# before").
#
# A fresh cell (sched_d --init, the local host, SLOTS slots). sched_d starts; its resident
# set (VmRSS of /proc/PID/status) is read once it is idle; N jobs `qsub -h -b y true` are
# submitted (two submitters at once) and read once sched_d holds all of them; then they go:
#   END=run (default): `qrls -u '*'`, and all of them run (until the N-th accounting record);
#   END=delete: `qdel -u '*'` while they wait.
# With `--retention 1` the finished jobs' files and records go a second after their end; the
# last figure is read once `jobs/` is empty and 20 s later (past a periodic pass, 15 s by
# default, which is when sched_d gives back what a drained queue held).
# Prints the three figures in MB and sched_d's peak (VmHWM). Memory only: nothing is timed.
#
# Usage: [SLOTS=8] [END=run|delete] bench/daemon-memory.sh [N]   (default N 10000)
# SCHED_D is the sched_d binary to run (default target/release/sched_d; its shepherd is the
# gridspool-shepherd beside it), to compare builds; NO_BUILD=1 builds nothing.
set -eu
N=${1:-10000}
SLOTS=${SLOTS:-8}
END=${END:-run}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
[ -n "${NO_BUILD:-}" ] ||
    cargo build --release --quiet --bin sched_d --bin qsub --bin qrls --bin qdel --bin gridspool-shepherd
BIN="$HERE/target/release"
SCHED_D=${SCHED_D:-$BIN/sched_d}
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gs-mem.XXXXXX")
"$SCHED_D" --init --spool "$ROOT/default" >/dev/null
sed -i "s/^\(    slots:\) [0-9]*/\1 $SLOTS/" "$ROOT/default/config.yaml"
export SGE_ROOT="$ROOT" SGE_CELL=default
DAEMON=
cleanup() {
    if [ -n "$DAEMON" ]; then
        kill "$DAEMON" 2>/dev/null || :
        wait "$DAEMON" 2>/dev/null || :
    fi
    rm -rf "$ROOT"
}
trap cleanup EXIT
"$SCHED_D" --spool "$ROOT/default" --log-level warn --retention 1 2>"$ROOT/sched_d.err" &
DAEMON=$!
status_mb() {
    awk -v k="$1:" '$1 == k { printf "%.1f", $2 / 1024 }' "/proc/$DAEMON/status"
}
states() {
    find "$ROOT/default/jobs" -name '*.state' | wc -l
}
files() {
    find "$ROOT/default/jobs" -type f | wc -l
}
sleep 2
empty=$(status_mb VmRSS)
mkdir -p "$ROOT/work" && cd "$ROOT/work"
submit() {
    i=0
    while [ "$i" -lt "$1" ]; do
        "$BIN/qsub" -h -b y -o /dev/null -e /dev/null true >/dev/null
        i=$((i + 1))
    done
}
submit $((N / 2)) &
SUBMITTER=$!
submit $((N - N / 2))
wait "$SUBMITTER"
t=0
while [ "$(states)" -lt "$N" ] && [ "$t" -lt 1200 ]; do sleep 0.1; t=$((t + 1)); done
sleep 2
holding=$(status_mb VmRSS)
if [ "$END" = delete ]; then
    "$BIN/qdel" -u '*' >/dev/null
else
    "$BIN/qrls" -u '*' >/dev/null
fi
t=0
while [ "$(files)" -gt 0 ] && [ "$t" -lt 3000 ]; do
    if ! kill -0 "$DAEMON" 2>/dev/null; then
        echo "sched_d died:" >&2; cat "$ROOT/sched_d.err" >&2; exit 1
    fi
    sleep 0.1; t=$((t + 1))
done
sleep 20
after=$(status_mb VmRSS)
peak=$(status_mb VmHWM)
echo "sched_d resident: empty $empty MB, holding $N pending $holding MB, after they $( [ "$END" = delete ] && echo 'were deleted' || echo 'ran') $after MB (peak $peak MB; $(files) files left; load average $(cut -d' ' -f1 /proc/loadavg))"
