#!/bin/bash
# Configures the Debian SGE 8.1.9 oracle as a small but realistic site (host groups, three
# queues with host-group and host overrides, an ACL and a department, two quota sets, two
# projects, users with default projects, a share tree, a calendar, a consumable, managers and
# operators, a share-tree-weighted scheduler), runs real CPU-using jobs as sgeuser and sgeuser2
# so that the share tree accumulates usage and the accounting file has records, leaves jobs
# pending, then saves every object's qconf text, qstat -ext, qacct, the accounting file,
# sge_share_mon, the plain-text spool files and a spooledit dump of the BerkeleyDB spool under
# sge-cell/: the fixture issue 26's importer is tested against.
# Run as root with the oracle running (SGE_SCHEDULE_INTERVAL=0:0:1 sge-setup.sh):
#   record-issue26.sh [OUTDIR]     (default: sge-cell/ next to this script)
# KEEP=1 leaves the site objects in the cell afterwards; otherwise they are removed at the end
# (and at the start, so a re-run starts from the same cell).  Jobs still running or pending are
# deleted at the end too.
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/sge-cell}
H=$(hostname)
TMP=$(mktemp -d /tmp/issue26-cap.XXXXXX)
chmod 755 "$TMP"
trap 'rm -rf "$TMP"' EXIT
. "$HERE/../capture-lib.sh"
CONTEXT="issue-26 fixture site on $H (fx_* objects of record-issue26.sh); recorded $(date -u +%F)"
log() { echo "[record-issue26] $*"; }
f() { printf '%s\n' "$2" > "$TMP/$1"; chmod 644 "$TMP/$1"; }
q() { qconf "$@" 2>&1 | sed 's/^/  qconf: /'; }

QUEUES="fx_batch.q fx_short.q fx_long.q"
HGRPS="@fxall @fxbig"   # @fxall holds @fxbig: deleted in this order
cleanup() {
    qdel -u sgeuser,sgeuser2 '*' >/dev/null 2>&1
    for i in $(seq 1 30); do [ -z "$(qstat -u '*' 2>/dev/null)" ] && break; sleep 1; done
    for x in $QUEUES; do qconf -dq "$x" >/dev/null 2>&1; done
    for x in fx_users fx_hosts; do qconf -drqs "$x" >/dev/null 2>&1; done
    for x in $HGRPS; do qconf -dhgrp "$x" >/dev/null 2>&1; done
    qconf -dstree >/dev/null 2>&1
    for u in sgeuser sgeuser2; do
        if qconf -suser "$u" >/dev/null 2>&1; then
            qconf -suser "$u" | sed 's/^default_project .*/default_project NONE/' > "$TMP/u-$u"
            qconf -Muser "$TMP/u-$u" >/dev/null 2>&1
        fi
    done
    for x in fx_proj fx_other; do qconf -dprj "$x" >/dev/null 2>&1; done
    for x in fx_staff fx_phys; do qconf -dul "$x" >/dev/null 2>&1; done
    qconf -dcal fx_weekend >/dev/null 2>&1
    qconf -dattr exechost complex_values fx_lic global >/dev/null 2>&1
    qconf -sc | grep -v '^fx_lic ' > "$TMP/complex" && qconf -Mc "$TMP/complex" >/dev/null 2>&1
    qconf -dm fxadmin >/dev/null 2>&1
    qconf -do sgeuser2 >/dev/null 2>&1
    [ -s /var/tmp/issue26-sconf.orig ] && qconf -Msconf /var/tmp/issue26-sconf.orig >/dev/null 2>&1
    [ -s /var/tmp/issue26-allq-slots.orig ] &&
        qconf -mattr queue slots "$(cat /var/tmp/issue26-allq-slots.orig)" all.q >/dev/null 2>&1
}

qstat >/dev/null 2>&1 || { echo "record-issue26: the oracle is not running" >&2; exit 1; }
# what the cell had before the first run, restored by cleanup
[ -s /var/tmp/issue26-sconf.orig ] || qconf -ssconf > /var/tmp/issue26-sconf.orig
[ -s /var/tmp/issue26-allq-slots.orig ] || qconf -sq all.q | awk '$1=="slots"{print $2}' > /var/tmp/issue26-allq-slots.orig
log "removing what an earlier run left"
cleanup

