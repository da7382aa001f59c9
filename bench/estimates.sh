#!/bin/sh
# How good start-time estimates are (issue 28): gridspool-sim --estimates replays a workload
# and, at every submission, makes the forecast on a copy of the replay with run times by the
# limits (the requested time: Slurm's squeue --start method) and with run times learned from
# the runs ended so far; each job's estimate is compared with its start in the same replay.
# Two workloads: the SWF trace of bench/sim-trace.sh (800 jobs, one user, on 2 hosts of 8
# slots) and a synthetic accounting file of a busy cell (bench/busy_accounting.py: JOBS jobs
# of 30 users over 10 days on 16 hosts of 8 slots, ~90% busy). Prints each policy's table:
# median and 90th-percentile absolute error, and the median bias.
# Usage: [JOBS=3000] bench/estimates.sh [policy...]
set -eu
cd "$(dirname "$0")/.."
. bench/sim-cell.sh
cargo build --release --quiet --bin gridspool-sim
policies=${*:-sge fifo}
jobs=${JOBS:-3000}
trace=$(swf_trace)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/estimates.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 bench/busy_accounting.py "$jobs" 16 10 30 > "$tmp/accounting"
for p in $policies; do
    sim_cell 2 "$p" '$fill_up' > "$tmp/swf-$p.yaml"
    sim_cell 16 "$p" '$pe_slots' > "$tmp/busy-$p.yaml"
done
for w in "swf:$trace" "busy:$tmp/accounting"; do
    name=${w%%:*} file=${w#*:}
    configs=""
    for p in $policies; do configs="$configs $tmp/$name-$p.yaml"; done
    start=$(date +%s)
    # shellcheck disable=SC2086
    ./target/release/gridspool-sim --workload "$file" --compare $configs --estimates \
        | sed -n '/^start-time estimates/,/^$/p'
    echo "($name: $(( $(date +%s) - start )) s)"
done
