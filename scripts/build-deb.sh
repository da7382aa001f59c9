#!/usr/bin/env bash
# Builds the Debian package gridspool_<version>_<arch>.deb (one package for the master,
# execution hosts and submit hosts; README.md "Installing on a site").
#
#   scripts/build-deb.sh [--bin-dir DIR] [OUT_DIR]
#
# Takes the multicall program and libdrmaa.so from target/release (cargo build --release
# --bin gridspool -p gridspool-drmaa) unless --bin-dir says otherwise; the files are those of scripts/install-multiuser.sh under
# /usr, plus the systemd units (sched_d and its shadow), logrotate and the maintainer
# scripts of scripts/deb/.
# Needs dpkg-deb only (not root).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bin_dir="$repo/target/release"
if [ "${1:-}" = "--bin-dir" ]; then bin_dir=$2; shift 2; fi
out=${1:-$repo/target}

version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -1)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"

"$here/install-multiuser.sh" --bin-dir "$bin_dir" --destdir "$stage" /usr >/dev/null
install -D -m 0755 "$here/install-multiuser.sh" "$stage/usr/lib/gridspool/install-multiuser.sh"
install -D -m 0644 "$here/deb/gridspool.service" "$stage/lib/systemd/system/gridspool.service"
install -D -m 0644 "$here/deb/gridspool-shadow.service" "$stage/lib/systemd/system/gridspool-shadow.service"
install -D -m 0644 "$here/deb/logrotate" "$stage/etc/logrotate.d/gridspool"
doc="$stage/usr/share/doc/gridspool"
install -D -m 0644 "$repo/README.md" "$doc/README.md"
install -m 0644 "$repo/docs/security.md" "$doc/security.md"
install -m 0644 "$repo/spool/README.md" "$doc/spool.md"
install -d -m 0755 "$stage/var/lib/gridspool" "$stage/DEBIAN"
install -m 0755 "$here/deb/postinst" "$here/deb/postrm" "$stage/DEBIAN/"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: gridspool
Version: $version
Architecture: $arch
Maintainer: gridspool developers <gridspool@localhost>
Installed-Size: $size
Depends: adduser, openssh-client
Recommends: openssh-server
Conflicts: gridengine-client, gridengine-master, gridengine-exec
Section: admin
Priority: optional
Description: Grid Engine-compatible batch scheduler without a qmaster
 qsub, qstat, qdel, qalter, qhold, qrls, qacct and qhost of Son of Grid Engine 8.1.9 over a
 spool directory, the scheduler daemon sched_d and the shepherd that runs jobs on
 execution hosts, all one program (/usr/lib/gridspool/gridspool, setgid gridspool).
CONTROL
mkdir -p "$out"
deb="$out/gridspool_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
echo "$deb"
