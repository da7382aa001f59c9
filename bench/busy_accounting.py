#!/usr/bin/env python3
"""Writes the accounting file (SGE 8.1.9's accounting(5)) of a busy cell, for
bench/estimates.sh: what gridspool-sim replays to measure start-time estimates.

Synthetic, and says so: USERS users, each with a few kinds of job (a name, a slot count and a
requested h_rt of 1 to 24 hours, and a typical share of that request it really runs, 5-90%);
each run varies around its kind's typical time (log-normal), one in twenty fails within a
minute and one in thirty runs into its limit. Submissions arrive in bursts (a user submits
several jobs of one kind at once) at a rate that offers HOSTS hosts of 8 slots LOAD times
their capacity (default 1.0: busy, with a queue that comes and goes) over DAYS days.
Deterministic (a fixed seed).

Usage: bench/busy_accounting.py JOBS HOSTS DAYS USERS [LOAD] > accounting
"""

import math
import random
import sys

jobs, hosts, days, users = (int(a) for a in sys.argv[1:5])
load = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
rng = random.Random(4242)
requests = [3600, 2 * 3600, 4 * 3600, 8 * 3600, 24 * 3600]
kinds = {}
for u in range(users):
    kinds[u] = []
    for k in range(rng.randint(2, 5)):
        slots = rng.choice([1, 1, 1, 2, 4, 8])
        kinds[u].append(
            (f"{rng.choice(['sim', 'fit', 'post', 'align', 'train'])}{k}", slots,
             rng.choice(requests), rng.uniform(0.05, 0.9))
        )

# Mean slot-seconds of a job, to pace arrivals for LOAD times the cluster's slots.
mean_work = sum(s * r * f for ks in kinds.values() for (_, s, r, f) in ks) / sum(
    len(ks) for ks in kinds.values())
rate = load * hosts * 8 / mean_work  # jobs per second
span = days * 86400
start0 = 1_790_000_000
print("# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# ")
t = 0.0
n = 0
while n < jobs and t < span:
    user = rng.randrange(users)
    name, slots, request, share = rng.choice(kinds[user])
    burst = rng.choice([1, 1, 1, 2, 4, 8])
    t += rng.expovariate(rate / burst)
    for _ in range(burst):
        if n >= jobs:
            break
        n += 1
        r = rng.random()
        if r < 0.05:
            run = rng.randint(1, 60)
        elif r < 0.05 + 1 / 30:
            run = request
        else:
            run = min(request, max(1, int(request * share * math.exp(rng.gauss(0, 0.3)))))
        sub = start0 + int(t)
        pe = f"smp" if slots > 1 else "NONE"
        category = f"-l h_rt={request}" + (f" -pe smp {slots}" if slots > 1 else "")
        fields = [
            "all.q", f"n{rng.randint(1, hosts)}", f"g{user % 5}", f"user{user}", name, str(n),
            "sge", "0", str(sub), str(sub), str(sub + run), "0", "0", str(run),
            f"{run * slots * 0.9:.6f}", f"{run * slots * 0.05:.6f}", "4420.000000",
            "0", "0", "0", "0", "441", "0", "0", "0.000000", "8", "0", "0", "0", "7", "3",
            "NONE", "defaultdepartment", pe, str(slots), "0", f"{run * slots * 0.95:.6f}",
            "0.000000", "0.000000", category, "0.000000", "NONE", "0.000000", "0", "0",
        ]
        print(":".join(fields))
