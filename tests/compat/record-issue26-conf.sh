#!/bin/bash
# Records the issue-26 configuration cases (qconf -sconf -sconfl -Mconf -mconf -Aconf -aconf
# -dconf of the global and a host's local configuration, the global execution host's -se -Me
# -Ae -mattr -aattr -dattr -de, and -sckptl/-sckpt without checkpointing interfaces) on the
# oracle, in shared/oracle/sge-capture.sh's format.
# Run as root under the oracle's lock: record-issue26-conf.sh OUTDIR. Its files are under
# /tmp/conf26/ (named as the hosts whose configurations they hold: -Mconf takes the host from
# the file name); it adds the complex conf26_lic and the local configuration of vm, and
# restores the global configuration, the global host and the complexes before it ends.
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=/tmp/conf26
rm -rf "$TMP"; mkdir -p "$TMP"/orig "$TMP"/g "$TMP"/l "$TMP"/x "$TMP"/eh
chmod -R 755 "$TMP"
. "$(dirname "$0")/capture-lib.sh"
CONTEXT="config as left by sge-setup.sh (all.q, 2 slots), no local configurations; recorded 2026-11-27 for issue 26"
H=$(hostname -s)
qconf -sconf global > "$TMP/orig/global"
qconf -se global > "$TMP/orig/exechost-global"
qconf -sc > "$TMP/orig/complexes"

# What there is without local configurations and checkpointing interfaces.
cap qconf/i26-sconfl-none root 'qconf -sconfl'
cap qconf/i26-sconf-host-none root "qconf -sconf $H"
cap qconf/i26-sconf-global-host-none root "qconf -sconf global,$H"
cap qconf/i26-sckptl-none root 'qconf -sckptl'
cap qconf/i26-sckpt-nosuch root 'qconf -sckpt conf26_nosuch'
cap qconf/i26-dconf-nosuch root "qconf -dconf $H"
cap qconf/i26-mconf-host-nosuch root "EDITOR=true qconf -mconf $H"
cap qconf/i26-Mconf-nofile root "qconf -Mconf $TMP/g/nosuchfile"

# The global configuration from a file named global.
cp "$TMP/orig/global" "$TMP/g/global"
cap qconf/i26-Mconf-same root "qconf -Mconf $TMP/g/global"
cap qconf/i26-Mconf-by-user sgeuser "qconf -Mconf $TMP/g/global"
sed -e 's/^max_unheard .*/max_unheard                  00:06:00/' \
    -e 's/^mailer .*/mailer                       \/bin\/mail/' \
    -e 's/^min_uid .*/min_uid                      500/' \
    -e 's/^reschedule_unknown .*/reschedule_unknown           00:02:00/' \
    -e 's/^qmaster_params .*/qmaster_params               ENABLE_RESCHEDULE_KILL=1/' \
    -e 's/^prolog .*/prolog                       \/bin\/true/' \
    "$TMP/orig/global" > "$TMP/g/global"
