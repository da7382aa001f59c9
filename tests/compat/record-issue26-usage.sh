#!/bin/bash
# Records the issue-26 usage cases on the oracle, in shared/oracle/sge-capture.sh's format: a job
# submitted without -P by a user with a default project is in that project (qstat -ext shows
# it), and one whose default project's acl does not admit the user is refused as a -P would be.
# Run as root, under the oracle's lock: flock /work/sge-oracle.lock record-issue26-usage.sh OUTDIR
# Everything it makes is named us_* and removed again; sgeuser's user object is restored.
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=$(mktemp -d /tmp/issue26-usage-cap.XXXXXX)
. "$(dirname "$0")/capture-lib.sh"
PATH=$PATH:/usr/bin

# sgeuser's user object as it is (it may not exist: SGE creates none by default).
had_user=0
if qconf -suser sgeuser > "$TMP/user-before" 2>/dev/null; then had_user=1; fi
printf 'name    us_acl\ntype    ACL\nfshare  0\noticket 0\nentries sgeuser2\n' > "$TMP/acl"
qconf -Au "$TMP/acl" >/dev/null
printf 'name us_proj\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n' > "$TMP/prj"
qconf -Aprj "$TMP/prj" >/dev/null
printf 'name us_closed\noticket 0\nfshare 0\nacl us_acl\nxacl NONE\n' > "$TMP/prj2"
qconf -Aprj "$TMP/prj2" >/dev/null
user_with() {  # the user object with default_project $1
    printf 'name sgeuser\noticket 0\nfshare 0\ndelete_time 0\ndefault_project %s\n' "$1" > "$TMP/user"
    if [ $had_user = 1 ] || qconf -suser sgeuser >/dev/null 2>&1; then
        qconf -Muser "$TMP/user" >/dev/null
    else
        qconf -Auser "$TMP/user" >/dev/null
    fi
}

user_with us_proj
CONTEXT="projects us_proj (acl NONE); user sgeuser with default_project us_proj; no other jobs; recorded $(date -u +%F) for issue 26"
cap qsub/default-project sgeuser 'qsub -h -b y -N us_dflt sleep 60'
id=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$OUT/qsub/default-project.txt")
cap qstat/ext-default-project sgeuser 'qstat -ext'
[ -n "$id" ] && qdel "$id" >/dev/null

user_with us_closed
CONTEXT="project us_closed (acl us_acl: sgeuser2 only); user sgeuser with default_project us_closed; recorded $(date -u +%F) for issue 26"
cap qsub/default-project-no-access sgeuser 'qsub -h -b y -N us_dflt sleep 60'
id=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$OUT/qsub/default-project-no-access.txt")
[ -n "$id" ] && qdel "$id" >/dev/null

# Leave the cell as it was.
if [ $had_user = 1 ]; then qconf -Muser "$TMP/user-before" >/dev/null; else qconf -duser sgeuser >/dev/null; fi
qconf -dprj us_closed >/dev/null
qconf -dprj us_proj >/dev/null
qconf -du sgeuser2 us_acl >/dev/null 2>&1
qconf -dul us_acl >/dev/null 2>&1
rm -rf "$TMP"
