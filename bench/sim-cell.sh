# Sourced by bench/sim.sh and bench/sim-trace.sh: sim_cell HOSTS POLICY RULE prints a cell
# configuration of HOSTS hosts of 8 slots (n1…), one queue all.q over them with one parallel
# environment `pe` of allocation rule RULE, and the scheduler POLICY.
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
