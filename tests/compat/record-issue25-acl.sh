#!/bin/bash
# Records issue 25's access-list cases (qconf -au -du -Au -Mu -mu -su -sul -dul, queue
# user_lists/xuser_lists, project acl/xacl, host user_lists, the pending reasons and qsub's
# refusals) on the oracle, in shared/oracle/sge-capture.sh's format, with objects of its own
# (acl25*, prj25) that it deletes again; all.q, the execution host and the scheduler
# configuration are restored. Run as root, under flock /work/sge-oracle.lock:
# record-issue25-acl.sh OUTDIR [dept-tickets]
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift  # then nothing (every case) or dept-tickets
TMP=$(mktemp -d /tmp/issue25-acl.XXXXXX)
. "$(dirname "$0")/capture-lib.sh"
jobid() { sed -n 's/^Your job\(-array\)\? \([0-9]*\).*/\2/p' "$OUT/$1.txt" | head -1; }
HOST=$(hostname -s)
qconf -ssconf > "$TMP/sconf"
# Whatever happens, the cell is left as it was found.
restore() {
    for a in user_lists xuser_lists projects xprojects; do
        qconf -rattr queue $a NONE all.q >/dev/null 2>&1
        qconf -rattr exechost $a NONE "$HOST" >/dev/null 2>&1
    done
    qconf -sconf | grep -q '^user_lists *none' || EDITOR="$TMP/ed-off" qconf -mconf >/dev/null 2>&1
    qconf -dprj prj25 >/dev/null 2>&1
    qconf -dul acl25a,acl25b,acl25c,acl25d,acl25e,acl25f,acl25g >/dev/null 2>&1
    qconf -Msconf "$TMP/sconf" >/dev/null 2>&1
    rm -rf "$TMP" /tmp/cap/acl25* /tmp/cap/nosuch25 /tmp/cap/prj25
}
trap restore EXIT
printf '#!/bin/sh\nsed -i "s/^user_lists .*/user_lists                   none/" "$1"\n' > "$TMP/ed-off"
chmod 755 "$TMP/ed-off"
if [ "${1:-}" = dept-tickets ]; then
    # Departments in the functional policy: physics25 (sgeuser, fshare 75) and chem25
    # (sgeuser2, fshare 25), weight_tickets_functional 1000; two jobs of each user, one
    # running and one pending each.
    printf 'name    physics25\ntype    DEPT\nfshare  75\noticket 0\nentries sgeuser\n' > "$TMP/physics25"
    printf 'name    chem25\ntype    DEPT\nfshare  25\noticket 0\nentries sgeuser2\n' > "$TMP/chem25"
    qconf -Au "$TMP/physics25" >/dev/null && qconf -Au "$TMP/chem25" >/dev/null
    sed 's/^weight_tickets_functional .*/weight_tickets_functional         1000/' "$TMP/sconf" > "$TMP/sconf-f"
    qconf -Msconf "$TMP/sconf-f" >/dev/null 2>&1
    CONTEXT="DEPT lists physics25 (sgeuser, fshare 75) and chem25 (sgeuser2, fshare 25); weight_tickets_functional 1000, other weights SGE's; sgeuser's job then sgeuser2's running (sleep 120), then one more of each pending; recorded 2026-11-27 for issue 25"
    ids=""
    for u in sgeuser sgeuser2; do
        ids="$ids $(runuser -l $u -c 'qsub -terse -b y -o /dev/null -j y sleep 120')"
    done
    for i in $(seq 1 30); do [ "$(qstat -s r -u '*' | tail -n +3 | wc -l)" = 2 ] && break; sleep 1; done
    for u in sgeuser sgeuser2; do
        ids="$ids $(runuser -l $u -c 'qsub -terse -b y -o /dev/null -j y sleep 120')"
    done
    sleep 4
    cap qstat/ext-dept-tickets sgeuser "qstat -ext -u '*'"
    qdel $ids >/dev/null 2>&1
    qconf -dul physics25,chem25 >/dev/null 2>&1
    exit 0
