#!/bin/sh
# Times gridspool-sim on a real trace: tests/easy_mediumWL_smallPF.swf of PyPI's evalys 4.0.7
# wheel (800 jobs of 1-16 processors over 2.3 hours, from a 16-processor machine), fetched
# with `pip download` from the configured registry into target/bench-data/. Two runs per
# policy: the trace as it is on 2 hosts of 8 slots, and K copies of it (default 125: 100,000
# jobs) submitted side by side, each copy shifted by a few minutes and owned by its own user
# (50 users), on 2K hosts of 8 slots (the same load per slot).
# Prints, per policy, the wall time, the jobs simulated per second and the headline row.
# Usage: [K=125] bench/sim-trace.sh [policy...]
set -eu
cd "$(dirname "$0")/.."
. bench/sim-cell.sh
cargo build --release --quiet --bin gridspool-sim
K=${K:-125}
policies=${*:-sge fifo}
trace=$(swf_trace)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sim-trace.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# K copies: job numbers made unique, submissions shifted by 0-300 s per copy, users u1..u50.
awk -v k="$K" '!/^;/ && NF >= 18 { line[n++] = $0 }
END {
    s = 4242
    for (c = 0; c < k; c++) {
        s = (s * 1103515245 + 12345) % 2147483648; shift = int(s / 65536) % 300
        for (i = 0; i < n; i++) {
            split(line[i], f, " ")
            f[1] = c * n + i + 1; f[2] += shift; f[12] = 1 + c % 50
            out = f[1]; for (j = 2; j <= 18; j++) out = out " " f[j]; print out
        }
    }
}' "$trace" > "$tmp/copies.swf"
run() { # name workload hosts policy
    sim_cell "$3" "$4" '$fill_up' > "$tmp/$4.yaml"
    jobs=$(grep -vc '^;' "$2")
    start=$(date +%s.%N)
    target/release/gridspool-sim --workload "$2" --compare "$tmp/$4.yaml" > "$tmp/out.txt"
    end=$(date +%s.%N)
    awk -v n="$jobs" -v h="$3" -v p="$4" -v w="$1" -v a="$start" -v b="$end" 'BEGIN {
        printf "%s, %s: %d jobs on %d hosts in %.2f s: %.0f jobs/s (load %s)\n", w, p, n, h, b - a, n / (b - a), "'"$(cut -d' ' -f1 /proc/loadavg)"'"
    }'
    sed -n 2p "$tmp/out.txt"
}
for p in $policies; do
    run "evalys trace" "$trace" 2 "$p"
    run "$K copies" "$tmp/copies.swf" $((2 * K)) "$p"
done
