#!/usr/bin/env bash
# Installs gridspool for several users, as crontab and at are installed (docs/security.md):
# the cell belongs to a dedicated group, users are not in it, and the clients are setgid to it.
#
#   scripts/install-multiuser.sh [--bin-dir DIR] [--destdir DIR | --cell-only] PREFIX [CELL_DIR [GROUP]]
#
# PREFIX gets lib/gridspool/gridspool, the one program of every command (stripped), with a
# link per command beside it (SGE's bin/<arch>: SGE_BINARY_PATH, the PATH of settings.sh), in
# bin/ (the clients) and in sbin/ (sched_d, gridspool-shepherd). The program is setgid GROUP;
# sched_d and the shepherd give that group up as they start (src/cli/multicall.rs).
# CELL_DIR is $SGE_ROOT/$SGE_CELL, created with the default configuration and
# common/settings.sh/.csh if new. --destdir DIR stages the files under DIR for a package
# (scripts/build-deb.sh): no group, no setgid, no cell; the package's postinst does those.
# --cell-only makes CELL_DIR for the commands already in PREFIX (the package ships this
# script as /usr/lib/gridspool/install-multiuser.sh for that).
# The program comes from target/release unless --bin-dir says otherwise. Else must run as root.
set -euo pipefail

bin_dir="$(cd "$(dirname "$0")/.." && pwd)/target/release"
destdir= cell_only=
while [ $# -gt 0 ]; do
  case $1 in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --destdir) destdir=$2; shift 2 ;;
    --cell-only) cell_only=1; shift ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then
  echo "usage: $0 [--bin-dir DIR] [--destdir DIR | --cell-only] PREFIX [CELL_DIR [GROUP]]" >&2
  exit 2
fi
prefix=$1 cell=${2:-} group=${3:-gridspool}
if [ -z "$destdir" ] && [ "$(id -u)" != 0 ]; then
  echo "$0: must run as root (it creates a group and a setgid program)" >&2
  exit 1
fi
if [ -n "$cell_only" ] && [ -z "$cell" ]; then
  echo "$0: --cell-only needs CELL_DIR" >&2
  exit 2
fi
if [ -z "$cell_only" ] && [ ! -x "$bin_dir/gridspool" ]; then
  echo "$0: $bin_dir/gridspool not found: build it first (cargo build --release)" >&2
  exit 1
fi
clients="qsub qstat qdel qalter qhold qrls qacct qhost qconf qmod qselect qquota qrsub qrstat qrdel qrsh qlogin qsh"
daemons="sched_d gridspool-shepherd"
# Tools users run on their own files (the program gives up the setgid group for them).
tools="gridspool-sim"
root=$destdir$prefix
lib=$root/lib/gridspool

