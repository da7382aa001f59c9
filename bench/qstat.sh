#!/bin/sh
# Times `qstat -u '*'`, `-xml` and `-json` on cells of 10,000 and 100,000 jobs.
# Usage: bench/qstat.sh [N...]   (default: 10000 100000). The cell carries the listing index
# that sched_d leaves when it stops (daemon/listing), so qstat reads it instead of every job
# file; SCAN=1 fills the cell without it, to time the scan qstat falls back to. Release build; after one warm-up
# run, prints the best and median wall time of 5 runs (output to /dev/null) and the CPU time
# (user + system) of the median run: on a shared machine the CPU time is the steadier figure.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin qstat --example qstat_fill
sizes=${*:-10000 100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qstat-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for n in $sizes; do
    cell="$tmp/cell-$n"
    if [ -n "${SCAN:-}" ]; then
        target/release/examples/qstat_fill --no-index "$cell" "$n"
    else
        target/release/examples/qstat_fill "$cell" "$n"
    fi
    for extra in "" "-xml" "-json"; do
        target/release/qstat --spool "$cell" -u '*' $extra >/dev/null
        : > "$tmp/times"
        for _ in 1 2 3 4 5; do
            # wall ms, cpu ms
            /usr/bin/time -f "%e %U %S" -a -o "$tmp/times" \
                target/release/qstat --spool "$cell" -u '*' $extra >/dev/null
        done
        sort -n "$tmp/times" | awk -v n="$n" -v x="$extra" '
            { wall[NR] = $1 * 1000; cpu[NR] = ($2 + $3) * 1000 }
            END { printf "qstat -u '"'"'*'"'"' %-4s %7d jobs: best %5d ms, median %5d ms wall; median run %5d ms CPU\n",
                  x, n, wall[1], wall[3], cpu[3] }'
    done
    echo "    ($(target/release/qstat --spool "$cell" -u '*' | wc -l) lines; ${SCAN:+scan of the job files, }load average $(cut -d' ' -f1 /proc/loadavg))"
    rm -rf "$cell"
done
