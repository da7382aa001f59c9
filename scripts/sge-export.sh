#!/bin/bash
# Saves an SGE 8.1.9 cell for `sched_d --init --from-sge DIR` (sched_d(8), "MOVING FROM SGE").
#
#   sge-export.sh DIR
#
# Run on the SGE master host, as root or the SGE admin user, with SGE's settings sourced
# ($SGE_ROOT, $SGE_CELL; `. $SGE_ROOT/$SGE_CELL/common/settings.sh`) and the qmaster running.
# DIR (created; it must not exist or be empty) receives:
#   qconf-<option>[-<object>].txt  every `qconf -s*` of every object, and every list form:
#                                  its output, then its stderr, if any, after a `# stderr:` line
#   accounting                     the cell's accounting file (sge_accounting(5))
#   bdb/USER:<name>.txt, bdb/PROJECT:<name>.txt
#                                  the share-tree usage, as `spooledit dump` prints it (BerkeleyDB
#                                  spooling; 8.1.9's qconf -suser/-sprj print no usage)
#   classic/users/, classic/projects/
#                                  the same from a classic spool directory
#   sge_share_mon-*.txt            the share tree's nodes with their usage, as the scheduler sees it
#   spooling-method.txt            the bootstrap file's spooling lines
#   spool/qmaster/jobseqnum, arseqnum
#                                  the last job and reservation ids
# Nothing in the SGE cell is changed. The qmaster writes usage to its spool every 4 minutes
# (STREE_SPOOL_INTERVAL): export at least that long after the last job ended.
set -euo pipefail

if [ $# -ne 1 ] || [ "${1:0:1}" = - ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
out=$1
: "${SGE_ROOT:?SGE_ROOT is not set: source the settings.sh of the SGE cell first}"
cell_dir="$SGE_ROOT/${SGE_CELL:-default}"
bootstrap="$cell_dir/common/bootstrap"
[ -r "$bootstrap" ] || { echo "$0: $bootstrap: not readable: is this the SGE master host?" >&2; exit 1; }
command -v qconf >/dev/null || { echo "$0: qconf not found in PATH" >&2; exit 1; }
qconf -sh >/dev/null 2>&1 || { echo "$0: qconf cannot reach the qmaster (qconf -sh failed): start it first" >&2; exit 1; }
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
    echo "$0: $out exists and is not empty" >&2
    exit 1
fi
mkdir -p "$out"
err=$(mktemp)
trap 'rm -f "$err"' EXIT

save() {  # save NAME command...: stdout, then stderr (if any) after "# stderr:"
    local name=$1; shift
    "$@" >"$out/$name.txt" 2>"$err" || true
    if [ -s "$err" ]; then { echo "# stderr:"; cat "$err"; } >>"$out/$name.txt"; fi
}
list() { qconf "$1" 2>/dev/null || true; }

for l in sql shgrpl sel sh ss spl sul scall sprjl suserl srqsl sm so sckptl sconfl; do
    save "qconf-$l" qconf -"$l"
done
for x in $(list -sql); do save "qconf-sq-$x" qconf -sq "$x"; done
for x in $(list -shgrpl); do
    save "qconf-shgrp-$x" qconf -shgrp "$x"
    save "qconf-shgrp_tree-$x" qconf -shgrp_tree "$x"
done
save qconf-se-global qconf -se global
for x in $(list -sel); do save "qconf-se-$x" qconf -se "$x"; done
for x in $(list -spl); do save "qconf-sp-$x" qconf -sp "$x"; done
for x in $(list -sckptl); do save "qconf-sckpt-$x" qconf -sckpt "$x"; done
for x in $(list -sul); do save "qconf-su-$x" qconf -su "$x"; done
for x in $(list -scall); do save "qconf-scal-$x" qconf -scal "$x"; done
for x in $(list -sprjl); do save "qconf-sprj-$x" qconf -sprj "$x"; done
for x in $(list -suserl); do save "qconf-suser-$x" qconf -suser "$x"; done
for x in $(list -srqsl); do save "qconf-srqs-$x" qconf -srqs "$x"; done
for x in $(list -sconfl); do save "qconf-sconf-$x" qconf -sconf "$x"; done
save qconf-srqs qconf -srqs
save qconf-sc qconf -sc
save qconf-sstree qconf -sstree
save qconf-ssconf qconf -ssconf
save qconf-sconf qconf -sconf

if [ -f "$cell_dir/common/accounting" ]; then
    cp "$cell_dir/common/accounting" "$out/accounting"
fi
grep -E '^(spooling_method|spooling_lib|spooling_params|qmaster_spool_dir|admin_user)' "$bootstrap" \
    >"$out/spooling-method.txt"
method=$(awk '$1=="spooling_method"{print $2}' "$bootstrap")
qmaster_spool=$(awk '$1=="qmaster_spool_dir"{print $2}' "$bootstrap")
# The last job and reservation ids: the new cell's go on above them.
mkdir -p "$out/spool/qmaster"
for f in jobseqnum arseqnum; do
    if [ -r "$qmaster_spool/$f" ]; then cp "$qmaster_spool/$f" "$out/spool/qmaster/$f"; fi
done
admin=$(awk '$1=="admin_user"{print $2}' "$bootstrap")
arch=$("$SGE_ROOT/util/arch" 2>/dev/null || echo lx-amd64)

# The share-tree usage, where the qmaster keeps it.
case $method in
berkeleydb)
    spooledit=""
    for p in "$SGE_ROOT/utilbin/$arch/spooledit" /usr/lib/gridengine/spooledit; do
        if [ -x "$p" ]; then spooledit=$p; break; fi
    done
    if [ -z "$spooledit" ]; then
        echo "$0: warning: spooledit not found: the share-tree usage is not exported" >&2
    else
        as_admin=()
        if [ "$(id -u)" = 0 ] && [ -n "$admin" ] && [ "$admin" != none ] && id "$admin" >/dev/null 2>&1; then
            as_admin=(runuser -u "$admin" --)
        fi
        mkdir -p "$out/bdb"
        for x in $(list -suserl); do
            "${as_admin[@]}" env SGE_ROOT="$SGE_ROOT" SGE_CELL="${SGE_CELL:-default}" \
                "$spooledit" dump "USER:$x" >"$out/bdb/USER:$x.txt" 2>&1 || true
        done
        for x in $(list -sprjl); do
            "${as_admin[@]}" env SGE_ROOT="$SGE_ROOT" SGE_CELL="${SGE_CELL:-default}" \
                "$spooledit" dump "PROJECT:$x" >"$out/bdb/PROJECT:$x.txt" 2>&1 || true
        done
    fi
    ;;
classic)
    for kind in users projects; do
        if [ -d "$qmaster_spool/$kind" ]; then
            mkdir -p "$out/classic/$kind"
            cp -p "$qmaster_spool/$kind"/* "$out/classic/$kind/" 2>/dev/null || true
        fi
    done
    ;;
esac
for p in "$SGE_ROOT/utilbin/$arch/sge_share_mon" /usr/lib/gridengine/sge_share_mon; do
    if [ -x "$p" ]; then
        save sge_share_mon-h "$p" -c 1 -h
        save sge_share_mon-n "$p" -c 1 -n
        break
    fi
done
echo "exported the SGE cell $cell_dir to $out; import it with: sched_d --init --from-sge $out"
