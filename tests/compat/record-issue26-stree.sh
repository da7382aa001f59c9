#!/bin/bash
# Records the issue-26 cases of the share tree (node numbering, node types, -sstnode), queue
# priority, -Ap of an existing PE, -Me of a host's -se text and -am of unknown users on the
# oracle, in shared/oracle/sge-capture.sh's format, with projects st_p1/st_p2, queue st.q and
# managers st_zadmin/st_aadmin of its own, all removed at the end (and the share tree deleted:
# the oracle has none otherwise).
# Run as root, under flock /work/sge-oracle.lock: record-issue26-stree.sh OUTDIR
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=$(mktemp -d /tmp/issue26st-cap.XXXXXX)
chmod 755 "$TMP"
. "$(dirname "$0")/capture-lib.sh"
f() { printf '%s\n' "$2" > "$TMP/$1"; chmod 644 "$TMP/$1"; }
f prj1 'name st_p1
oticket 0
fshare 0
acl NONE
xacl NONE'
f prj2 'name st_p2
oticket 0
fshare 0
acl NONE
xacl NONE'
# Ids out of order; an interior project node written type=0, a user node type=1, a leaf
# project node type=0: what does SGE keep?
f stree 'id=0
name=Root
type=0
shares=1
childnodes=7,3
id=7
name=st_p1
type=0
shares=60
childnodes=9,4
id=9
name=sgeuser
type=1
shares=70
childnodes=NONE
id=4
name=sgeuser2
type=0
shares=30
childnodes=NONE
id=3
name=st_p2
type=0
shares=40
childnodes=NONE'
f st.q 'qname                 st.q
hostlist              vm
seq_no                0
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              30
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               NONE
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
h_vmem                INFINITY'

CONTEXT="no share tree; recorded 2026-11-27 for issue 26"
cap qconf/i26-sstnode-none root 'qconf -sstnode /st_p1'
cap qconf/i26-rsstnode-none root 'qconf -rsstnode /st_p1'
qconf -Aprj "$TMP/prj1" >/dev/null; qconf -Aprj "$TMP/prj2" >/dev/null
CONTEXT="projects st_p1, st_p2 (acl NONE); the share tree of the script's file stree (ids 0,7,9,4,3); recorded 2026-11-27 for issue 26"
cap qconf/i26-Astree root "qconf -Astree $TMP/stree"
cap qconf/i26-sstree root 'qconf -sstree'
cap qconf/i26-sst root 'qconf -sst'
cap qconf/i26-sstnode-path root 'qconf -sstnode /st_p1'
cap qconf/i26-sstnode-leaf root 'qconf -sstnode /st_p1/sgeuser2'
cap qconf/i26-sstnode-dot root 'qconf -sstnode sgeuser2'
cap qconf/i26-sstnode-star root "qconf -sstnode '/*/sgeuser'"
cap qconf/i26-sstnode-root root 'qconf -sstnode /'
cap qconf/i26-sstnode-Root root 'qconf -sstnode Root'
cap qconf/i26-sstnode-with-root root 'qconf -sstnode /Root/st_p1'
cap qconf/i26-sstnode-two root 'qconf -sstnode /st_p2,/st_p1'
cap qconf/i26-sstnode-last-missing root 'qconf -sstnode /st_p1,/nosuch'
cap qconf/i26-sstnode-first-missing root 'qconf -sstnode /nosuch,/st_p2'
cap qconf/i26-rsstnode root 'qconf -rsstnode /st_p1'
cap qconf/i26-rsstnode-missing root 'qconf -rsstnode /nosuch'
qconf -dstree >/dev/null
qconf -dprj st_p1 >/dev/null; qconf -dprj st_p2 >/dev/null

CONTEXT="queue st.q of the script's text but priority 30; recorded 2026-11-27 for issue 26"
cap qconf/i26-Aq-priority-30 root "qconf -Aq $TMP/st.q"
sed 's/^priority .*/priority              0/' "$TMP/st.q" > "$TMP/st0.q"
qconf -Aq "$TMP/st0.q" >/dev/null
CONTEXT="queue st.q of the script's text (priority 0, hostlist vm); recorded 2026-11-27 for issue 26"
for v in 21 -21 abc -0 1.5 5x +7 -20 20; do
    cap "qconf/i26-mattr-priority-$v" root "qconf -mattr queue priority $v st.q"
    cap "qconf/i26-sq-priority-$v" root 'qconf -sq st.q'
done
qconf -mattr queue priority 0 st.q >/dev/null
cap qconf/i26-mattr-priority-host root 'qconf -mattr queue priority 5 st.q@vm'
cap qconf/i26-sq-priority-host root 'qconf -sq st.q'
cap qconf/i26-sq-priority-instance root 'qconf -sq st.q@vm'
cap qconf/i26-mattr-priority-host-bad root 'qconf -mattr queue priority 25 st.q@vm'
cap qconf/i26-purge-priority root 'qconf -purge queue priority st.q@vm'
cap qconf/i26-sq-priority-purged root 'qconf -sq st.q'
qconf -dq st.q >/dev/null

CONTEXT="the oracle's PE make as sge-setup.sh leaves it; recorded 2026-11-27 for issue 26"
qconf -sp make > "$TMP/make.txt"; chmod 644 "$TMP/make.txt"
cap qconf/i26-Ap-exists root "qconf -Ap $TMP/make.txt"

CONTEXT="host vm as the oracle leaves it; vm-noload.txt is qconf -se vm without load_values, vm-noproc.txt without load_values and processors; recorded 2026-11-27 for issue 26"
qconf -se vm | grep -v '^load_values\|^  ' > "$TMP/vm-noload.txt"
grep -v '^processors' "$TMP/vm-noload.txt" > "$TMP/vm-noproc.txt"
chmod 644 "$TMP"/vm-*.txt
cap qconf/i26-Me-noload root "qconf -Me $TMP/vm-noload.txt"
cap qconf/i26-Me-noproc root "qconf -Me $TMP/vm-noproc.txt"
cap qconf/i26-Ae-noproc root "qconf -Ae $TMP/vm-noproc.txt"

CONTEXT="managers root and sgeadmin as sge-setup.sh leaves them; st_zadmin and st_aadmin are no users of the machine; recorded 2026-11-27 for issue 26"
cap qconf/i26-am-unknown root 'qconf -am st_zadmin,st_aadmin'
cap qconf/i26-sm-unknown root 'qconf -sm'
qconf -dm st_zadmin,st_aadmin >/dev/null
rm -rf "$TMP"
