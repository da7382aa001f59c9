#!/bin/sh
# Times a client call of `qconf -sq all.q`, `qconf -sql` and `qstat` (issue 14's target: qconf
# as fast as qstat) on the default cell, 500 calls each, after sched_d has written the
# configuration snapshot (config.snapshot, which spares clients the YAML parse); then the same
# qconf calls without the snapshot, to show what it saves. Release build; prints the mean wall
# time per call and the load average.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin qconf --bin qstat --bin sched_d
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qconf-bench.XXXXXX")
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
cell="$tmp/default"
target/release/sched_d --init --spool "$cell" >/dev/null
target/release/sched_d --spool "$cell" --log-level error 2>/dev/null &
pid=$!
while [ ! -f "$cell/config.snapshot" ]; do sleep 0.05; done
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
calls=500
per_call() {  # label, command...
    label=$1; shift
    "$@" >/dev/null
    start=$(date +%s%N)
    i=0
    while [ $i -lt $calls ]; do "$@" >/dev/null; i=$((i + 1)); done
    end=$(date +%s%N)
    echo "$label: $(( (end - start) / calls / 1000 )) µs per call ($calls calls)"
}
per_call "qstat              " target/release/qstat --spool "$cell"
per_call "qconf -sq all.q    " target/release/qconf --spool "$cell" -sq all.q
per_call "qconf -sql         " target/release/qconf --spool "$cell" -sql
rm "$cell/config.snapshot"
per_call "qconf -sq all.q, no snapshot" target/release/qconf --spool "$cell" -sq all.q
echo "(load average $(cut -d' ' -f1 /proc/loadavg))"
