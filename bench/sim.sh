#!/bin/sh
# Times gridspool-sim on a synthetic month: N jobs (default 100,000) from 50 users on H hosts
# of 8 slots (default 1,000), one to eight processors each, run times from ten minutes to
# thirty hours (more work than the hosts can do: a queue builds up), arrivals spread over 30 days (a deterministic generator, so that runs compare).
# Prints the jobs simulated per second of wall time for each policy given (default sge fifo).
# Usage: [N=100000] [H=1000] bench/sim.sh [policy...]
set -eu
cd "$(dirname "$0")/.."
. bench/sim-cell.sh
cargo build --release --quiet --bin gridspool-sim
N=${N:-100000}
H=${H:-1000}
policies=${*:-sge fifo}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sim-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
awk -v n="$N" 'BEGIN {
    s = 12345
    for (i = 1; i <= n; i++) {
        s = (s * 1103515245 + 12345) % 2147483648; submit = int(i * 2592000 / n)
        s = (s * 1103515245 + 12345) % 2147483648; run = 600 + int(s / 16) % 108000
        s = (s * 1103515245 + 12345) % 2147483648; procs = 1 + int(s / 65536) % 8
        s = (s * 1103515245 + 12345) % 2147483648; user = 1 + int(s / 65536) % 50
        printf "%d %d -1 %d %d -1 -1 %d %d -1 1 %d %d -1 1 -1 -1 -1\n", i, submit, run, procs, procs, run * 2, user, 1 + user % 5
    }
}' > "$tmp/month.swf"
for p in $policies; do
    sim_cell "$H" "$p" '$pe_slots' > "$tmp/$p.yaml"
    start=$(date +%s.%N)
    target/release/gridspool-sim --workload "$tmp/month.swf" --compare "$tmp/$p.yaml" --json "$tmp/$p.json" > "$tmp/$p.txt"
    end=$(date +%s.%N)
    awk -v n="$N" -v h="$H" -v p="$p" -v a="$start" -v b="$end" 'BEGIN {
        printf "%s: %d jobs on %d hosts in %.1f s: %.0f jobs/s (load %s)\n", p, n, h, b - a, n / (b - a), "'"$(cut -d' ' -f1 /proc/loadavg)"'"
    }'
    sed -n 2p "$tmp/$p.txt"
done
