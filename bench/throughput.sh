#!/bin/sh
# bench/throughput.sh -- end-to-end throughput of trivial jobs: scheduling, launching,
# shepherds and accounting, with submission measured apart.
#
# A fresh cell (sched_d --init) with the local host. N separate jobs `qsub -b y true` (not an
# array: N job files, N shepherds, N accounting records) are submitted first, so that the
# figure measures the pipeline that executes already-submitted jobs, not qsub's own speed
# (which bench/qsub.sh measures):
#
#   MODE=release (default): sched_d runs; the jobs are submitted held (`qsub -h`); once
#       sched_d has read all of them, one `qrls -u '*'` releases them. The clock runs from
#       the qrls until the N-th accounting record is in the accounting file.
#   MODE=restart: the jobs are submitted with no sched_d running; the clock runs from the
#       start of sched_d (which then reads the spool) until the N-th accounting record.
#
# Prints the submission rate and the execution rate, checks that every job ended with
# exit status 0 and failed 0 exactly once. Target (issue 3): >= 200 jobs/s for 2,000 jobs.
# Real SGE 8.1.9 at its fastest interval: 1 job/s (sge-figures.md).
#
# Usage: [SLOTS=8] [MODE=release|restart] bench/throughput.sh [N]
# SLOTS sets the host's and all.q's slots (default 8: trivial jobs use no CPU to speak of, so
# more slots than CPUs keep the pipeline full; the default cell has as many slots as CPUs).
# SCHED_D_ARGS are added to sched_d's arguments (e.g. "--metrics 127.0.0.1:19464").
# DAEMON_WRAP is put in front of sched_d (e.g. "perf stat -o FILE --": the shepherds are
# sched_d's descendants, so their cost is counted too); KEEP=1 keeps the cell.
# SSH_LAUNCH replaces the host's `launch:` entry (bench/throughput-ssh.sh sets it to ssh).
set -eu
N=${1:-2000}
SLOTS=${SLOTS:-8}
MODE=${MODE:-release}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
cargo build --release --quiet --bin sched_d --bin qsub --bin qrls --bin gridspool-shepherd
BIN="$HERE/target/release"
# A short name: with ssh launching, the ControlMaster socket lives at
# $ROOT/default/daemon/ssh/<host>/cm-<40 hex>.<16 chars while ssh creates it>, and a Unix socket
# address holds 108 bytes ("/tmp/gridspool-throughput.XXXXXX" made it 112: ssh refused it).
ROOT=${BENCH_ROOT:-$(mktemp -d "${TMPDIR:-/tmp}/gs-tp.XXXXXX")}
"$BIN/sched_d" --init --spool "$ROOT/default" >/dev/null
sed -i "s/^\(    slots:\) [0-9]*/\1 $SLOTS/" "$ROOT/default/config.yaml"
if [ -n "${SSH_LAUNCH:-}" ]; then
    # The host's `launch: {method: local}` becomes the ssh entry given by the caller.
    sed -i "s|^    launch: {method: local}|    launch: $SSH_LAUNCH|" "$ROOT/default/config.yaml"
fi
export SGE_ROOT="$ROOT" SGE_CELL=default
DAEMON=
cleanup() {
    if [ -n "$DAEMON" ]; then
        # The daemon's own pid (DAEMON_WRAP may have put perf or strace in front of it).
        kill "$(cat "$ROOT/default/daemon/sched_d.pid" 2>/dev/null || echo "$DAEMON")" 2>/dev/null || :
        wait "$DAEMON" 2>/dev/null || :
    fi
    [ -n "${KEEP:-}" ] || rm -rf "$ROOT"
}
trap cleanup EXIT
start_daemon() {
    ${DAEMON_WRAP:-} "$BIN/sched_d" --spool "$ROOT/default" --log-level "${LOG_LEVEL:-warn}" --retention 1 \
        ${SCHED_D_ARGS:-} 2>"$ROOT/sched_d.err" &
    DAEMON=$!
}
jobs_known() {
    # Jobs sched_d has taken in (it writes a state record for each held job it reads).
    find "$ROOT/default/jobs" -name '*.state' | wc -l
}
mkdir -p "$ROOT/work" && cd "$ROOT/work"
HOLD=
if [ "$MODE" = release ]; then
    start_daemon
    sleep 0.5
    HOLD=-h
fi
sub_start=$(date +%s.%N)
i=0
while [ "$i" -lt "$N" ]; do
    "$BIN/qsub" $HOLD -b y -o /dev/null -e /dev/null true >/dev/null
    i=$((i + 1))
done
sub_end=$(date +%s.%N)
load=$(cut -d' ' -f1 /proc/loadavg)
if [ "$MODE" = release ]; then
    # Wait until sched_d has read every held job (qstat would show them all the same).
    t=0
    while [ "$(jobs_known)" -lt "$N" ] && [ "$t" -lt 600 ]; do sleep 0.1; t=$((t + 1)); done
    start=$(date +%s.%N)
    "$BIN/qrls" -u '*' >/dev/null
else
    start=$(date +%s.%N)
    start_daemon
fi
acct="$ROOT/default/common/accounting"
while :; do
    done_jobs=$( (grep -vc '^#' "$acct" 2>/dev/null) || echo 0)
    [ "$done_jobs" -ge "$N" ] && break
    if ! kill -0 "$DAEMON" 2>/dev/null; then
        echo "sched_d died:" >&2; cat "$ROOT/sched_d.err" >&2; exit 1
    fi
    sleep 0.02
done
end=$(date +%s.%N)
# Honesty checks: N distinct jobs, each recorded once, each exit 0 / failed 0.
grep -v '^#' "$acct" | awk -F: -v n="$N" '
    { seen[$6]++; if ($12 != 0 || $13 != 0) bad++ }
    END {
        for (j in seen) { jobs++; if (seen[j] != 1) dup++ }
        if (jobs != n || dup || bad) {
            printf "accounting check FAILED: %d jobs, %d recorded twice, %d not exit 0/failed 0\n", jobs, dup, bad > "/dev/stderr"
            exit 1
        }
    }'
awk -v n="$N" -v a="$sub_start" -v b="$sub_end" -v s="$start" -v c="$end" -v mode="$MODE" \
    -v l="$load" -v l2="$(cut -d' ' -f1 /proc/loadavg)" -v slots="$SLOTS" 'BEGIN {
    printf "%d jobs, %d slots, mode %s: submitted at %.0f qsub/s (%.2f s); executed in %.2f s: %.0f jobs/s from %s to the last accounting record (load %s / %s)\n",
        n, slots, mode, n / (b - a), b - a, c - s, n / (c - s), (mode == "release" ? "qrls" : "sched_d start"), l, l2 }'
