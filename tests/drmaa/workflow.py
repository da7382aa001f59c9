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
          info.resourceUsage["exit_status"])
    print("usage", " ".join(sorted(info.resourceUsage)))

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
    print("terminated: exited", info.hasExited, "signaled", info.hasSignal,
          "aborted", info.wasAborted, "status", info.exitStatus)
    jt.jobSubmissionState = drmaa.JobSubmissionState.HOLD_STATE
    jid = s.runJob(jt)
    print("held", reach(s, jid, drmaa.JobState.USER_ON_HOLD))
    s.control(jid, drmaa.JobControlAction.TERMINATE)
    try:
        s.wait(jid, 60)
    except Exception as e:  # drmaa-python raises a plain Exception for NO_RUSAGE
        print("deleted while held:", e)
    try:
        s.jobStatus("99999")
    except drmaa.errors.InvalidJobException:
        print("unknown job")
    s.deleteJobTemplate(jt)
