#!/bin/bash
# Records the issue-12 cases (job environment with -v/-V, qsub -sync y and signals) on the
# oracle, in shared/oracle/sge-capture.sh's format. Run as root: rec.sh OUTDIR CASE...
# (case names below). Cases that wait (-shell no of a missing command: Eqw; s_rt trapped)
# were ended by `qdel` from another shell, as their context lines say.
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=$(mktemp -d /tmp/envsync-cap.XXXXXX)
CONTEXT="-"
. "$(dirname "$0")/capture-lib.sh"
d=/home/sgeuser
printf '#!/bin/sh\nexec python3 -c "x = bytearray(1000 * 1024 * 1024)"\n' > $d/vmem.sh
printf '#!/bin/sh\nx=a\nwhile :; do x="$x$x"; done\n' > $d/vmemgrow.sh
printf '#!/bin/sh\n[ "$SGE_TASK_ID" = 1 ] && sleep 4\nexit 0\n' > $d/order.sh
printf '#!/bin/sh\nkill -TERM $$\necho not reached\n' > $d/killself.sh
printf '#!/bin/sh\n[ "$SGE_TASK_ID" = 2 ] && kill -KILL $$\nexit 0\n' > $d/arrkill.sh
printf '#!/bin/sh\ntrap "echo got USR1" USR1\nwhile :; do sleep 1; done\n' > $d/trapusr1.sh
printf '#!/bin/sh\necho $0\nenv | sort\n' > $d/envscr.sh
printf '#!/bin/sh\nsleep 60\n' > $d/sleep60.sh
chown sgeuser:sgeuser $d/*.sh; chmod 755 $d/*.sh
CONTEXT="queue all.q (2 slots, shell /bin/sh, posix_compliant, login_shells bash,sh,ksh,csh,tcsh), other users' jobs may run"
for c in "$@"; do
  case $c in
  hrt) cap qsub/sync-y-h_rt sgeuser 'qsub -sync y -l h_rt=0:0:3 -b y sleep 60' ;;
  hrtscript) cap qsub/sync-y-h_rt-script sgeuser 'qsub -sync y -l h_rt=0:0:3 sleep60.sh' ;;
  hrtterse) cap qsub/sync-y-h_rt-terse sgeuser 'qsub -sync y -terse -l h_rt=0:0:3 -b y sleep 60' ;;
  srt) cap qsub/sync-y-s_rt sgeuser 'qsub -sync y -l s_rt=0:0:3 -b y sleep 60' ;;
  srttrap) cap qsub/sync-y-s_rt-trapped sgeuser 'qsub -sync y -l s_rt=0:0:3 trapusr1.sh' ;;
  qdelrun) cap qsub/sync-y-qdel-running sgeuser 'qsub -sync y -N syncdelrun -b y sleep 60 & until qstat -s r | grep -q syncdelrun; do sleep 1; done; qdel syncdelrun >/dev/null; wait' ;;
  qdelpend) cap qsub/sync-y-qdel-pending sgeuser 'qsub -sync y -h -N syncdelpend -b y true & sleep 4; qdel syncdelpend >/dev/null; wait' ;;
  killself) cap qsub/sync-y-kill-self sgeuser 'qsub -sync y killself.sh' ;;
  arrkill) cap qsub/sync-y-array-task-killed sgeuser 'qsub -sync y -t 1-3 arrkill.sh' ;;
  noshell) cap qsub/sync-y-shell-no-nonexistent sgeuser 'qsub -sync y -b y -shell no /no/such/binary' ;;
  toil) cap job/V-shell-no-venv sgeuser 'PATH=$HOME/venv/bin:$PATH qsub -terse -sync y -V -b y -shell no -N myprog myprog > id; cat myprog.o$(head -1 id)' ;;
  noV) cap job/shell-no-env sgeuser 'qsub -terse -sync y -b y -shell no -N envnoV env > id; cat envnoV.o$(head -1 id) | sort' ;;
  vlist) cap job/v-list-shell-no-env sgeuser 'qsub -terse -sync y -v PATH=/opt/x:/bin,HOME=/nowhere,TMPDIR=/x,SHELL=/bin/zsh,TERM=vt100,LOGNAME=zz,FOO=bar -b y -shell no -N envv env > id; cat envv.o$(head -1 id) | sort' ;;
  vsge) cap job/v-sge-prefixed-shell-no-env sgeuser 'qsub -terse -sync y -v SGE_TASK_ID=9,SGE_FOO=bar,SGE_O_HOME=/x,SGE_CWD_PATH=/y,SGE_STDOUT_PATH=/z,SGE_BINARY_PATH=/b,JOB_ID=77,PE=mine,ENVIRONMENT=mine -b y -shell no -N envsge env > id; cat envsge.o$(head -1 id) | sort' ;;
  Vnoshell) cap job/V-shell-no-env sgeuser 'env -i HOME=/home/sgeuser PATH=/home/sgeuser/venv/bin:/usr/bin:/bin FOO=bar TERM=xterm LOGNAME=sgeuser SHELL=/bin/bash SGE_ROOT=/var/lib/gridengine SGE_CELL=default qsub -terse -sync y -V -b y -shell no -N envV env > id; cat envV.o$(head -1 id) | sort' ;;
  Vshell) cap job/V-shell-yes-env sgeuser 'env -i HOME=/home/sgeuser PATH=/home/sgeuser/venv/bin:/usr/bin:/bin FOO=bar TERM=xterm LOGNAME=sgeuser SHELL=/bin/bash SGE_ROOT=/var/lib/gridengine SGE_CELL=default qsub -terse -sync y -V -b y -N envVs env > id; cat envVs.o$(head -1 id) | sort' ;;
  Vscript) cap job/V-script-env sgeuser 'env -i HOME=/home/sgeuser PATH=/home/sgeuser/venv/bin:/usr/bin:/bin FOO=bar TERM=xterm LOGNAME=sgeuser SHELL=/bin/bash SGE_ROOT=/var/lib/gridengine SGE_CELL=default qsub -terse -sync y -V -N envVscr envscr.sh > id; cat envVscr.o$(head -1 id)' ;;
  Vcwd) cap job/V-cwd-shell-no-env sgeuser 'env -i HOME=/home/sgeuser PATH=/usr/bin:/bin LOGNAME=sgeuser SHELL=/bin/bash SGE_ROOT=/var/lib/gridengine SGE_CELL=default qsub -terse -sync y -cwd -b y -shell no -N envcwd env > id; cat envcwd.o$(head -1 id) | sort' ;;
  vmem2) cap qsub/sync-y-h_vmem sgeuser 'qsub -sync y -l h_vmem=200M vmem.sh' ;;
  vmemgrow) cap qsub/sync-y-h_vmem-shell-grows sgeuser 'qsub -sync y -l h_vmem=100M vmemgrow.sh' ;;
  order) cap qsub/sync-y-array-finish-order sgeuser 'qsub -sync y -t 1-2 order.sh' ;;
  esac
done
rm -rf "$TMP"
