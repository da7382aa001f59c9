#!/bin/bash
# Records the issue-25 queue-model cases (per-host and per-host-group queue values, host
# groups, a host's slots) on the oracle, in shared/oracle/sge-capture.sh's format, with a
# queue q25.q and host groups @q25, @q25b, @q25top of its own, all removed at the end.
# Run as root, under flock /work/sge-oracle.lock: record-issue25-queues.sh OUTDIR
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=$(mktemp -d /tmp/issue25q-cap.XXXXXX)
chmod 755 "$TMP"
. "$(dirname "$0")/capture-lib.sh"
CONTEXT="all.q@vm as other recordings leave it; host groups @q25 (vm), @q25top (@q25); queue q25.q (the fixed text of the script, hostlist @q25); recorded 2026-11-27 for issue 25"
f() { printf '%s\n' "$2" > "$TMP/$1"; chmod 644 "$TMP/$1"; }
f hgrp-q25 'group_name @q25
hostlist vm'
f hgrp-q25top 'group_name @q25top
hostlist @q25'
f hgrp-q25b 'group_name @q25b
hostlist vm'
f hgrp-q25-nosuch 'group_name @q25x
hostlist nosuchhost'
# A queue of its own, from a fixed text (not all.q's, which other recordings change).
f q25.q "qname                 q25.q
hostlist              @q25
seq_no                0
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              0
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               make smp mpi
rerun                 FALSE
slots                 1
tmpdir                /tmp
shell                 /bin/sh
prolog                NONE
epilog                NONE
shell_start_mode      posix_compliant
starter_method        NONE
suspend_method        NONE
resume_method         NONE
terminate_method      NONE
notify                00:00:60
owner_list            NONE
user_lists            NONE
xuser_lists           NONE
subordinate_list      NONE
complex_values        NONE
projects              NONE
xprojects             NONE
calendar              NONE
initial_state         default
s_rt                  INFINITY
h_rt                  INFINITY
s_cpu                 INFINITY
h_cpu                 INFINITY
s_fsize               INFINITY
h_fsize               INFINITY
s_data                INFINITY
h_data                INFINITY
s_stack               INFINITY
h_stack               INFINITY
s_core                INFINITY
h_core                INFINITY
s_rss                 INFINITY
h_rss                 INFINITY
s_vmem                INFINITY
h_vmem                INFINITY"
sed -e 's/^slots .*/slots 1,[nosuchhost=2]/' "$TMP/q25.q" > "$TMP/q25-nosuchhost"
sed -e 's/^slots .*/slots 1,[@nosuchgroup=2]/' "$TMP/q25.q" > "$TMP/q25-nosuchgroup"
sed -e 's/^slots .*/slots 1,[@q25=2],[@q25b=3]/' "$TMP/q25.q" > "$TMP/q25-twogroups"
sed -e 's/^slots .*/slots 1,[vm=x]/' "$TMP/q25.q" > "$TMP/q25-badvalue"
sed -e 's/^slots .*/slots 1,[vm=2],[@q25=3]/' -e 's/^h_rt .*/h_rt 1:00:00,[vm=2:00:00]/' \
    -e 's/^pe_list .*/pe_list make smp mpi,[vm=smp]/' "$TMP/q25.q" > "$TMP/q25-overrides"