cap qconf/i26-Mconf-changed root "qconf -Mconf $TMP/g/global"
cap qconf/i26-sconf-after-Mconf root 'qconf -sconf'
cp "$TMP/orig/global" "$TMP/x/global"; echo 'conf26_bogus 1' >> "$TMP/x/global"
cap qconf/i26-Mconf-unknown-attr root "qconf -Mconf $TMP/x/global"
sed 's/^max_unheard .*/max_unheard abc/' "$TMP/orig/global" > "$TMP/x/global"
cap qconf/i26-Mconf-bad-time root "qconf -Mconf $TMP/x/global"
sed 's/^min_uid .*/min_uid abc/' "$TMP/orig/global" > "$TMP/x/global"
cap qconf/i26-Mconf-bad-number root "qconf -Mconf $TMP/x/global"
sed 's/^enforce_user .*/enforce_user sometimes/' "$TMP/orig/global" > "$TMP/x/global"
cap qconf/i26-Mconf-bad-word root "qconf -Mconf $TMP/x/global"
grep -v '^xterm ' "$TMP/orig/global" > "$TMP/x/global"
cap qconf/i26-sconf-after-bad-word root 'qconf -sconf'
cp "$TMP/orig/global" "$TMP/x/global"; echo 'conf26_bogus 1' >> "$TMP/x/global"
qconf -Mconf "$TMP/x/global" >/dev/null 2>&1
cap qconf/i26-sconf-after-unknown-attr root 'qconf -sconf'
grep -v '^xterm ' "$TMP/orig/global" > "$TMP/x/global"
cap qconf/i26-Mconf-missing-attr root "qconf -Mconf $TMP/x/global"
cap qconf/i26-sconf-after-missing root 'qconf -sconf'
qconf -Mconf "$TMP/orig/global" >/dev/null 2>&1
cp "$TMP/orig/global" "$TMP/x/notahost"
cap qconf/i26-Mconf-notahost root "qconf -Mconf $TMP/x/notahost"
# The editor forms of the global configuration.
printf '#!/bin/sh\nsed -i "s/^load_report_time .*/load_report_time 00:00:50/" "$1"\n' > "$TMP/lrt-editor"
printf '#!/bin/sh\ncp "$1" %s/edited\n' "$TMP" > "$TMP/copy-editor"
printf '#!/bin/sh\nprintf "mailer /bin/mail\\nreschedule_unknown 00:30:00\\n" > "$1"\n' > "$TMP/local-editor"
printf '#!/bin/sh\nsed -i "s/^reschedule_unknown .*/reschedule_unknown 00:40:00/" "$1"\n' > "$TMP/ru-editor"
chmod 755 "$TMP"/*-editor
cap qconf/i26-mconf-editor-true root 'EDITOR=true qconf -mconf'
cap qconf/i26-mconf-global-lrt root "EDITOR=$TMP/lrt-editor qconf -mconf global"
cap qconf/i26-sconf-after-mconf root 'qconf -sconf global'
qconf -Mconf "$TMP/orig/global" >/dev/null 2>&1
cap qconf/i26-sconf-restored root 'qconf -sconf'

# A local configuration of this host.
printf 'reschedule_unknown 00:10:00\n' > "$TMP/x/$H"
cap qconf/i26-Mconf-host-noconf root "qconf -Mconf $TMP/x/$H"
cap qconf/i26-sconfl-after-Mconf-noconf root 'qconf -sconfl'
qconf -dconf "$H" >/dev/null 2>&1
cap qconf/i26-mconf-host-noconf-editor root "EDITOR=$TMP/local-editor qconf -mconf $H"
cap qconf/i26-sconfl-after-mconf-noconf root 'qconf -sconfl'
qconf -dconf "$H" >/dev/null 2>&1
printf 'mailer /bin/mail\nreschedule_unknown 00:10:00\n' > "$TMP/l/$H"
cap qconf/i26-Aconf-host root "qconf -Aconf $TMP/l/$H"
cap qconf/i26-sconf-host root "qconf -sconf $H"
cap qconf/i26-sconf-global-host root "qconf -sconf global,$H"
cap qconf/i26-sconfl root 'qconf -sconfl'
cap qconf/i26-Aconf-host-again root "qconf -Aconf $TMP/l/$H"
printf 'reschedule_unknown 00:20:00\n' > "$TMP/l/$H"
cap qconf/i26-Mconf-host root "qconf -Mconf $TMP/l/$H"
cap qconf/i26-sconf-host-after-Mconf root "qconf -sconf $H"
printf 'min_uid 5\n' > "$TMP/x/$H"
cap qconf/i26-Mconf-host-global-attr root "qconf -Mconf $TMP/x/$H"
cap qconf/i26-sconf-host-after-global-attr root "qconf -sconf $H"
printf 'reschedule_unknown 00:20:00\n' > "$TMP/l/$H"
qconf -Mconf "$TMP/l/$H" >/dev/null 2>&1
cap qconf/i26-mconf-host-editor root "EDITOR=$TMP/ru-editor qconf -mconf $H"
cap qconf/i26-sconf-host-after-mconf root "qconf -sconf $H"
cap qconf/i26-mconf-host-copy root "EDITOR=$TMP/copy-editor qconf -mconf $H"
cp "$TMP/edited" "$OUT/qconf/i26-mconf-host-template.txt"
cap qconf/i26-dconf root "qconf -dconf $H"
cap qconf/i26-dconf-again root "qconf -dconf $H"
cap qconf/i26-sconfl-after-dconf root 'qconf -sconfl'
cap qconf/i26-aconf-host root "EDITOR=$TMP/local-editor qconf -aconf $H"
cap qconf/i26-sconf-host-after-aconf root "qconf -sconf $H"
cap qconf/i26-aconf-host-again root "EDITOR=$TMP/local-editor qconf -aconf $H"
qconf -dconf "$H" >/dev/null 2>&1
cap qconf/i26-aconf-host-copy root "EDITOR=$TMP/copy-editor qconf -aconf $H"
cp "$TMP/edited" "$OUT/qconf/i26-aconf-host-template.txt"
qconf -dconf "$H" >/dev/null 2>&1
cap qconf/i26-Aconf-global root "qconf -Aconf $TMP/g/global"
cap qconf/i26-dconf-global root 'qconf -dconf global'
cap qconf/i26-aconf-nosuch root 'EDITOR=true qconf -aconf conf26-nosuch'
qconf -dconf "$H" >/dev/null 2>&1
qconf -Mconf "$TMP/orig/global" >/dev/null 2>&1

# The global execution host.
cp "$TMP/orig/complexes" "$TMP/complexes"
echo 'conf26_lic          c26        INT       <=    YES         YES        0        0' >> "$TMP/complexes"
qconf -Mc "$TMP/complexes" >/dev/null 2>&1
cap qconf/i26-se-global root 'qconf -se global'
cap qconf/i26-mattr-exechost-global root 'qconf -mattr exechost complex_values conf26_lic=4 global'
cap qconf/i26-se-global-after-mattr root 'qconf -se global'
cap qconf/i26-sel-with-global root 'qconf -sel'
cap qconf/i26-aattr-exechost-global root 'qconf -aattr exechost complex_values conf26_lic=5 global'
cap qconf/i26-dattr-exechost-global root 'qconf -dattr exechost complex_values conf26_lic global'
cap qconf/i26-se-global-after-dattr root 'qconf -se global'
printf 'hostname global\nload_scaling NONE\ncomplex_values conf26_lic=3\nuser_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\nusage_scaling NONE\nreport_variables NONE\n' > "$TMP/eh/global"
cap qconf/i26-Me-global root "qconf -Me $TMP/eh/global"
cap qconf/i26-se-global-after-Me root 'qconf -se global'
cap qconf/i26-Ae-global root "qconf -Ae $TMP/eh/global"
cap qconf/i26-me-global-true root 'EDITOR=true qconf -me global'
cap qconf/i26-de-global root 'qconf -de global'
cap qconf/i26-se-global-after-de root 'qconf -se global'
cap qconf/i26-sel-after-de root 'qconf -sel'
cap qconf/i26-qhost-global sgeuser 'qhost -h global'
grep -v '^load_values\|^processors' "$TMP/orig/exechost-global" > "$TMP/eh/orig"
qconf -Me "$TMP/eh/orig" >/dev/null 2>&1
qconf -Mc "$TMP/orig/complexes" >/dev/null 2>&1
cap qconf/i26-se-global-restored root 'qconf -se global'
rm -rf "$TMP"
