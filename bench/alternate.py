#!/usr/bin/env python3
"""bench/alternate.py N CMD... [-- CMD...]: runs the commands in turn, N rounds (so that a
change of load hits them alike), each from its own fork+exec with stdout to /dev/null, and
prints per command, before the command, the best, 10th percentile and median wall time and the median CPU time
(user + system, from wait4) in ms. Used by bench/startup.sh."""
import os
import statistics
import sys
import time


def main():
    n = int(sys.argv[1])
    commands, current = [], []
    for word in sys.argv[2:]:
        if word == "--":
            commands.append(current)
            current = []
        else:
            current.append(word)
    commands.append(current)
    wall = [[] for _ in commands]
    cpu = [[] for _ in commands]
    devnull = os.open("/dev/null", os.O_WRONLY)
    for _ in range(n):
        for i, argv in enumerate(commands):
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0], argv, os.environ,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
            _, status, usage = os.wait4(pid, 0)
            wall[i].append((time.perf_counter() - start) * 1000)
            cpu[i].append((usage.ru_utime + usage.ru_stime) * 1000)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{' '.join(argv)} failed")
    for i, argv in enumerate(commands):
        w = sorted(wall[i])
        print(f"best {w[0]:6.2f}  p10 {w[len(w) // 10]:6.2f}  median {statistics.median(w):6.2f} ms wall; "
              f"median CPU {statistics.median(cpu[i]):5.2f} ms: {' '.join(argv)}")

main()