chmod 644 "$TMP"/*

cap qconf/Ahgrp-q25 root "qconf -Ahgrp $TMP/hgrp-q25"
cap qconf/Ahgrp-q25top root "qconf -Ahgrp $TMP/hgrp-q25top"
cap qconf/Ahgrp-again root "qconf -Ahgrp $TMP/hgrp-q25"
cap qconf/Ahgrp-nosuch-host root "qconf -Ahgrp $TMP/hgrp-q25-nosuch"
cap qconf/shgrp-q25top root "qconf -shgrp @q25top"
cap qconf/shgrp_tree-q25top root "qconf -shgrp_tree @q25top"
cap qconf/shgrp_resolved-q25top root "qconf -shgrp_resolved @q25top"
cap qconf/shgrp_tree-nosuch root "qconf -shgrp_tree @nosuch"
cap qconf/shgrp_resolved-nosuch root "qconf -shgrp_resolved @nosuch"
cap qconf/mhgrp-editor-true root "EDITOR=true qconf -mhgrp @q25"
cap qconf/Mhgrp-q25 root "qconf -Mhgrp $TMP/hgrp-q25"
cap qconf/ahgrp-editor-true root "EDITOR=true qconf -ahgrp @q25c"
cap qconf/Aq-q25 root "qconf -Aq $TMP/q25.q"
cap qconf/mattr-q25-instance root "qconf -mattr queue slots 3 q25.q@vm"
cap qconf/mattr-q25-group root "qconf -mattr queue slots 5 q25.q@@q25"
cap qconf/sq-q25-slots root "qconf -sq q25.q"
cap qconf/mattr-q25-default root "qconf -mattr queue slots 4 q25.q"
cap qconf/sq-q25-after-default root "qconf -sq q25.q"
cap qconf/sq-q25-instance root "qconf -sq q25.q@vm"
cap qconf/mattr-q25-hrt-instance root "qconf -mattr queue h_rt 1:00:00 q25.q@vm"
cap qconf/aattr-q25-pe-instance root "qconf -aattr queue pe_list smp q25.q@vm"
cap qconf/aattr-q25-pe-group root "qconf -aattr queue pe_list make q25.q@@q25"
cap qconf/dattr-q25-pe-instance root "qconf -dattr queue pe_list make q25.q@vm"
cap qconf/mattr-q25-cv-instance root "qconf -mattr queue complex_values h_vmem=1G q25.q@vm"
cap qconf/mattr-q25-prolog-long root "qconf -mattr queue prolog /usr/local/share/site/prolog-for-the-big-hosts.sh q25.q@@q25"
cap qconf/mattr-q25-prolog-long2 root "qconf -mattr queue prolog /usr/local/share/site/prolog-for-the-small-host-vm.sh q25.q@vm"
cap qconf/sq-q25-many root "qconf -sq q25.q"
cap qconf/sq-q25-many-instance root "qconf -sq q25.q@vm"
cap qconf/mattr-q25-nosuch-host root "qconf -mattr queue slots 3 q25.q@nosuchhost"
cap qconf/mattr-q25-nosuch-group root "qconf -mattr queue slots 3 q25.q@@nosuchgroup"
cap qconf/mattr-q25-bad-value root "qconf -mattr queue slots abc q25.q@vm"
cap qconf/mattr-q25-qname-instance root "qconf -mattr queue qname x q25.q@vm"
cap qconf/mattr-q25-hostlist-instance root "qconf -mattr queue hostlist vm q25.q@vm"
cap qconf/purge-q25-instance root "qconf -purge queue slots q25.q@vm"
cap qconf/purge-q25-again root "qconf -purge queue slots q25.q@vm"
cap qconf/purge-q25-group root "qconf -purge queue slots q25.q@@q25"
cap qconf/purge-q25-cqueue root "qconf -purge queue slots q25.q"
cap qconf/purge-q25-star root "qconf -purge queue '*' q25.q@vm"
cap qconf/sq-q25-after-purge root "qconf -sq q25.q"
cap qconf/Mq-q25-nosuchhost root "qconf -Mq $TMP/q25-nosuchhost"
cap qconf/Mq-q25-nosuchgroup root "qconf -Mq $TMP/q25-nosuchgroup"
cap qconf/Mq-q25-badvalue root "qconf -Mq $TMP/q25-badvalue"
qconf -Ahgrp "$TMP/hgrp-q25b" >/dev/null 2>&1
cap qconf/Mq-q25-twogroups root "qconf -Mq $TMP/q25-twogroups"
cap qconf/sq-q25-twogroups root "qconf -sq q25.q"
qconf -dhgrp @q25b >/dev/null 2>&1
cap qconf/Mq-q25-overrides root "qconf -Mq $TMP/q25-overrides"
cap qconf/sq-q25-overrides root "qconf -sq q25.q"
cap qselect/q-group sgeuser "qselect -q 'q25.q@@q25'"
cap qselect/q-star-group sgeuser "qselect -q '*@@q25'"
cap qstat/f-q-group sgeuser "qstat -f -q 'q25.q@@q25'"
cap qmod/d-group root "qmod -d 'q25.q@@q25'"
cap qmod/e-group root "qmod -e 'q25.q@@q25'"
cap qmod/d-star-group root "qmod -d '*@@q25top'"
cap qmod/e-star-group root "qmod -e '*@@q25top'"
cap qmod/d-nosuch-group root "qmod -d 'q25.q@@nosuch'"
cap qsub/q-group sgeuser "qsub -h -b y -q 'q25.q@@q25' true"
id=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$OUT/qsub/q-group.txt")
[ -n "$id" ] && cap qstat/j-q-group sgeuser "qstat -j $id"
if [ -n "$id" ]; then
    cap qalter/q-star-group sgeuser "qalter -q '*@@q25top' $id"
    cap qalter/q-nosuch-group sgeuser "qalter -q 'q25.q@@nosuch' $id"
    cap qstat/j-q-star-group sgeuser "qstat -j $id | grep queue_list"
    qdel "$id" >/dev/null
fi
cap qsub/q-nosuch-group sgeuser "qsub -h -b y -q 'q25.q@@nosuch' true"
id=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$OUT/qsub/q-nosuch-group.txt")
[ -n "$id" ] && qdel "$id" >/dev/null
cap qconf/dhgrp-referenced root "qconf -dhgrp @q25"
cap qconf/dq-q25 root "qconf -dq q25.q"
cap qconf/dhgrp-q25top root "qconf -dhgrp @q25top"
cap qconf/dhgrp-q25 root "qconf -dhgrp @q25"
cap qconf/dhgrp-nosuch root "qconf -dhgrp @q25"
# A host's slots: a slots=N of its complex_values.
cap qconf/mattr-exechost-slots root "qconf -mattr exechost complex_values slots=4 vm"
cap qconf/se-slots root "qconf -se vm | grep -v '^ \|^load_values\|^processors'"
cap qconf/dattr-exechost-slots root "qconf -dattr exechost complex_values slots vm"
# Leave nothing behind.
qconf -dq q25.q >/dev/null 2>&1
for g in @q25top @q25b @q25c @q25x @q25; do qconf -dhgrp $g >/dev/null 2>&1; done
qconf -se vm | grep -q 'slots=' && qconf -dattr exechost complex_values slots vm >/dev/null 2>&1
rm -rf "$TMP"
