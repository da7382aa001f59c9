#!/bin/sh
# bench/drmaa.sh -- libdrmaa.so's drmaa_job_ps and drmaa_wait with N jobs of the caller
# queued (held, so that the cell's slot stays free for the jobs measured): a fresh cell
# (sched_d --init) with the local host and sched_d running, N held jobs submitted with qsub by
# the same user, then bench/drmaa_latency.c (ROUNDS rounds; what each figure is: its header).
# LIB=path/to/libdrmaa.so times another build of the library against the same cell (the
# library of an earlier commit, say).
#
# Usage: [LIB=...] bench/drmaa.sh [N [ROUNDS]]   (default 10000 jobs, 20 rounds)
set -eu
N=${1:-10000}
ROUNDS=${2:-20}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
cargo build --release --quiet --bin sched_d --bin qsub --bin qstat --bin qdel \
    --bin gridspool-shepherd
cargo build --release --quiet -p gridspool-drmaa
BIN="$HERE/target/release"
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gs-drmaa.XXXXXX")
mkdir -p "$ROOT/lib"
cp "${LIB:-$BIN/libdrmaa.so}" "$ROOT/lib/libdrmaa.so.1.0"
ln -s libdrmaa.so.1.0 "$ROOT/lib/libdrmaa.so"
gcc -O2 -std=c99 -D_POSIX_C_SOURCE=200809L -I drmaa/include bench/drmaa_latency.c \
    -o "$ROOT/drmaa_latency" -L "$ROOT/lib" -ldrmaa
"$BIN/sched_d" --init --spool "$ROOT/default" >/dev/null
export SGE_ROOT="$ROOT" SGE_CELL=default GRIDSPOOL_BIN="$BIN"
"$BIN/sched_d" --spool "$ROOT/default" --log-level warn --retention 1 2>"$ROOT/sched_d.err" &
DAEMON=$!
stop() {
    kill $DAEMON 2>/dev/null || :
    wait $DAEMON 2>/dev/null || :
    rm -rf "$ROOT"
}
trap stop EXIT
a=$(date +%s)
i=0
while [ "$i" -lt "$N" ]; do
    "$BIN/qsub" -h -terse -b y -o /dev/null -j y true >"$ROOT/last"
    i=$((i + 1))
done
b=$(date +%s)
echo "$N held jobs submitted in $((b - a)) s; $("$BIN/qstat" | tail -n +3 | wc -l) listed"
LD_LIBRARY_PATH="$ROOT/lib" "$ROOT/drmaa_latency" "$(cat "$ROOT/last")" "$ROUNDS"
echo "(library ${LIB:-of this checkout}; load average $(cut -d' ' -f1 /proc/loadavg))"
