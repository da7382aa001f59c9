#!/usr/bin/env bash
# Builds the Debian package gridspool_<version>_<arch>.deb (one package for the master,
# execution hosts and submit hosts; README.md "Installing on a site").
#
#   scripts/build-deb.sh [--bin-dir DIR] [OUT_DIR]
#
# Takes the multicall program and libdrmaa.so from target/release (cargo build --release
# --bin gridspool -p gridspool-drmaa) unless --bin-dir says otherwise; the files are those of
# scripts/install-multiuser.sh under /usr (the manual pages compressed, the private DRMAA
# library not executable, as Debian's policy has them), the shell completions of
# completions/ (bash, zsh, fish), the systemd units (sched_d and its shadow), logrotate (a
# conffile), the copyright, changelog, lintian overrides and maintainer scripts of
# scripts/deb/. `lintian` has nothing to say of the result but the overrides' tags
# (tests/install.rs).
# The Maintainer field (and the changelog's signature) is $DEBFULLNAME <$DEBEMAIL>, as for
# Debian's own tools (set them for a site's package), else the author of the checkout's last
# commit; the changelog's date is $SOURCE_DATE_EPOCH's, else that commit's (the same
# checkout builds the same package).
# Needs dpkg-deb (and objdump, for the C library's version, and strip, when installed).
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
# Run on an SGE master to save its cell for sched_d --init --from-sge (sched_d(8)).
install -D -m 0755 "$here/sge-export.sh" "$stage/usr/lib/gridspool/sge-export.sh"
install -D -m 0644 "$here/deb/gridspool.service" "$stage/lib/systemd/system/gridspool.service"
install -D -m 0644 "$here/deb/gridspool-shadow.service" "$stage/lib/systemd/system/gridspool-shadow.service"
install -D -m 0644 "$here/deb/logrotate" "$stage/etc/logrotate.d/gridspool"
lib="$stage/usr/lib/gridspool"
# A shared library is mapped, not run (Debian policy 8.1); compilers' version notes
# (.comment) are of no use in an installed binary.
if [ -f "$lib/libdrmaa.so.1.0" ]; then chmod 0644 "$lib/libdrmaa.so.1.0"; fi
if command -v strip >/dev/null; then
  for f in "$lib/gridspool" "$lib/libdrmaa.so.1.0"; do
    if [ -f "$f" ]; then strip --remove-section=.comment "$f"; fi
  done
fi
# Manual pages compressed (policy 12.1), gzip -n: no name or time stamp, the same bytes
# from the same page.
gzip -9n "$stage"/usr/share/man/man*/*.[18]
# Shell completions, where bash-completion, zsh and fish look for a vendor's.
for f in "$repo"/completions/*.bash; do
  install -D -m 0644 "$f" "$stage/usr/share/bash-completion/completions/$(basename "$f" .bash)"
done
for f in "$repo"/completions/_*; do
  install -D -m 0644 "$f" "$stage/usr/share/zsh/vendor-completions/$(basename "$f")"
done
for f in "$repo"/completions/*.fish; do
  install -D -m 0644 "$f" "$stage/usr/share/fish/vendor_completions.d/$(basename "$f")"
done

# Who maintains the package, as dch(1) finds out: DEBEMAIL (or EMAIL), else here the
# checkout's last author, else the user at /etc/mailname or the host's name.
if [ -n "${DEBEMAIL:-${EMAIL:-}}" ]; then
  maintainer="${DEBFULLNAME:-gridspool maintainers} <${DEBEMAIL:-$EMAIL}>"
elif git -C "$repo" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  maintainer=$(git -C "$repo" log -1 --format='%an <%ae>')
else
  mailname=$(cat /etc/mailname 2>/dev/null || hostname -f 2>/dev/null || hostname)
  maintainer="${DEBFULLNAME:-gridspool maintainers} <$(id -un)@$mailname>"
fi
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
elif git -C "$repo" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  date=$(date -u -R -d "@$(git -C "$repo" log -1 --format=%ct)")
else
  date=$(date -u -R)
fi

doc="$stage/usr/share/doc/gridspool"
install -D -m 0644 "$repo/README.md" "$doc/README.md"
install -m 0644 "$repo/docs/security.md" "$doc/security.md"
install -m 0644 "$repo/spool/README.md" "$doc/spool.md"
install -m 0644 "$here/deb/copyright" "$doc/copyright"
# A native package's changelog is debian/changelog's format, in the package's doc directory.
cat >"$stage/changelog" <<CHANGELOG
gridspool ($version) unstable; urgency=medium

  * Built from the gridspool repository by scripts/build-deb.sh; the history
    of the changes is the repository's.

 -- $maintainer  $date
CHANGELOG
gzip -9n -c "$stage/changelog" >"$doc/changelog.gz"
rm "$stage/changelog"
chmod 0644 "$doc/changelog.gz"
install -D -m 0644 "$here/deb/lintian-overrides" "$stage/usr/share/lintian/overrides/gridspool"
install -d -m 0755 "$stage/var/lib/gridspool" "$stage/DEBIAN"
install -m 0755 "$here/deb/postinst" "$here/deb/postrm" "$stage/DEBIAN/"
# A site's edits to its files in /etc survive an upgrade.
(cd "$stage" && find etc -type f | sed 's|^|/|' | sort) >"$stage/DEBIAN/conffiles"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
  xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"
# The C library the program and the DRMAA library link against, at the newest symbol
# version they use (dpkg-shlibdeps's answer, without a source package to run it in).
libc=2.34
if command -v objdump >/dev/null; then
  newest=$(for f in "$lib/gridspool" "$lib/libdrmaa.so.1.0"; do
    if [ -f "$f" ]; then objdump -T "$f"; fi
  done | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
  libc=${newest:-$libc}
fi
drmaa=
if [ -f "$lib/libdrmaa.so.1.0" ]; then
  drmaa=$'\n'" Its DRMAA 1.0 library (libdrmaa.so) serves drmaa-python, snakemake, Galaxy."
fi
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: gridspool
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: adduser, openssh-client, libc6 (>= $libc), libgcc-s1
Recommends: openssh-server
Conflicts: gridengine-client, gridengine-master, gridengine-exec
Section: admin
Priority: optional
Description: Grid Engine-compatible batch scheduler without a qmaster
 The commands of Son of Grid Engine 8.1.9 (qsub, qstat, qdel, qalter, qhold,
 qrls, qacct, qhost, qconf, qmod, qselect, qquota, qrsub, qrstat, qrdel,
 qrsh, qlogin) over a spool directory, the scheduler daemon sched_d, the
 shepherd that runs jobs on execution hosts and the policy simulator
 gridspool-sim, all one program
 (/usr/lib/gridspool/gridspool, setgid gridspool), with their manual pages
 and shell completions.$drmaa
CONTROL
mkdir -p "$out"
deb="$out/gridspool_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
echo "$deb"