log "calendar, host groups, complexes"
f cal 'calendar_name    fx_weekend
year             25.12.2026=off
week             sat-sun=suspended'
q -Acal "$TMP/cal"
f hg1 "group_name @fxbig
hostlist $H"
f hg2 'group_name @fxall
hostlist @fxbig'
q -Ahgrp "$TMP/hg1"; q -Ahgrp "$TMP/hg2"
{ qconf -sc | grep -v '^#' | grep -v '^fx_lic '
  echo 'fx_lic              fxl        INT         <=    YES         YES        0        0'
} > "$TMP/complex"
q -Mc "$TMP/complex"
q -mattr exechost complex_values fx_lic=4 global

log "access lists, projects, users"
f acl 'name    fx_staff
type    ACL
fshare  0
oticket 0
entries sgeuser,sgeuser2'
f dept 'name    fx_phys
type    DEPT
fshare  100
oticket 0
entries sgeuser2'
q -Au "$TMP/acl"; q -Au "$TMP/dept"
f prj1 'name fx_proj
oticket 0
fshare 0
acl fx_staff
xacl NONE'
f prj2 'name fx_other
oticket 0
fshare 0
acl NONE
xacl NONE'
q -Aprj "$TMP/prj1"; q -Aprj "$TMP/prj2"
for u in sgeuser sgeuser2; do
    [ $u = sgeuser ] && p=fx_proj || p=fx_other
    if qconf -suser $u >/dev/null 2>&1; then
        qconf -suser $u | sed -e "s/^default_project .*/default_project $p/" \
            -e 's/^delete_time .*/delete_time 0/' > "$TMP/u-$u"
        q -Muser "$TMP/u-$u"
    else
        f u-$u "name $u
oticket 0
fshare 0
delete_time 0
default_project $p"
        q -Auser "$TMP/u-$u"
    fi
done
q -am fxadmin
q -ao sgeuser2

log "share tree"
f stree 'id=0
name=Root
type=0
shares=1
childnodes=1,4
id=1
name=fx_proj
type=1
shares=60
childnodes=2,3
id=2
name=sgeuser
type=0
shares=70
childnodes=NONE
id=3
name=sgeuser2
type=0
shares=30
childnodes=NONE
id=4
name=fx_other
type=1
shares=40
childnodes=5
id=5
name=default
type=0
shares=100
childnodes=NONE'
q -Astree "$TMP/stree"

log "queues"
qtext() {  # qtext NAME HOSTLIST ... then attribute overrides on stdin as "attr value"
    local name=$1 hl=$2
    qconf -sq all.q | sed -e "s/^qname .*/qname                 $name/" \
                           -e "s/^hostlist .*/hostlist              $hl/" > "$TMP/q-$name"
    while read -r a v; do
        [ -z "$a" ] && continue
        sed -i "s|^$a .*|$(printf '%-21s' "$a") $v|" "$TMP/q-$name"
    done
    chmod 644 "$TMP/q-$name"
}
qtext fx_batch.q @fxall <<EOF
seq_no 10
slots 1,[@fxbig=2]
pe_list NONE,[$H=smp mpi]
h_rt 4:00:00,[@fxbig=8:00:00]
s_rt INFINITY,[@fxbig=7:55:00]
prolog NONE,[$H=/bin/true]
user_lists fx_staff
priority 0,[@fxbig=5]
EOF
qtext fx_short.q @fxbig <<EOF
seq_no 20
slots 1
h_rt 0:10:00
calendar fx_weekend
qtype BATCH
pe_list make
xuser_lists NONE,[$H=fx_phys]
EOF
qtext fx_long.q "$H" <<EOF
seq_no 30
slots 1,[$H=1]
h_rt 48:00:00
projects fx_proj,fx_other
complex_values fx_lic=2
tmpdir /var/tmp
h_vmem 4G,[$H=8G]
EOF
for x in $QUEUES; do q -Aq "$TMP/q-$x"; done
# all.q takes no part: its slots go to 0 so that every job runs in the fixture's queues
q -mattr queue slots 0 all.q