fi
CONTEXT="config as left by sge-setup.sh (all.q, 2 slots), no access lists but SGE's own; recorded 2026-11-27 for issue 25"
mkdir -p /tmp/cap && chmod 755 /tmp/cap
cap qconf/sul-default root 'qconf -sul'
cap qconf/su-defaultdepartment root 'qconf -su defaultdepartment'
cap qconf/su-arusers root 'qconf -su arusers'
cap qconf/su-nosuch root 'qconf -su nosuch25'
cap qconf/au-new root 'qconf -au sgeuser acl25a'
cap qconf/au-more root 'qconf -au sgeuser2,@sgeuser acl25a'
cap qconf/au-again root 'qconf -au sgeuser acl25a'
cap qconf/su-acl25a root 'qconf -su acl25a'
cap qconf/au-two-lists root 'qconf -au sgeuser acl25a,acl25b'
cap qconf/su-two root 'qconf -su acl25a,acl25b'
cap qconf/du root 'qconf -du sgeuser2 acl25a'
cap qconf/du-again root 'qconf -du sgeuser2 acl25a'
cap qconf/du-nosuch-list root 'qconf -du sgeuser nosuch25'
cap qconf/au-by-user sgeuser 'qconf -au sgeuser acl25c'
cap qconf/du-by-user sgeuser 'qconf -du sgeuser acl25a'
cap qconf/su-by-user sgeuser 'qconf -su acl25a'
cap qconf/sul-acl root 'qconf -sul'
printf 'name    acl25d\ntype    ACL,DEPT\nfshare  10\noticket 5\nentries sgeuser2,@sgeuser2\n' > /tmp/cap/acl25d
printf 'name    acl25d\ntype    DEPT\nfshare  20\noticket 0\nentries sgeuser2\n' > /tmp/cap/acl25d-mod
printf 'name    acl25e\ntype    ACL\nfshare  10\noticket 0\nentries sgeuser2\n' > /tmp/cap/acl25e-share
printf 'name    acl25f\ntype    ACL\nentries sgeuser2\n' > /tmp/cap/acl25f-missing
printf 'name    acl25g\ntype    NOTATYPE\nfshare  0\noticket 0\nentries NONE\n' > /tmp/cap/acl25g-badtype
printf 'name    nosuch25\ntype    ACL\nfshare  0\noticket 0\nentries NONE\n' > /tmp/cap/nosuch25
chmod 644 /tmp/cap/*
cap qconf/Au root 'qconf -Au /tmp/cap/acl25d'
cap qconf/Au-again root 'qconf -Au /tmp/cap/acl25d'
cap qconf/su-acl25d root 'qconf -su acl25d'
cap qconf/Mu root 'qconf -Mu /tmp/cap/acl25d-mod'
cap qconf/su-acl25d-after-Mu root 'qconf -su acl25d'
cap qconf/Mu-nosuch root 'qconf -Mu /tmp/cap/nosuch25'
cap qconf/Au-acl-fshare root 'qconf -Au /tmp/cap/acl25e-share'
cap qconf/Au-missing root 'qconf -Au /tmp/cap/acl25f-missing'
cap qconf/Au-badtype root 'qconf -Au /tmp/cap/acl25g-badtype'
cap qconf/Au-nofile root 'qconf -Au /tmp/cap/nosuchfile'
cap qconf/mu-editor-true root 'EDITOR=true qconf -mu acl25a'
cap qconf/mu-nosuch root 'EDITOR=true qconf -mu nosuch25'
cap qconf/au-dept-twice root 'qconf -au sgeuser2 acl25b'
cap qconf/dul-nosuch root 'qconf -dul nosuch25'
# Queue access lists.
cap qconf/mattr-user_lists root 'qconf -mattr queue user_lists acl25a all.q'
cap qconf/mattr-user_lists-nosuch root 'qconf -mattr queue user_lists nosuch25 all.q'
cap qconf/sq-user_lists root 'qconf -sq all.q'
cap qconf/dul-referenced root 'qconf -dul acl25a'
sed 's/^schedd_job_info .*/schedd_job_info                   true/' "$TMP/sconf" > "$TMP/sconf-info"
qconf -Msconf "$TMP/sconf-info" >/dev/null 2>&1
CONTEXT="all.q user_lists acl25a (sgeuser, @sgeuser); schedd_job_info true; recorded 2026-11-27 for issue 25"
cap qsub/acl-outsider sgeuser2 'qsub -b y -o /dev/null -j y true'
out=$(jobid qsub/acl-outsider)
cap qsub/acl-outsider-q sgeuser2 'qsub -q all.q -b y -o /dev/null -j y true'
outq=$(jobid qsub/acl-outsider-q)
cap qsub/acl-member sgeuser 'qsub -h -b y -o /dev/null -j y true'
mem=$(jobid qsub/acl-member)
sleep 4
cap qstat/j-acl-outsider sgeuser2 "qstat -j $out"
cap qstat/acl-outsider sgeuser2 'qstat'
qdel "$out" "$outq" "$mem" >/dev/null 2>&1
qconf -rattr queue user_lists NONE all.q >/dev/null
qconf -mattr queue xuser_lists acl25a all.q >/dev/null
CONTEXT="all.q xuser_lists acl25a (sgeuser, @sgeuser); schedd_job_info true; recorded 2026-11-27 for issue 25"
cap qsub/xacl-excluded sgeuser 'qsub -b y -o /dev/null -j y true'
ex=$(jobid qsub/xacl-excluded)
sleep 4
cap qstat/j-xacl-excluded sgeuser "qstat -j $ex"
qdel "$ex" >/dev/null 2>&1
qconf -rattr queue xuser_lists NONE all.q >/dev/null
# Host access lists.
cap qconf/mattr-exechost-user_lists root "qconf -mattr exechost user_lists acl25a $HOST"
cap qconf/aattr-exechost-user_lists root "qconf -aattr exechost user_lists acl25a $HOST"
cap qconf/dul-referenced-host root "qconf -dul acl25a"
CONTEXT="exechost $HOST user_lists acl25a; schedd_job_info true; recorded 2026-11-27 for issue 25"
cap qconf/se-user_lists root "qconf -se $HOST"
cap qsub/host-acl-outsider sgeuser2 'qsub -b y -o /dev/null -j y true'
ho=$(jobid qsub/host-acl-outsider)
sleep 4
cap qstat/j-host-acl-outsider sgeuser2 "qstat -j $ho"
qdel "$ho" >/dev/null 2>&1
qconf -rattr exechost user_lists NONE "$HOST" >/dev/null
# Projects.
printf 'name    prj25\noticket 0\nfshare  0\nacl     acl25a\nxacl    acl25d\n' > /tmp/cap/prj25
chmod 644 /tmp/cap/prj25
CONTEXT="project prj25 acl acl25a (sgeuser, @sgeuser) xacl acl25d (sgeuser2); recorded 2026-11-27 for issue 25"
cap qconf/Aprj-acl root 'qconf -Aprj /tmp/cap/prj25'
cap qconf/sprj-acl root 'qconf -sprj prj25'
cap qsub/P-no-access sgeuser2 'qsub -P prj25 -b y -o /dev/null -j y true'
cap qsub/P-nosuch sgeuser2 'qsub -P nosuch25 -b y -o /dev/null -j y true'
cap qsub/P-member sgeuser 'qsub -P prj25 -h -b y -o /dev/null -j y true'
pm=$(jobid qsub/P-member)
cap qstat/ext-P-member sgeuser "qstat -ext"
qdel "$pm" >/dev/null 2>&1
qconf -mattr queue projects prj25 all.q >/dev/null
CONTEXT="all.q projects prj25; schedd_job_info true; recorded 2026-11-27 for issue 25"
cap qsub/no-project sgeuser 'qsub -b y -o /dev/null -j y true'
np=$(jobid qsub/no-project)
sleep 4
cap qstat/j-no-project sgeuser "qstat -j $np"
qdel "$np" >/dev/null 2>&1
qconf -rattr queue projects NONE all.q >/dev/null
qconf -mattr queue xprojects prj25 all.q >/dev/null
CONTEXT="all.q xprojects prj25; schedd_job_info true; recorded 2026-11-27 for issue 25"
cap qsub/xproject sgeuser 'qsub -P prj25 -b y -o /dev/null -j y true'
xp=$(jobid qsub/xproject)
sleep 4
cap qstat/j-xproject sgeuser "qstat -j $xp"
qdel "$xp" >/dev/null 2>&1
qconf -rattr queue xprojects NONE all.q >/dev/null
CONTEXT="project prj25 acl acl25a; recorded 2026-11-27 for issue 25"
cap qconf/dul-referenced-prj root 'qconf -dul acl25a'
qconf -dprj prj25 >/dev/null
# The global configuration's user_lists.
printf '#!/bin/sh\nsed -i "s/^user_lists .*/user_lists                   acl25a/" "$1"\n' > "$TMP/ed-on"
printf '#!/bin/sh\nsed -i "s/^user_lists .*/user_lists                   none/" "$1"\n' > "$TMP/ed-off"
chmod 755 "$TMP/ed-on" "$TMP/ed-off"
EDITOR="$TMP/ed-on" qconf -mconf >/dev/null 2>&1
CONTEXT="global configuration user_lists acl25a (qconf -mconf); recorded 2026-11-27 for issue 25"
cap qconf/sconf-user_lists root 'qconf -sconf'
cap qsub/global-acl-outsider sgeuser2 'qsub -b y -o /dev/null -j y true'
go=$(jobid qsub/global-acl-outsider)
[ -n "$go" ] && qdel "$go" >/dev/null 2>&1
EDITOR="$TMP/ed-off" qconf -mconf >/dev/null 2>&1
# Department of a user in a DEPT list.
CONTEXT="acl25d (type DEPT, entries sgeuser2) is sgeuser2's department; recorded 2026-11-27 for issue 25"
cap qsub/dept-member sgeuser2 'qsub -h -b y -o /dev/null -j y true'
dm=$(jobid qsub/dept-member)
cap qstat/ext-dept sgeuser2 'qstat -ext'
cap qstat/j-dept sgeuser2 "qstat -j $dm"
qdel "$dm" >/dev/null 2>&1
qconf -Msconf "$TMP/sconf" >/dev/null 2>&1
CONTEXT="after the lists were made; recorded 2026-11-27 for issue 25"
cap qconf/dul root 'qconf -dul acl25a,acl25b'
cap qconf/sul-after root 'qconf -sul'
