#!/bin/sh
# bench/throughput-ssh.sh -- bench/throughput.sh with the execution host reached over ssh.
#
# Starts its own OpenSSH server on 127.0.0.1 (`sshd -D`, its own host key, an authorized
# client key and a free port, as the test harness does in tests/support/sshd.rs: nothing in
# the system's ssh configuration is used or changed), configures the cell's host with
# `launch: {method: ssh, ...}` to log in there as the current user, and runs
# bench/throughput.sh. sched_d then starts every task through the host's ControlMaster
# connection and collects the results over one `gridspool-shepherd watch` session.
# Target (issue 3): >= 50 jobs/s for 2,000 jobs.
#
# Usage: [SLOTS=8] [MODE=release|restart] [MAX_SESSIONS=10] bench/throughput-ssh.sh [N]
# MAX_SESSIONS is the host's `max_sessions` (sshd here allows 64 sessions per connection).
set -eu
N=${1:-2000}
MAX_SESSIONS=${MAX_SESSIONS:-10}
. "$(dirname "$0")/sshd.sh"
echo "ssh to 127.0.0.1:$PORT as $(id -un), max_sessions $MAX_SESSIONS"
"$HERE/bench/throughput.sh" "$N"