log "resource quota sets"
f rqs1 '{
   name         fx_users
   description  "per-user slot cap"
   enabled      TRUE
   limit        users {*} to slots=2
}'
f rqs2 '{
   name         fx_hosts
   description  "per-host slot and licence cap"
   enabled      TRUE
   limit        hosts {*} to slots=3,fx_lic=3
}'
q -Arqs "$TMP/rqs1"; q -Arqs "$TMP/rqs2"

log "scheduler configuration: share-tree policy"
qconf -ssconf | sed -e 's/^weight_tickets_share .*/weight_tickets_share              10000/' \
    -e 's/^weight_tickets_functional .*/weight_tickets_functional         0/' \
    -e 's/^halftime .*/halftime                          168/' \
    -e 's/^compensation_factor .*/compensation_factor               5.000000/' \
    -e 's/^weight_user .*/weight_user                       0.250000/' \
    -e 's/^weight_project .*/weight_project                    0.250000/' \
    -e 's/^weight_department .*/weight_department                 0.250000/' \
    -e 's/^weight_job .*/weight_job                        0.250000/' \
    -e 's/^weight_ticket .*/weight_ticket                     1.000000/' \
    -e 's/^weight_urgency .*/weight_urgency                    0.100000/' \
    -e 's/^weight_priority .*/weight_priority                   0.000000/' \
    -e 's/^policy_hierarchy .*/policy_hierarchy                  OSF/' \
    -e 's/^report_pjob_tickets .*/report_pjob_tickets               TRUE/' \
    -e 's/^usage_weight_list .*/usage_weight_list                 cpu=1.000000,mem=0.000000,io=0.000000/' \
    > "$TMP/sconf"
q -Msconf "$TMP/sconf"

log "jobs that accumulate usage (CPU loops)"
f burn.sh '#!/bin/sh
# a CPU loop of $1 seconds: the usage the share tree accumulates
t=$(($(date +%s)+$1)); while [ $(date +%s) -lt $t ]; do :; done'
sub() {  # sub USER SECS ARGS...
    local u=$1 s=$2; shift 2
    runuser -l "$u" -c "qsub -terse -o /dev/null -j y $* $TMP/burn.sh $s" </dev/null
}
ids=()
ids+=("$(sub sgeuser 20 -N fx_a1 -P fx_proj)")
ids+=("$(sub sgeuser 15 -N fx_a2 -P fx_proj -q fx_batch.q)")
ids+=("$(sub sgeuser2 10 -N fx_b1 -P fx_proj)")
ids+=("$(sub sgeuser2 10 -N fx_b2 -P fx_other -l fx_lic=1)")
ids+=("$(sub sgeuser 5 -N fx_a3 -P fx_other -q fx_long.q)")
ids+=("$(sub sgeuser2 5 -N fx_b3 -pe smp 2 -P fx_other)")
log "job ids: ${ids[*]}"
for i in $(seq 1 240); do [ -z "$(qstat -u '*' 2>/dev/null)" ] && break; sleep 2; done
[ -z "$(qstat -u '*')" ] || { log "jobs still not finished:"; qstat -u '*'; }
usage_done=$(date +%s)
sleep 5   # the scheduler folds finished usage into the share tree at its next run

log "pending jobs (beyond the per-user quota, one held)"
for u in sgeuser sgeuser2; do
    [ $u = sgeuser ] && p=fx_proj || p=fx_other
    for n in 1 2 3; do
        runuser -l $u -c "qsub -terse -o /dev/null -j y -N fx_p$n -P $p -b y sleep 3600" </dev/null
    done
done
runuser -l sgeuser -c "qsub -terse -o /dev/null -j y -N fx_held -h -P fx_proj -b y sleep 3600" </dev/null
runuser -l sgeuser2 -c "qsub -terse -o /dev/null -j y -N fx_lic -P fx_proj -l fx_lic=1 -b y sleep 3600" </dev/null
# The qmaster writes users' usage into its BerkeleyDB spool every STREE_SPOOL_INTERVAL (4 min by
# default): wait until sgeuser's record has per-project usage stamped after the usage jobs, so
# that the spooledit dump below holds the usage qstat -ext and sge_share_mon show.
spe() { runuser -u sgeadmin -- env SGE_ROOT=$SGE_ROOT SGE_CELL=$SGE_CELL /usr/lib/gridengine/spooledit "$@"; }
for i in $(seq 1 80); do
    d=$(spe dump USER:sgeuser 2>/dev/null)
    ts=$(printf '%s\n' "$d" | sed -n 's/.*UU_usage_time_stamp *\*\/ *//p')
    if printf '%s\n' "$d" | grep -q 'UU_project *\*/ *full' && [ "${ts:-0}" -gt "$usage_done" ]; then break; fi
    sleep 5
