#!/bin/bash
# Records the issue-25 resource quota cases (qconf -?rqs*, qquota, the pending reason of a job an
# RQS holds back) on the oracle, in shared/oracle/sge-capture.sh's format. Every rule set it makes
# is named rqs25_* and deleted before it ends; schedd_job_info is set true for the pending reason
# and restored.
# Run as root, under the oracle's lock: flock /work/sge-oracle.lock record-issue25-rqs.sh OUTDIR
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
PHASES=" $* "  # admin editor run (all when none given)
[ -z "$*" ] && PHASES=" admin editor run "
phase() { case $PHASES in *" $1 "*) return 0 ;; esac; return 1; }
TMP=$(mktemp -d /tmp/issue25-rqs-cap.XXXXXX)
F=/tmp/rqs25
rm -rf $F; mkdir -p $F; chmod 755 $F
. "$(dirname "$0")/capture-lib.sh"
CONTEXT="config as left by sge-setup.sh (all.q on @allhosts = vm, 2 slots), no jobs, no RQS; recorded 2026-11-27 for issue 25"
cat > $F/a.rqs <<'R'
{
   name         rqs25_a
   description  "capture a"
   enabled      false
   limit        users {sgeuser} to slots=1
}
R
cat > $F/b.rqs <<'R'
{
   name         rqs25_b
   description  NONE
   enabled      FALSE
   limit        name perhost users * hosts {*} to slots=2
   limit        users !sgeuser2,@arusers projects * pes !* queues all.q,!foo.q \
                hosts @allhosts to slots=1,h_vmem=2G
   limit        projects {*} to slots=$num_proc*2
}
R
cat > $F/two.rqs <<'R'
{
   name rqs25_c
   limit to slots=3
}
{
   name rqs25_d
   enabled true
   description "two words"
   limit users sgeuser to slots=4
}
R
cat > $F/a2.rqs <<'R'
{
   name         rqs25_a
   description  "capture a, modified"
   enabled      false
   limit        users {sgeuser} to slots=5
}
R
printf '{\n   name rqs25_bad\n   limit users sgeuser\n}\n' > $F/noto.rqs
printf '{\n   name rqs25_bad\n   limit to nosuch=1\n}\n' > $F/nosuchcomplex.rqs
printf '{\n   name rqs25_bad\n   enabled maybe\n   limit to slots=1\n}\n' > $F/badbool.rqs
printf '{\n   name rqs25_bad\n   enabled true\n}\n' > $F/nolimit.rqs
printf '{\n   name rqs25_bad\n   limit to slots=abc\n}\n' > $F/badvalue.rqs
printf '{\n   name rqs25_bad\n   limit names x to slots=1\n}\n' > $F/badword.rqs
printf '{\n   name rqs25_bad\n   limit name r1 to slots=1\n   limit name r1 to slots=2\n}\n' > $F/duprule.rqs
printf '{\n   name rqs25_bad\n   limit to slots=$num_proc*2\n}\n' > $F/dynglobal.rqs
printf 'name rqs25_bad\nlimit to slots=1\n' > $F/nobrace.rqs
grep -v num_proc $F/b.rqs | sed 's/rqs25_b$/rqs25_b2/' > $F/b2.rqs
printf '{\n   name rqs25_dyn\n   limit hosts {*} to slots=$num_proc*2,h_vmem=1G\n}\n' > $F/dynhost.rqs
printf '#!/bin/sh\nsed -i s/slots=1/slots=7/ "$1"\n' > $F/ed-sed.sh
printf '#!/bin/sh\nsed -i "s/limit .*/limit users {sgeuser2} to slots=2/" "$1"\n' > $F/ed-new.sh
printf '#!/bin/sh\nsed -i "s/enabled .*/enabled bogus/" "$1"\n' > $F/ed-bad.sh

