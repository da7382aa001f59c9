#!/bin/sh
# bench/qrsh.sh -- the round trip of `qrsh true` on an idle cell: from qrsh's start to its
# exit (submission, sched_d's dispatch, the shepherd's start, the relay's connection back,
# the end recorded and read). A fresh cell (sched_d --init) with the local host; with SSH=1
# the host is reached over ssh to a server of the benchmark's own (bench/sshd.sh), as a
# cluster's hosts are. Prints the best, median and 90th percentile of N rounds.
# Target (issue 15): under 100 ms over ssh (SGE 8.1.9: a second or more).
#
# Usage: [SSH=1] bench/qrsh.sh [N]
set -eu
N=${1:-50}
MAX_SESSIONS=${MAX_SESSIONS:-10}
HERE=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${SSH:-}" ]; then
    . "$HERE/bench/sshd.sh"
fi
cd "$HERE"
cargo build --release --quiet --bin sched_d --bin qrsh --bin gridspool-shepherd
BIN="$HERE/target/release"
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gs-qrsh.XXXXXX")
"$BIN/sched_d" --init --spool "$ROOT/default" >/dev/null
if [ -n "${SSH_LAUNCH:-}" ]; then
    sed -i "s|^    launch: {method: local}|    launch: $SSH_LAUNCH|" "$ROOT/default/config.yaml"
fi
export SGE_ROOT="$ROOT" SGE_CELL=default
"$BIN/sched_d" --spool "$ROOT/default" --log-level warn --retention 1 2>"$ROOT/sched_d.err" &
DAEMON=$!
stop() {
    kill $DAEMON 2>/dev/null || :
    wait $DAEMON 2>/dev/null || :
    rm -rf "$ROOT"
    # bench/sshd.sh's own clean-up (its server), which this trap replaces.
    if [ -n "${SSH:-}" ]; then cleanup; fi
}
trap stop EXIT
# The first round connects to the host (ssh's ControlMaster): not counted.
"$BIN/qrsh" true
i=0
while [ "$i" -lt "$N" ]; do
    a=$(date +%s%N)
    "$BIN/qrsh" true
    b=$(date +%s%N)
    echo $(((b - a) / 1000))
    i=$((i + 1))
done | sort -n | awk -v n="$N" -v how="${SSH:+ssh to 127.0.0.1}" '
    { v[NR] = $1 }
    END { printf "qrsh true, %s: %d rounds, best %.1f ms, median %.1f ms, p90 %.1f ms (load %s)\n",
          (how == "" ? "local host" : how), n, v[1] / 1000, v[int((n + 1) / 2)] / 1000,
          v[int(n * 0.9)] / 1000, load }' load="$(cut -d' ' -f1 /proc/loadavg)"
