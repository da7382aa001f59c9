#!/bin/bash
# Records the issue-25 advance-reservation cases (qrsub, qrstat, qrdel, qsub -ar) on the
# oracle, in shared/oracle/sge-capture.sh's format. Run as root, under the oracle lock:
#   flock /work/sge-oracle.lock tests/compat/record-issue25-ar.sh tests/compat
# Every AR it makes is named ar25* and deleted before it ends; windows are short (minutes).
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=$(mktemp -d /tmp/issue25-ar-cap.XXXXXX)
. "$(dirname "$0")/capture-lib.sh"
arid() { sed -n 's/^Your advance reservation \([0-9]*\).*/\1/p' "$OUT/$1.txt" | head -1; }
CONTEXT="config as left by sge-setup.sh (all.q@vm, 2 slots), no jobs, no ARs; recorded $(date -u +%F) for issue 25"
start=$(date -d '+1 hour' +%Y%m%d%H%M)
end=$(date -d '+70 min' +%Y%m%d%H%M)
cap qrsub/help sgeuser 'qrsub -help'
cap qrstat/help sgeuser 'qrstat -help'
cap qrdel/help sgeuser 'qrdel -help'
cap qrstat/empty sgeuser 'qrstat'
cap qrsub/not-in-arusers sgeuser "qrsub -N ar25deny -a $start -e $end"
# qrsub needs a manager or a member of the userset arusers: sgeuser joins it for the rest.
qconf -au sgeuser arusers >/dev/null
CONTEXT="$CONTEXT; sgeuser added to the userset arusers (qconf -au sgeuser arusers)"
cap qrsub/no-time sgeuser 'qrsub -N ar25none'
cap qrsub/too-many-slots sgeuser "qrsub -N ar25big -a $start -e $end -pe smp 5"
cap qrsub/pe-nosuch sgeuser "qrsub -N ar25nope -a $start -e $end -pe nosuch 1"
cap qrsub/q-nosuch sgeuser "qrsub -N ar25noq -a $start -e $end -q nosuch.q"
cap qrsub/l-nosuch sgeuser "qrsub -N ar25nol -a $start -e $end -l nosuch=1"
cap qrsub/granted sgeuser "qrsub -N ar25a -a $start -e $end"
A=$(arid qrsub/granted)
cap qrsub/granted-d sgeuser "qrsub -N ar25b -a $start -d 600 -pe smp 1"
B=$(arid qrsub/granted-d)
cap qrsub/full sgeuser "qrsub -N ar25c -a $start -d 600 -pe smp 2"
cap qrstat/list sgeuser 'qrstat'
cap qrstat/list-u-all sgeuser "qrstat -u '*'"
cap qrstat/list-other-user sgeuser2 'qrstat'
cap qrstat/ar sgeuser "qrstat -ar $A"
cap qrstat/ar-pe sgeuser "qrstat -ar $B"
cap qrstat/ar-xml sgeuser "qrstat -xml -ar $A"
cap qrstat/list-xml sgeuser 'qrstat -xml'
cap qrstat/ar-nosuch sgeuser 'qrstat -ar 9999'
cap qrstat/explain sgeuser "qrstat -explain -ar $A"
cap qsub/ar-nosuch sgeuser 'qsub -ar 9999 -b y true'
cap qsub/ar-other-user sgeuser2 "qsub -ar $A -b y true"
cap qsub/ar-granted sgeuser "qsub -ar $A -b y -N ar25job -o /dev/null -j y true"
J=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$OUT/qsub/ar-granted.txt")
cap qstat/j-ar sgeuser "qstat -j $J"
cap qstat/ar-job sgeuser 'qstat'
cap qrdel/other-user sgeuser2 "qrdel $A"
cap qrdel/nosuch sgeuser 'qrdel 9999'
cap qrdel/granted sgeuser "qrdel $A"
cap qrdel/by-name sgeuser 'qrdel ar25b'
cap qrstat/after-delete sgeuser 'qrstat'
# An AR that starts now, for 2 minutes, 1 slot: state r, a job in it runs.
cap qrsub/now sgeuser 'qrsub -N ar25now -d 120'
N=$(arid qrsub/now)
cap qsub/ar-now sgeuser "qsub -ar $N -b y -N ar25run -o /dev/null -j y sleep 30"
K=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$OUT/qsub/ar-now.txt")
sleep 4
cap qrstat/ar-running sgeuser "qrstat -ar $N"
cap qrstat/list-running sgeuser 'qrstat'
cap qstat/ar-job-running sgeuser 'qstat'
cap qstat/j-ar-running sgeuser "qstat -j $K"
cap qsub/ar-pe-beyond sgeuser "qsub -ar $N -pe smp 2 -b y true"
cap qrdel/running sgeuser "qrdel $N"
sleep 3
cap qstat/after-ar-delete sgeuser 'qstat'
# Leave nothing behind.
qdel "$J" "$K" >/dev/null 2>&1
qconf -du sgeuser arusers >/dev/null
qrdel -f $(qrstat -u '*' | awk 'NR>2 {print $1}') >/dev/null 2>&1
rm -rf "$TMP"
