#!/bin/bash
# Records the issue-25 calendar cases (qconf -acal -Acal -mcal -Mcal -scal -scall -dcal, their
# refusals, a queue's calendar attribute, and the states C and D a calendar gives a queue
# instance in qstat, qselect and qhost) on the oracle, in shared/oracle/sge-capture.sh's format.
# Run as root under the oracle's lock: record-issue25-cal.sh OUTDIR. Every object it makes is
# named cal25*, and is deleted before it ends.
set -u
export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
OUT=$1; shift
TMP=$(mktemp -d /tmp/issue25-cal.XXXXXX)
chmod 755 "$TMP"
. "$(dirname "$0")/capture-lib.sh"
CONTEXT="config as left by sge-setup.sh (all.q, 2 slots), no calendars; recorded 2026-11-27 for issue 25"
calfile() {  # calfile NAME YEAR WEEK: a calendar_conf(5) file in $TMP/NAME
    printf 'calendar_name    %s\nyear             %s\nweek             %s\n' "$1" "$2" "$3" > "$TMP/$1"
}
cap qconf/scall-none root 'qconf -scall'
cap qconf/scal-nosuch root 'qconf -scal cal25_nosuch'
calfile cal25_night '1.1.1999,6.1.1999,28.3.1999,30.3.1999-31.3.1999=on' 'mon-fri=6-20'
cap qconf/Acal root "qconf -Acal $TMP/cal25_night"
cap qconf/Acal-again root "qconf -Acal $TMP/cal25_night"
cap qconf/scal root 'qconf -scal cal25_night'
calfile cal25_night 'NONE' 'mon-fri=20-6=suspended sat-sun=suspended'
cap qconf/Mcal root "qconf -Mcal $TMP/cal25_night"
cap qconf/scal-after-Mcal root 'qconf -scal cal25_night'
calfile cal25_other 'NONE' 'NONE'
cap qconf/Mcal-nosuch root "qconf -Mcal $TMP/cal25_other"
cap qconf/Acal-nofile root "qconf -Acal $TMP/nosuchfile"
cap qconf/Acal-by-user sgeuser "qconf -Acal $TMP/cal25_other"
# -acal's template, kept by an editor that copies it and changes nothing.
printf '#!/bin/sh\ncp "$1" %s/template\n' "$TMP" > "$TMP/copy-editor"
printf '#!/bin/sh\nsed -i "s/^week .*/week mon=off/" "$1"\n' > "$TMP/week-editor"
printf '#!/bin/sh\nsed -i "s/^week .*/week tue=off/" "$1"\n' > "$TMP/week2-editor"
chmod 755 "$TMP"/*-editor
cap qconf/acal root "EDITOR=$TMP/copy-editor qconf -acal cal25_tmpl"
cp "$TMP/template" "$OUT/qconf/acal-template.txt"
cap qconf/acal-edited root "EDITOR=$TMP/week-editor qconf -acal cal25_tmpl"
cap qconf/scal-template root 'qconf -scal cal25_tmpl'
cap qconf/acal-again root "EDITOR=$TMP/week-editor qconf -acal cal25_tmpl"
cap qconf/mcal-nosuch root 'EDITOR=true qconf -mcal cal25_nosuch'
cap qconf/mcal-unchanged root 'EDITOR=true qconf -mcal cal25_tmpl'
cap qconf/mcal root "EDITOR=$TMP/week2-editor qconf -mcal cal25_tmpl"
cap qconf/scal-after-mcal root 'qconf -scal cal25_tmpl'
cap qconf/scall root 'qconf -scall'
cap qconf/scal-two root 'qconf -scal cal25_tmpl,cal25_night'
# What does not parse, one case each.
n=0
for pair in \
    'year|32.1.2020' 'year|1.13.2020' 'year|1.1.2040' 'year|1.1' 'year|2.1.2020-1.1.2020' \
    'year|1.1.2020=on=off' 'year|1.1.2020=bogus' 'year|1.1.2020=25-26' 'year|1.1.2020=10-10' \
    'year|1.jan.2020=10:61-11' 'year|1.1.2020 x' 'year|=on' \
    'week|mon-mon' 'week|funday' 'week|mon=6' 'week|mon=bogus' 'week|24:30-1' 'week|mon-fri=6-20=on=x' \
    'week|mon,' 'week|on off' 'week|7-' ; do
    n=$((n+1)); field=${pair%%|*}; value=${pair#*|}
    if [ "$field" = year ]; then calfile cal25_bad "$value" NONE; else calfile cal25_bad NONE "$value"; fi
    cap qconf/Acal-bad-$field-$n root "qconf -Acal $TMP/cal25_bad"
    qconf -dcal cal25_bad >/dev/null 2>&1
done
# Forms that do parse: shown back as given?
calfile cal25_forms '1.jan.2020,3.FEB.2021-5.3.2021=8:30-17:45:10=suspended' 'tue-mon=12-11 Sat=on 9-17 off'
cap qconf/Acal-forms root "qconf -Acal $TMP/cal25_forms"
cap qconf/scal-forms root 'qconf -scal cal25_forms'
qconf -dcal cal25_forms >/dev/null 2>&1
# A queue with a calendar.
qconf -sq all.q | sed -e 's/^qname .*/qname cal25.q/' -e 's/^slots .*/slots 1/' > "$TMP/cal25.q"
qconf -Aq "$TMP/cal25.q" >/dev/null
cap qconf/mattr-calendar-nosuch root 'qconf -mattr queue calendar cal25_nosuch cal25.q'
calfile cal25_off NONE off
calfile cal25_susp NONE suspended
qconf -Acal "$TMP/cal25_off" >/dev/null; qconf -Acal "$TMP/cal25_susp" >/dev/null
cap qconf/mattr-calendar root 'qconf -mattr queue calendar cal25_off cal25.q'
cap qconf/sq-calendar root 'qconf -sq cal25.q'
cap qconf/dcal-in-use root 'qconf -dcal cal25_off'
sleep 3
CONTEXT="queue cal25.q (all.q's copy, 1 slot) with calendar cal25_off (week off); recorded 2026-11-27 for issue 25"
cap qstat/f-calendar-disabled sgeuser 'qstat -f'
cap qstat/f-qs-D sgeuser 'qstat -f -qs D'
cap qselect/qs-D sgeuser 'qselect -qs D'
cap qhost/q-calendar-disabled sgeuser 'qhost -q'
cap qstat/qs-D-explain sgeuser 'qstat -f -explain a'
cap qstat/g-c-calendar-disabled sgeuser 'qstat -g c'
qmod -d cal25.q >/dev/null
CONTEXT="$CONTEXT, then qmod -d cal25.q"
cap qstat/f-calendar-and-qmod-disabled sgeuser 'qstat -f'
cap qstat/g-c-calendar-and-qmod-disabled sgeuser 'qstat -g c'
qmod -e cal25.q >/dev/null
# A job running in cal25.q, then the calendar suspends the queue.
qconf -mattr queue calendar NONE cal25.q >/dev/null
runuser -l sgeuser -c 'qsub -q cal25.q -b y -o /dev/null -j y sleep 300' > "$TMP/sub"
id=$(sed -n 's/^Your job \([0-9]*\).*/\1/p' "$TMP/sub")
for i in $(seq 1 60); do qstat -s r -u '*' | grep -q "^ *$id " && break; sleep 1; done
qconf -mattr queue calendar cal25_susp cal25.q >/dev/null
sleep 4
CONTEXT="queue cal25.q (1 slot) with calendar cal25_susp (week suspended), job $id (sleep 300) of sgeuser was running there; recorded 2026-11-27 for issue 25"
cap qstat/f-calendar-suspended sgeuser 'qstat -f'
cap qstat/f-qs-C sgeuser 'qstat -f -qs C'
cap qselect/qs-C sgeuser 'qselect -qs C'
cap qhost/q-calendar-suspended sgeuser 'qhost -q'
cap qstat/g-c-calendar-suspended sgeuser 'qstat -g c'
cap qstat/j-calendar-suspended sgeuser "qstat -j $id"
ps -o pid,stat,cmd -C sleep > "$OUT/qstat/f-calendar-suspended-ps.txt"
qconf -mattr queue calendar NONE cal25.q >/dev/null
sleep 4
CONTEXT="as qstat/f-calendar-suspended, then the calendar removed from cal25.q; recorded 2026-11-27 for issue 25"
cap qstat/f-calendar-resumed sgeuser 'qstat -f'
qdel "$id" >/dev/null
sleep 2
qconf -dq cal25.q >/dev/null
cap qconf/dcal root 'qconf -dcal cal25_off'
cap qconf/dcal-nosuch root 'qconf -dcal cal25_nosuch'
cap qconf/dcal-by-user sgeuser 'qconf -dcal cal25_susp'
for c in cal25_susp cal25_night cal25_tmpl cal25_off cal25_bad cal25_forms; do qconf -dcal $c >/dev/null 2>&1; done
cap qconf/scall-after root 'qconf -scall'
rm -rf "$TMP"