if [ -z "$cell_only" ]; then
  install -d -m 0755 "$root/bin" "$root/sbin" "$lib" "$root/share/man/man1" "$root/share/man/man8"
  # Stripped: the line tables are most of the file (backtraces lose their line numbers).
  tmp=$(mktemp "$lib/.gridspool.XXXXXX")
  if command -v strip >/dev/null; then
    strip -o "$tmp" "$bin_dir/gridspool"
  else
    cp "$bin_dir/gridspool" "$tmp"
  fi
  chmod 0755 "$tmp"
  mv -f "$tmp" "$lib/gridspool"
  for c in $clients $daemons $tools; do ln -sfn gridspool "$lib/$c"; done
  for c in $clients $tools; do ln -sfn ../lib/gridspool/gridspool "$root/bin/$c"; done
  for c in $daemons; do ln -sfn ../lib/gridspool/gridspool "$root/sbin/$c"; done
  # DRMAA 1.0 (cargo build --release -p gridspool-drmaa), when built: the library under Grid
  # Engine's soname and its header.
  if [ -f "$bin_dir/libdrmaa.so" ]; then
    if command -v strip >/dev/null; then
      strip -o "$lib/libdrmaa.so.1.0" "$bin_dir/libdrmaa.so"
    else
      cp "$bin_dir/libdrmaa.so" "$lib/libdrmaa.so.1.0"
    fi
    chmod 0755 "$lib/libdrmaa.so.1.0"
    ln -sfn libdrmaa.so.1.0 "$lib/libdrmaa.so"
    install -D -m 0644 "$(cd "$(dirname "$0")/.." && pwd)/drmaa/include/drmaa.h" \
      "$root/include/gridspool/drmaa.h"
  fi
  for m in "$(cd "$(dirname "$0")/.." && pwd)"/man/*.1; do
    if [ -f "$m" ]; then install -m 0644 "$m" "$root/share/man/man1/"; fi
  done
  for m in "$(cd "$(dirname "$0")/.." && pwd)"/man/*.8; do
    if [ -f "$m" ]; then install -m 0644 "$m" "$root/share/man/man8/"; fi
  done
  if [ -n "$destdir" ]; then
    echo "staged under $destdir$prefix"
    exit 0
  fi
fi

getent group "$group" >/dev/null || groupadd --system "$group"
if [ -z "$cell_only" ]; then
  chown root:"$group" "$lib/gridspool"
  chmod 2755 "$lib/gridspool"
fi
[ -n "$cell" ] || { echo "installed in $prefix (setgid $group); no cell"; exit 0; }

"$prefix/sbin/sched_d" --init --spool "$cell" >/dev/null

# $SGE_ROOT/bin/<arch>: where tools built for Grid Engine look for its commands (Open MPI's
# gridengine support runs $SGE_ROOT/bin/$ARC/qrsh -inherit).
case $(uname -m) in
  x86_64) arch=lx-amd64 ;;
  aarch64) arch=lx-arm64 ;;
  *) arch=lx-$(uname -m) ;;
esac
arch_bin=$(dirname "$cell")/bin/$arch
install -d -m 0755 "$arch_bin"
for c in $clients; do ln -sfn "$prefix/bin/$c" "$arch_bin/$c"; done
# $SGE_ROOT/lib/<arch>/libdrmaa.so and $SGE_ROOT/include/drmaa.h, where DRMAA programs look.
if [ -f "$prefix/lib/gridspool/libdrmaa.so.1.0" ]; then
  arch_lib=$(dirname "$cell")/lib/$arch
  install -d -m 0755 "$arch_lib" "$(dirname "$cell")/include"
  ln -sfn "$prefix/lib/gridspool/libdrmaa.so.1.0" "$arch_lib/libdrmaa.so.1.0"
  ln -sfn libdrmaa.so.1.0 "$arch_lib/libdrmaa.so"
  ln -sfn "$prefix/include/gridspool/drmaa.h" "$(dirname "$cell")/include/drmaa.h"
fi

# The cell is traversable (users source common/settings.sh, qacct reads common/accounting),
# but only the group may write where clients publish, and only root elsewhere.
chown root:"$group" "$cell"
chmod 0755 "$cell"
mkdir -p "$cell/ars"
chown -R root:"$group" "$cell/seq" "$cell/jobs" "$cell/requests" "$cell/ars" "$cell/daemon" "$cell/quarantine"
chmod 2770 "$cell/seq"                   # counters are replaced by whichever client is next
chmod 3770 "$cell/jobs" "$cell/requests" "$cell/ars" # setgid (files stay in the group) + sticky
chmod 2750 "$cell/daemon" "$cell/quarantine"
find "$cell/seq" "$cell/jobs" "$cell/requests" "$cell/ars" -type f -exec chgrp "$group" {} + -exec chmod g+r {} +
chown root:root "$cell/config.yaml" "$cell/common"
chmod 0644 "$cell/config.yaml"
chmod 0755 "$cell/common"
[ -f "$cell/common/accounting" ] && chmod 0644 "$cell/common/accounting"

echo "installed: commands in $prefix/bin and $prefix/sbin (setgid $group), cell $cell"
echo "users: . $cell/common/settings.sh (sh) or source $cell/common/settings.csh (csh)"
echo "start the daemon as root: $prefix/sbin/sched_d --spool $cell"
