# Sourced by bench/sim.sh, bench/sim-trace.sh and bench/estimates.sh: sim_cell HOSTS POLICY RULE prints a cell
# configuration of HOSTS hosts of 8 slots (n1…), one queue all.q over them with one parallel
# environment `pe` of allocation rule RULE, and the scheduler POLICY.
# (swf_trace, below, fetches the SWF trace they replay.)
sim_cell() {
    echo "hosts:"
    i=1
    while [ "$i" -le "$1" ]; do echo "  - {name: n$i, slots: 8}"; i=$((i + 1)); done
    echo "hostgroups:"
    printf '  "@all": ['
    i=1
    while [ "$i" -le "$1" ]; do printf 'n%d' "$i"; [ "$i" -lt "$1" ] && printf ', '; i=$((i + 1)); done
    echo "]"
    echo "queues:"
    echo "  - {name: all.q, hostlist: [\"@all\"], slots: 8, pe_list: [pe]}"
    echo "parallel_environments:"
    echo "  - {name: pe, slots: 99999, allocation_rule: $3}"
    echo "scheduler: {policy: $2}"
}

# swf_trace prints the path of tests/easy_mediumWL_smallPF.swf of PyPI's evalys 4.0.7 wheel
# (800 jobs of 1-16 processors over 2.3 hours, from a 16-processor machine), fetched with
# `pip download` from the configured registry into target/bench-data/ the first time.
swf_trace() {
    data=target/bench-data
    trace=$data/easy_mediumWL_smallPF.swf
    if [ ! -f "$trace" ]; then
        mkdir -p "$data"
        python3 -m pip download --quiet --no-deps --dest "$data" evalys==4.0.7 >&2
        python3 -c "import sys, zipfile; open(sys.argv[2], 'wb').write(zipfile.ZipFile(sys.argv[1]).read('tests/easy_mediumWL_smallPF.swf'))" \
            "$data/evalys-4.0.7-py2.py3-none-any.whl" "$trace"
    fi
    echo "$trace"
}
