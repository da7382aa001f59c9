"""A drmaa-python workflow (tests/drmaa.rs): single jobs, a bulk job, synchronize, wait,
control and resource usage, printed one fact per line."""
import time

import drmaa


def reach(s, jid, state):
    for _ in range(300):
        if s.jobStatus(jid) == state:
            return True
        time.sleep(0.1)
    return False


with drmaa.Session() as s:
    print("contact", s.contact.startswith("session="))
    print("drm", str(s.drmsInfo).split()[0])
    print("version", s.version.major, s.version.minor)
    jt = s.createJobTemplate()
    jt.remoteCommand = "/bin/sh"
    jt.args = ["-c", "echo $GREETING; exit 4"]
    jt.jobEnvironment = {"GREETING": "hello from drmaa"}
    jt.workingDirectory = drmaa.JobTemplate.HOME_DIRECTORY
    jt.outputPath = ":" + drmaa.JobTemplate.HOME_DIRECTORY + "/single.out"
    jt.joinFiles = True
    jid = s.runJob(jt)
    info = s.wait(jid, drmaa.Session.TIMEOUT_WAIT_FOREVER)
    print("single", info.hasExited, info.exitStatus, info.jobId == jid,
          float(info.resourceUsage["cpu"]) >= 0, info.resourceUsage["exit_status"])

    jt.args = ["-c", "exit $SGE_TASK_ID"]
    jt.outputPath = ":/dev/null"
    ids = s.runBulkJobs(jt, 1, 3, 1)
    print("bulk", len(ids), ids[0].endswith(".1"))
    s.synchronize(ids, drmaa.Session.TIMEOUT_WAIT_FOREVER, False)
    print("bulk states", sorted(set(s.jobStatus(i) for i in ids)))
    print("bulk statuses", sorted(s.wait(i).exitStatus for i in ids))

    jt.args = ["-c", "sleep 300"]
    jid = s.runJob(jt)
    print("running", reach(s, jid, drmaa.JobState.RUNNING))
    s.control(jid, drmaa.JobControlAction.SUSPEND)
    print("suspended", reach(s, jid, drmaa.JobState.USER_SUSPENDED))
    s.control(jid, drmaa.JobControlAction.RESUME)
    print("resumed", reach(s, jid, drmaa.JobState.RUNNING))
    s.control(jid, drmaa.JobControlAction.TERMINATE)
    info = s.wait(jid, 60)
    print("terminated", info.hasSignal, info.terminatedSignal)
    try:
        s.wait(drmaa.Session.JOB_IDS_SESSION_ANY, drmaa.Session.TIMEOUT_NO_WAIT)
    except drmaa.errors.InvalidJobException:
        print("nothing left")
    s.deleteJobTemplate(jt)
