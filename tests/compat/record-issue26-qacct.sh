#!/bin/bash
# Records the real qacct of SGE 8.1.9 over the accounting file of the issue-26 fixture
# (tests/compat/import/sge-cell/accounting), with options the fixture's own qacct-*.txt do not
# show: no option, every grouping column with and without a value, time windows, -j by number,
# by name and pattern (with the records SGE writes for jobs that never ran and for a job of an
# advance reservation), -t, -ar, -m. qacct -f reads only the file, so the captures do not depend
# on the cell's state; the dates of -j are in this machine's zone (Etc/UTC, TZ unset).
# Run as root, holding the oracle lock: flock /work/sge-oracle.lock record-issue26-qacct.sh [OUTDIR]
# (OUTDIR defaults to this directory; the captures go to OUTDIR/qacct/issue26-CASE.txt).
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE}
TMP=$(mktemp -d /tmp/issue26-qacct-cap.XXXXXX)
. "$HERE/capture-lib.sh"
# The file where sgeuser can read it; the tests put the fixture's path in place of this one.
DIR=/tmp/issue26-qacct
A=$DIR/accounting
mkdir -p "$DIR"
cp "$HERE/import/sge-cell/accounting" "$A"
chmod 755 "$DIR"; chmod 644 "$A"
CONTEXT="qacct -f over tests/compat/import/sge-cell/accounting copied to $A; TZ unset, /etc/localtime $(readlink /etc/localtime); recorded $(date -u +%F) for issue 26"
q() {  # q CASE 'options'
    cap "qacct/issue26-$1" sgeuser "qacct -f $A $2"
}
q summary ''
for o in o u g P q h D A pe slots ar; do q "$o" "-$o"; done
q o-sgeuser '-o sgeuser'
q u-sgeuser2 '-u sgeuser2'
q g-sgeuser2 '-g sgeuser2'
q P-fx_proj '-P fx_proj'
q P-NONE '-P NONE'
q q-fx_batch.q '-q fx_batch.q'
q q-fx_long.q-at-vm '-q fx_long.q@vm'
q q-pattern "-q 'fx_*'"
q h-vm '-h vm'
q D-fx_phys '-D fx_phys'
q A-sge '-A sge'
q pe-smp '-pe smp'
q slots-2 '-slots 2'
q ar-11 '-ar 11'
q ar-0 '-ar 0'
q ar-bad '-ar abc'
q o-P '-o -P'
q o-sgeuser-P '-o sgeuser -P'
q q-o-P-D '-q -o -P -D'
q all-columns '-h -q -g -o -P -D -pe -slots -A -ar'
q P-pe-slots '-P -pe -slots'
q b '-b 202611270331'
q e '-e 202611270331'
q b-e '-b 202611262300 -e 202611270331.30'
q b-E '-b 202611270331.40 -E'
q e-E-o '-e 202611270331 -E -o'
q b-d '-b 202611260000 -d 1'
q e-d '-e 202611271200 -d 1'
q m '-m'
q j-all '-j'
q j-10 '-j 10'
q j-20 '-j 20'
q j-94 '-j 94'
q j-fx_a1 '-j fx_a1'
q j-pattern-fx_b "-j 'fx_b*'"
q j-sleep-q-cal25 '-j sleep -q cal25.q'
q j-145-t '-j 145 -t 1'
q j-999 '-j 999'
q j-nosuch '-j nosuch'
q j-145-o-sgeuser2 '-j 145 -o sgeuser2'
q j-94-ar-11 '-j 94 -ar 11'
q j-ar-11 '-j -ar 11'
q j-P-fx_other-pe-smp '-j -P fx_other -pe smp'
q h-nosuch '-h nosuchhost'
q q-nosuch '-q nosuch.q'
q o-nosuch '-o nosuch'
q P-nosuch-o '-P nosuch -o'
q slots-0 '-slots 0'
q pe-NONE '-pe NONE'
q ar-11-o '-ar 11 -o'
q ar-A '-ar -A'
q ar-12 '-ar 12'
q j-ar '-j -ar'
q j-145-t-range '-j 145 -t 1-3'
q j-fx_a1-t '-j fx_a1 -t 1'
q j-0 '-j 0'
q j-o-sgeuser2-q-fx_long.q '-j -o sgeuser2 -q fx_long.q'
q E '-E'
q m-o '-m -o'
q D-j-fx_p1 '-D -j fx_p1'
q h-upper '-h VM'
q q-upper '-q FX_BATCH.Q'
q slots-abc '-slots abc'
q d-abc '-d abc'
q t-without-j '-t 1'
q j-t-without-range '-j 145 -t'
q b-yy '-b 2611270331'
q b-bad-seconds '-b 202611270331.5'
q b-after-e '-b 202611270331 -e 202611262300'
q o-then-u '-o sgeuser -u sgeuser2'
q P-twice '-P fx_proj -P fx_other'
q j-twice '-j 145 -j 146'
q j-pattern-then-t "-j 'fx_a*' -t 1-2"
# -l compares each job's queue instance as the cell has it now: here all.q on vm (2 slots, no
# limits), the fixture's queues gone.
CONTEXT="$CONTEXT; the oracle's queues: $(qconf -sql | tr '\n' ' ')(all.q: hostlist $(qconf -sq all.q | awk '$1=="hostlist"{print $2}'), slots $(qconf -sq all.q | awk '$1=="slots"{print $2}'), h_rt $(qconf -sq all.q | awk '$1=="h_rt"{print $2}'), h_vmem $(qconf -sq all.q | awk '$1=="h_vmem"{print $2}'))"
q l-h_rt '-l h_rt=100'
q l-h_rt-hms-o '-l h_rt=1:0:0 -o'
q l-qname-and-h_rt '-l h_rt=100,qname=all.q'
q l-q-pattern "-l 'qname=all*'"
q l-h '-l h=vm'
q l-hostname-pattern "-l 'hostname=v*'"
q l-slots-2 '-l slots=2'
q l-slots-3-o '-l slots=3 -o'
q l-h_vmem '-l h_vmem=1G'
q l-s_rt-P '-l s_rt=10 -P'
q l-qname-nosuch-o '-l qname=nosuch.q -o'
q l-unknown '-l fx_lic=1'
q l-not-a-time '-l h_rt=abc'
q l-last-wins '-l h_rt=100,h_rt=abc'
q l-not-a-memory '-l h_vmem=abc'
q l-not-an-integer '-l slots=abc'
q l-not-a-double '-l load_avg=abc'
q l-unknown-host '-l hostname=nosuch'
q l-no-value '-l arch'
q l-j-9 '-l qname=all.q -j 9'
q l-j-145 '-l qname=all.q -j 145'
q l-j-all-q '-l qname=all.q -j -q'
q l-slots-column '-l h_rt=100 -slots'
q l-j-10 '-l qname=all.q -j 10'
q l-j-nosuch '-l qname=all.q -j nosuch'
# Which of a job's values makes -l drop it: copies of job 9's record (all.q) with one value
# zeroed each (901 slots, 902 start time, 903 failed 8, 904 submission time, 905 end time,
# 906 usage) and two in a queue that does not exist (907 start time 0, 908 not).
C=$HERE/qacct/issue26-start-time-0.accounting
grep ':true:9:' "$HERE/import/sge-cell/accounting" | awk -F: -v OFS=: '{ a = $0
    $6 = 901; $35 = 0; print; $0 = a
    $6 = 902; $10 = 0; print; $1 = "nosuch.q"; $6 = 907; print; $0 = a
    $1 = "nosuch.q"; $6 = 908; print; $0 = a
    $6 = 903; $12 = 8; print; $0 = a
    $6 = 904; $9 = 0; print; $0 = a
    $6 = 905; $11 = 0; print; $0 = a
    $6 = 906; $14 = 0; $15 = "0.000000"; $16 = "0.000000"; $37 = "0.000000"; print }' > "$C"
cp "$C" "$DIR/issue26-start-time-0.accounting"; chmod 644 "$DIR/issue26-start-time-0.accounting"
A=$DIR/issue26-start-time-0.accounting
q l-crafted-j '-l qname=all.q -j'
q l-crafted-E-j '-l qname=all.q -E -j'
q l-crafted-j-902 '-l qname=all.q -j 902'
q crafted-j '-j'
rm -rf "$TMP" "$DIR"
