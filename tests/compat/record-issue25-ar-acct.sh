#!/bin/bash
# Records the accounting line of a job run in an advance reservation on the oracle (issue 25:
# its arid, ar_submission_time and category), and whether the reservation itself gets a
# line. Run as root, under the oracle lock:
#   flock /work/sge-oracle.lock tests/compat/record-issue25-ar-acct.sh tests/compat
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1
acct=$SGE_ROOT/$SGE_CELL/common/accounting
before=$(wc -l < "$acct")
qconf -au sgeuser arusers >/dev/null
ar=$(runuser -l sgeuser -c 'qrsub -N ar25acct -d 120' | sed -n 's/^Your advance reservation \([0-9]*\).*/\1/p')
job=$(runuser -l sgeuser -c "qsub -ar $ar -b y -N ar25acct -o /dev/null -j y sleep 2" | sed -n 's/^Your job \([0-9]*\).*/\1/p')
for i in $(seq 1 90); do awk -F: -v j="$job" '$6==j{f=1} END{exit !f}' "$acct" && break; sleep 1; done
qrdel "$ar" >/dev/null
sleep 16
mkdir -p "$OUT/accounting"
{
    echo "# job $job (qsub -ar $ar -b y -N ar25acct -o /dev/null -j y sleep 2) in AR $ar (qrsub -N ar25acct -d 120), then qrdel $ar; every line appended meanwhile:"
    tail -n +"$((before + 1))" "$acct"
} > "$OUT/accounting/ar-job-lines.txt"
qconf -du sgeuser arusers >/dev/null