chmod 644 $F/*
chmod 755 $F/ed-*.sh
if phase admin; then
cap qconf/srqsl-none root 'qconf -srqsl'
cap qconf/srqs-none root 'qconf -srqs'
cap qconf/srqs-nosuch root 'qconf -srqs rqs25_nosuch'
cap qconf/Arqs-by-user sgeuser "qconf -Arqs $F/a.rqs"
cap qconf/Arqs root "qconf -Arqs $F/a.rqs"
cap qconf/Arqs-exists root "qconf -Arqs $F/a.rqs"
cap qconf/Arqs-b root "qconf -Arqs $F/b.rqs"
cap qconf/Arqs-two root "qconf -Arqs $F/two.rqs"
cap qconf/Arqs-nofile root "qconf -Arqs $F/nofile.rqs"
for b in noto nosuchcomplex badbool nolimit badvalue badword duprule dynglobal nobrace; do
  cap qconf/Arqs-$b root "qconf -Arqs $F/$b.rqs"
  qconf -drqs rqs25_bad >/dev/null 2>&1
done
cap qconf/Arqs-b2 root "qconf -Arqs $F/b2.rqs"
cap qconf/Arqs-dynhost root "qconf -Arqs $F/dynhost.rqs"
cap qconf/srqsl root 'qconf -srqsl'
cap qconf/srqs-a root 'qconf -srqs rqs25_a'
cap qconf/srqs-b root 'qconf -srqs rqs25_b'
cap qconf/srqs-all root 'qconf -srqs'
cap qconf/srqs-list root 'qconf -srqs rqs25_c,rqs25_a'
cap qconf/srqs-list-nosuch root 'qconf -srqs rqs25_a,rqs25_nosuch'
cap qconf/srqs-by-user sgeuser 'qconf -srqs rqs25_a'
fi
if phase editor; then
qconf -Arqs $F/a.rqs >/dev/null 2>&1
fi
if phase admin; then
cap qconf/Mrqs root "qconf -Mrqs $F/a2.rqs"
cap qconf/Mrqs-name root "qconf -Mrqs $F/a.rqs rqs25_a"
cap qconf/Mrqs-othername root "qconf -Mrqs $F/a.rqs rqs25_c"
cap qconf/Mrqs-nosuch root "qconf -Mrqs $F/nolimit.rqs"
cap qconf/Mrqs-nosuch2 root "qconf -Mrqs $F/duprule.rqs rqs25_bad"
fi
if phase editor; then
cap qconf/mrqs-sed root "EDITOR=$F/ed-sed.sh qconf -mrqs rqs25_a"
cap qconf/srqs-a-after-mrqs root 'qconf -srqs rqs25_a'
cap qconf/mrqs-bad root "EDITOR=$F/ed-bad.sh qconf -mrqs rqs25_a"
cap qconf/mrqs-all root "EDITOR=$F/ed-sed.sh qconf -mrqs"
cap qconf/arqs-new root "EDITOR=$F/ed-new.sh qconf -arqs rqs25_new"
cap qconf/srqs-new root 'qconf -srqs rqs25_new'
cap qconf/arqs-new-noname root "EDITOR=$F/ed-new.sh qconf -arqs"
cap qconf/srqs-template root 'qconf -srqs template'
cap qconf/drqs-new root 'qconf -drqs rqs25_new'
qconf -drqs template >/dev/null 2>&1
cap qconf/mrqs-unchanged root "EDITOR=true qconf -mrqs rqs25_a"
cap qconf/mrqs-nosuch root "EDITOR=true qconf -mrqs rqs25_nosuch"
cap qconf/arqs-template root "EDITOR=cat qconf -arqs rqs25_tpl"
cap qconf/srqs-tpl root 'qconf -srqs rqs25_tpl'
cap qconf/arqs-exists root "EDITOR=true qconf -arqs rqs25_a"
cap qconf/arqs-noname root "EDITOR=true qconf -arqs"
fi
if phase admin; then
cap qconf/srqsl-after root 'qconf -srqsl'
cap qconf/drqs-nosuch root 'qconf -drqs rqs25_nosuch'
cap qconf/drqs-by-user sgeuser 'qconf -drqs rqs25_a'
cap qconf/drqs root 'qconf -drqs rqs25_a,rqs25_b'
fi
for n in rqs25_a rqs25_c rqs25_d rqs25_tpl template; do qconf -drqs $n >/dev/null 2>&1; done
if phase admin; then
cap qquota/help sgeuser 'qquota -help'
cap qquota/none sgeuser 'qquota'
cap qquota/bad-option sgeuser 'qquota -zzz'
fi
if phase run; then
if qconf -sq all.q | grep -Eq '^(x?user_lists|x?projects|calendar) +[^ N]'; then
  echo "all.q is fenced by another helper's objects; run phase not recorded" >&2
  qconf -sq all.q | grep -E '^(x?user_lists|x?projects|calendar)' >&2
  exit 1
fi
# Running jobs under a limit, with the scheduler's reasons on.
qconf -ssconf > $TMP/sconf
sed 's/^schedd_job_info .*/schedd_job_info                   true/' $TMP/sconf > $F/sconf-true
qconf -Msconf $F/sconf-true >/dev/null
cat > $F/run.rqs <<'R'
{
   name         rqs25_user
   description  NONE
   enabled      TRUE
   limit        users {sgeuser} to slots=1
}
{
   name         rqs25_host
   description  NONE
   enabled      TRUE
   limit        name perhost users sgeuser2 queues all.q hosts {*} to slots=1
   limit        users * to slots=10
}
R
chmod 644 $F/run.rqs
qconf -Arqs $F/run.rqs >/dev/null
qconf -mattr queue slots 6 all.q >/dev/null
for i in 1 2 3; do runuser -l sgeuser -c 'qsub -b y -o /dev/null -j y sleep 300' >/dev/null; done
for i in 1 2; do runuser -l sgeuser2 -c 'qsub -b y -o /dev/null -j y sleep 300' >/dev/null; done
for i in $(seq 1 60); do [ "$(qstat -s r -u '*' | tail -n +3 | wc -l)" = 2 ] && break; sleep 1; done
sleep 4
CONTEXT="rule sets rqs25_user (users {sgeuser} to slots=1) and rqs25_host (name perhost users sgeuser2 queues all.q hosts {*} to slots=1; users * to slots=10) enabled; 3 jobs of sgeuser and 2 of sgeuser2 (qsub -b y sleep 300), one of each running; schedd_job_info true; all.q slots 6 (qconf -mattr queue slots 6 all.q); recorded 2026-11-27 for issue 25"
cap qconf/srqs-run root 'qconf -srqs'
cap qstat/u-all-rqs sgeuser "qstat -u '*'"
cap qquota/run sgeuser 'qquota'
cap qquota/run-sgeuser2 sgeuser2 'qquota'
cap qquota/run-root root 'qquota'
cap qquota/run-u-all sgeuser "qquota -u '*'"
cap qquota/run-u-sgeuser2 sgeuser "qquota -u sgeuser2"
cap qquota/run-xml sgeuser "qquota -u '*' -xml"
cap qquota/run-l-slots sgeuser "qquota -u '*' -l slots"
cap qquota/run-l-h_vmem sgeuser "qquota -u '*' -l h_vmem"
cap qquota/run-q sgeuser "qquota -u '*' -q all.q"
cap qquota/run-q-other sgeuser "qquota -u '*' -q other.q"
cap qquota/run-h sgeuser "qquota -u '*' -h vm"
cap qquota/run-h-group sgeuser "qquota -u '*' -h @allhosts"
cap qquota/run-P sgeuser "qquota -u '*' -P nosuchproject"
cap qquota/run-pe sgeuser "qquota -u '*' -pe smp"
pend1=$(qstat -s p -u sgeuser | awk 'NR>2{print $1; exit}')
pend2=$(qstat -s p -u sgeuser2 | awk 'NR>2{print $1; exit}')
cap qstat/j-rqs-user sgeuser "qstat -j $pend1"
cap qstat/j-rqs-host sgeuser2 "qstat -j $pend2"
qdel -u sgeuser,sgeuser2 '*' >/dev/null 2>&1
for i in $(seq 1 60); do [ -z "$(qstat -u '*')" ] && break; sleep 1; done
qconf -drqs rqs25_user,rqs25_host >/dev/null
qconf -mattr queue slots 2 all.q >/dev/null
qconf -sq all.q | grep '^slots'
qconf -Msconf $TMP/sconf >/dev/null
fi
qconf -ssconf | grep schedd_job_info
qconf -srqsl
rm -rf "$TMP" $F
