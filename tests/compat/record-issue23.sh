#!/bin/bash
# Records the issue-23 cases (qrsh's and qlogin's messages, qselect -qs, qacct -b, the record
# of a job whose prolog failed, qsub of a file that is not a regular file, qstat -l of an
# unknown resource) on the oracle, in shared/oracle/sge-capture.sh's format.
# Run as root: record-issue23.sh OUTDIR CASE... (case names below).
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=$(mktemp -d /tmp/issue23-cap.XXXXXX)
CONTEXT="-"
. "$(dirname "$0")/capture-lib.sh"
jobid() { sed -n 's/^Your job\(-array\)\? \([0-9]*\).*/\2/p' "$OUT/$1.txt" | head -1; }
CONTEXT="config as left by sge-setup.sh (all.q, 2 slots), no jobs; recorded 2026-11-26 for issue 23"
for c in "$@"; do
  case $c in
    qrsh-bad-option) cap qrsh/bad-option sgeuser 'qrsh -zzz' ;;
    qrsh-l-nosuch) cap qrsh/l-nosuch sgeuser 'qrsh -l nosuch=1 hostname' ;;
    qrsh-q-nosuch) cap qrsh/q-nosuch sgeuser 'qrsh -q nosuch.q hostname' ;;
    qlogin-l-nosuch) cap qlogin/l-nosuch sgeuser 'qlogin -l nosuch=1' ;;
    qselect-qs-e) cap qselect/qs-e sgeuser 'qselect -qs e' ;;
    qselect-qs-de) cap qselect/qs-de sgeuser 'qselect -qs de' ;;
    qstat-qs-e) cap qstat/qs-e sgeuser 'qstat -qs e' ;;
    qstat-f-qs-de) cap qstat/f-qs-de sgeuser 'qstat -f -qs de' ;;
    qrsh-bad-value) cap qrsh/l-h_rt-bad sgeuser 'qrsh -l h_rt=abc hostname' ;;
    qrsh-bad-date) cap qrsh/a-notadate sgeuser 'qrsh -a notadate hostname' ;;
    qrsh-pe-nosuch) cap qrsh/pe-nosuch sgeuser 'qrsh -pe nosuch 1 hostname' ;;
    qlogin-bad-option) cap qlogin/bad-option sgeuser 'qlogin -zzz' ;;
    qacct-b-notadate) cap qacct/b-notadate sgeuser 'qacct -b notadate' ;;
    qstat-l-nosuch) cap qstat/l-nosuch sgeuser 'qstat -l nosuch=1' ;;
    qsub-dev-zero) cap qsub/dev-zero sgeuser 'qsub /dev/zero' ;;
    qsub-empty-file)
        runuser -l sgeuser -c ': > empty.sh'
        cap qsub/empty-file sgeuser 'qsub empty.sh'
        runuser -l sgeuser -c 'rm -f empty.sh' ;;
    qsub-at-dev-zero)
        cap qsub/at-dev-zero sgeuser 'qsub -@ /dev/zero -b y -h true'
        qdel "$(jobid qsub/at-dev-zero)" >/dev/null ;;
    qsub-fifo)
        CONTEXT="$CONTEXT; fifo made with mkfifo in sgeuser's home, nothing writes to it: qsub waits until timeout ends it"
        runuser -l sgeuser -c 'rm -f fifo; mkfifo fifo'
        cap qsub/fifo sgeuser 'timeout 5 qsub fifo'
        runuser -l sgeuser -c 'rm -f fifo' ;;
    qlogin-now-full)
        # Both slots taken by sgeuser2's jobs first.
        for i in 1 2; do runuser -l sgeuser2 -c 'qsub -b y sleep 300' >/dev/null; done
        for i in $(seq 1 60); do [ "$(qstat -s r -u '*' | tail -n +3 | wc -l)" = 2 ] && break; sleep 1; done
        CONTEXT="all.q's 2 slots taken by 2 running jobs of sgeuser2; recorded 2026-11-26 for issue 23"
        cap qlogin/now-y-full sgeuser 'qlogin -now y'
        cap qrsh/now-y-full sgeuser 'qrsh -now y hostname'
        qdel -u sgeuser2 '*' >/dev/null ;;
    prolog-failed)
        # The queue's prolog fails: the job is requeued, all.q goes to E, and the job's record
        # reaches the accounting file (flushed every 15 s).
        qconf -mattr queue prolog /bin/false all.q >/dev/null
        runuser -l sgeuser -c 'qsub -b y -o /dev/null -j y -N prologfails true' > "$TMP/sub"
        id=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$TMP/sub")
        for i in $(seq 1 90); do awk -F: -v j="$id" '$6==j{f=1} END{exit !f}' $SGE_ROOT/$SGE_CELL/common/accounting && break; sleep 1; done
        CONTEXT="queue prolog /bin/false (qconf -mattr queue prolog /bin/false all.q); job $id (qsub -b y -o /dev/null -j y -N prologfails true) failed in its prolog, requeued; recorded 2026-11-26 for issue 23"
        cap qacct/j-prolog-failed sgeuser "qacct -j $id"
        grep ":$id:" $SGE_ROOT/$SGE_CELL/common/accounting | awk -F: -v j="$id" '$6==j' > "$OUT/accounting/prolog-failed-line.txt"
        qdel "$id" >/dev/null
        qconf -mattr queue prolog NONE all.q >/dev/null
        qmod -cq all.q >/dev/null ;;
    *) echo "unknown case $c" >&2 ;;
  esac
done
rm -rf "$TMP"
