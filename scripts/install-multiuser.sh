#!/usr/bin/env bash
# Installs gridspool for several users, as crontab and at are installed (docs/security.md):
# the cell belongs to a dedicated group, users are not in it, and the clients are setgid to it.
#
#   scripts/install-multiuser.sh [--bin-dir DIR] PREFIX CELL_DIR [GROUP]
#
# PREFIX gets bin/ (clients, setgid GROUP) and sbin/ (sched_d, gridspool-shepherd);
# CELL_DIR is $SGE_ROOT/$SGE_CELL, created with the default configuration if new.
# Binaries come from target/release unless --bin-dir says otherwise. Must run as root.
set -euo pipefail

bin_dir="$(cd "$(dirname "$0")/.." && pwd)/target/release"
if [ "${1:-}" = "--bin-dir" ]; then bin_dir=$2; shift 2; fi
if [ $# -lt 2 ]; then
  echo "usage: $0 [--bin-dir DIR] PREFIX CELL_DIR [GROUP]" >&2
  exit 2
fi
prefix=$1 cell=$2 group=${3:-gridspool}
if [ "$(id -u)" != 0 ]; then
  echo "$0: must run as root (it creates a group and setgid binaries)" >&2
  exit 1
fi

getent group "$group" >/dev/null || groupadd --system "$group"

install -d -m 0755 "$prefix/bin" "$prefix/sbin"
for b in qsub qstat qdel qalter qhold qrls qacct qhost; do
  if [ -x "$bin_dir/$b" ]; then
    install -o root -g "$group" -m 2755 "$bin_dir/$b" "$prefix/bin/$b"
  fi
done
for b in sched_d gridspool-shepherd; do
  if [ -x "$bin_dir/$b" ]; then
    install -o root -g root -m 0755 "$bin_dir/$b" "$prefix/sbin/$b"
  fi
done

"$bin_dir/sched_d" --init --spool "$cell" >/dev/null

# The cell is traversable (users source common/settings.sh, qacct reads common/accounting),
# but only the group may write where clients publish, and only root elsewhere.
chown root:"$group" "$cell"
chmod 0755 "$cell"
chown -R root:"$group" "$cell/seq" "$cell/jobs" "$cell/requests" "$cell/daemon" "$cell/quarantine"
chmod 2770 "$cell/seq"                   # counters are replaced by whichever client is next
chmod 3770 "$cell/jobs" "$cell/requests" # setgid (files stay in the group) + sticky
chmod 2750 "$cell/daemon" "$cell/quarantine"
find "$cell/seq" "$cell/jobs" "$cell/requests" -type f -exec chgrp "$group" {} + -exec chmod g+r {} +
chown root:root "$cell/config.yaml" "$cell/common"
chmod 0644 "$cell/config.yaml"
chmod 0755 "$cell/common"
[ -f "$cell/common/accounting" ] && chmod 0644 "$cell/common/accounting"

echo "installed: clients in $prefix/bin (setgid $group), daemon in $prefix/sbin, cell $cell"
echo "start the daemon as root: SGE_ROOT=$(dirname "$cell") SGE_CELL=$(basename "$cell") $prefix/sbin/sched_d"