done
log "usage spooled at ${ts:-?} (usage jobs done at $usage_done)"

log "saving the cell under $OUT"
rm -rf "$OUT"; mkdir -p "$OUT"
save() {  # save NAME command...: stdout and stderr of a command as NAME.txt (stderr only if any)
    local name=$1; shift
    "$@" > "$OUT/$name.txt" 2> "$TMP/err"
    if [ -s "$TMP/err" ]; then { echo "# stderr:"; cat "$TMP/err"; } >> "$OUT/$name.txt"; fi
}
# Every object's qconf text, the accounting file, the usage and the last ids, as a site's
# export saves them (the importer's input: the fixture is an export plus the captures below).
"$HERE/../../../scripts/sge-export.sh" "$OUT" >/dev/null
save "qconf-sconf-$H" qconf -sconf "$H"
save qstat-ext qstat -ext -u '*'
save qstat-ext-xml qstat -ext -xml -u '*'
save qstat-pri qstat -pri -u '*'
save qstat-f qstat -f -u '*'
save qstat-g-c qstat -g c
save qquota-sgeuser runuser -l sgeuser -c qquota
save qquota-sgeuser2 runuser -l sgeuser2 -c qquota
# sge_share_mon of 8.1.9 has no -a: -h (header, tab-separated), -n (name=value), -u (decayed
# usage since its time stamp): the share tree's nodes with their usage, as the scheduler sees it.
[ -x /usr/lib/gridengine/sge_share_mon ] && {
    save sge_share_mon-h /usr/lib/gridengine/sge_share_mon -c 1 -h
    save sge_share_mon-n /usr/lib/gridengine/sge_share_mon -c 1 -n
    save sge_share_mon-h-u /usr/lib/gridengine/sge_share_mon -c 1 -h -u
}
save qacct-o qacct -o
save qacct-P qacct -P
save qacct-g qacct -g
save qacct-q qacct -q
save qacct-h qacct -h
for j in "${ids[@]}"; do save "qacct-j-$j" qacct -j "$j"; done
cp /var/lib/gridengine/default/common/accounting "$OUT/accounting"
printf '%s\n' "${ids[@]}" > "$OUT/usage-job-ids.txt"
grep -E '^(spooling_method|spooling_lib|spooling_params|qmaster_spool_dir)' \
    /var/lib/gridengine/default/common/bootstrap > "$OUT/spooling-method.txt"

# Plain-text spool files (the BerkeleyDB files stay out: binary, and only readable by spooledit).
mkdir -p "$OUT/spool/common" "$OUT/spool/qmaster"
for p in /var/lib/gridengine/default/common/* /var/spool/gridengine/qmaster/*; do
    [ -f "$p" ] || continue
    case $p in */accounting|*/messages|*/heartbeat|*/qmaster.pid) continue;; esac
    file -b "$p" | grep -qi text || continue
    case $p in /var/lib/*) cp "$p" "$OUT/spool/common/";; *) cp "$p" "$OUT/spool/qmaster/";; esac
done
ls -la /var/spool/gridengine/spooldb /var/spool/gridengine/qmaster > "$OUT/spool/listing.txt"
# What the BerkeleyDB spool holds, key by key, as spooledit dumps it (the qmaster's own text).
mkdir -p "$OUT/bdb"
spe list > "$OUT/bdb/keys.txt" 2>&1
grep -vE '^(JOB|JOBSCRIPT|PETASK|JATASK)' "$OUT/bdb/keys.txt" | grep ':' | while read -r k; do
    spe dump "$k" > "$OUT/bdb/${k//\//_}.txt" 2>&1
done

if [ "${KEEP:-0}" != 1 ]; then log "removing the site objects and jobs"; cleanup; fi
log "done"
