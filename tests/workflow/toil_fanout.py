"""A small Toil workflow for gridspool's workflow-tool test: a root job fans out to three
children that each write a number to the job store, and a follow-on sums them and writes the
sum to the file named by the last argument. Run by tests/workflow.rs with
`--batchSystem grid_engine`, so every job goes through qsub -V, qstat, qstat -j and qacct."""

import sys

from toil.common import Toil
from toil.job import Job


def square(job, n):
    return n * n


def total(job, values, out):
    with open(out, "w") as f:
        f.write(f"{sum(values)}\n")
    return sum(values)


def fan_out(job, out):
    children = [job.addChildJobFn(square, n, cores=1, memory="64M", disk="1M") for n in (1, 2, 3)]
    follow = job.addFollowOnJobFn(
        total, [c.rv() for c in children], out, cores=1, memory="64M", disk="1M"
    )
    return follow.rv()


if __name__ == "__main__":
    out = sys.argv.pop()
    parser = Job.Runner.getDefaultArgumentParser()
    options = parser.parse_args()
    with Toil(options) as toil:
        result = toil.start(Job.wrapJobFn(fan_out, out, cores=1, memory="64M", disk="1M"))
    print(f"result {result}")
