#!/bin/sh
# Times `qstat -u '*'` and `qstat -u '*' -xml` on cells of 10,000 and 100,000 jobs.
# Usage: bench/qstat.sh [N...]   (default: 10000 100000). Release build; prints the best
# and the median of 5 runs (output to /dev/null), after one warm-up run.
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin qstat --example qstat_fill
sizes=${*:-10000 100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qstat-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ms() { # prints the wall time of "$@" in milliseconds
    s=$(date +%s%N); "$@" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 ))
}
for n in $sizes; do
    cell="$tmp/cell-$n"
    target/release/examples/qstat_fill "$cell" "$n"
    for mode in plain xml; do
        extra=""; [ "$mode" = xml ] && extra="-xml"
        target/release/qstat --spool "$cell" -u '*' $extra >/dev/null
        times=""
        for _ in 1 2 3 4 5; do
            times="$times $(ms target/release/qstat --spool "$cell" -u '*' $extra)"
        done
        sorted=$(echo $times | tr ' ' '\n' | sort -n)
        best=$(echo "$sorted" | head -1); median=$(echo "$sorted" | sed -n 3p)
        lines=$(target/release/qstat --spool "$cell" -u '*' $extra | wc -l)
        printf "qstat -u '*' %-4s %7d jobs: best %5d ms, median %5d ms (%d lines)\n" \
            "$extra" "$n" "$best" "$median" "$lines"
    done
    rm -rf "$cell"
done
