#!/bin/sh
# bench/sshd.sh -- sourced by the ssh benchmarks: starts an OpenSSH server of its own on
# 127.0.0.1 (`sshd -D`, its own host key, an authorized client key and a free port, as the
# test harness does in tests/support/sshd.rs: nothing in the system's ssh configuration is
# used or changed), and exports SSH_LAUNCH, the `launch:` entry of a host reached there as
# the current user. The caller sets MAX_SESSIONS; the server stops when the caller exits.
SSHD=${SSHD:-/usr/sbin/sshd}
[ -x "$SSHD" ] || { echo "$SSHD is not installed (apt-get install openssh-server)" >&2; exit 1; }
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/gridspool-sshd.XXXXXX")
chmod 755 "$DIR"
SSHD_PID=
cleanup() {
    if [ -n "$SSHD_PID" ]; then kill "$SSHD_PID" 2>/dev/null || :; wait "$SSHD_PID" 2>/dev/null || :; fi
    rm -rf "$DIR"
}
trap cleanup EXIT
ssh-keygen -q -t ed25519 -N '' -C gridspool-bench -f "$DIR/host_ed25519" >/dev/null
ssh-keygen -q -t ed25519 -N '' -C gridspool-bench -f "$DIR/client_ed25519" >/dev/null
cp "$DIR/client_ed25519.pub" "$DIR/authorized_keys"
# Sessions get an empty HOME (tests/support/sshd.rs, session_home): no start-up files of the
# logging-in user, whose shell set-up (pyenv's rehash lock) can stall every session.
mkdir -m 755 "$DIR/session-home"
chmod 644 "$DIR/authorized_keys"
# A port nobody listens on now.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '[127.0.0.1]:%s %s\n' "$PORT" "$(cat "$DIR/host_ed25519.pub")" >"$DIR/known_hosts"
if [ "$(id -u)" -eq 0 ]; then PAM=yes; mkdir -p /run/sshd; else PAM=no; fi
cat >"$DIR/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_ed25519
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
UsePAM $PAM
MaxSessions 64
MaxStartups 100
LogLevel ERROR
SetEnv HOME=$DIR/session-home
EOF
"$SSHD" -D -e -f "$DIR/sshd_config" 2>"$DIR/sshd.log" </dev/null &
SSHD_PID=$!
i=0
until ssh -F /dev/null -i "$DIR/client_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o "UserKnownHostsFile=$DIR/known_hosts" -o StrictHostKeyChecking=yes -p "$PORT" \
    "$(id -un)@127.0.0.1" true 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { echo "sshd does not answer:" >&2; cat "$DIR/sshd.log" >&2; exit 1; }
    sleep 0.1
done
SSH_LAUNCH="{method: ssh, address: 127.0.0.1, port: $PORT, user: $(id -un), max_sessions: $MAX_SESSIONS, options: [-F, /dev/null, -i, $DIR/client_ed25519, -o, IdentitiesOnly=yes, -o, 'UserKnownHostsFile=$DIR/known_hosts', -o, StrictHostKeyChecking=yes]}"
export SSH_LAUNCH
