/* A DRMAA 1.0 program as users write them (tests/drmaa.rs): one job and its exit status and
 * usage, a bulk job, hold and release, suspend and resume, termination, a job that ended
 * before it was waited for, and a second session. Prints one line per fact. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "drmaa.h"

static char diag[DRMAA_ERROR_STRING_BUFFER];

#define CHECK(call)                                                                 \
   do {                                                                             \
      int rc_ = (call);                                                             \
      if (rc_ != DRMAA_ERRNO_SUCCESS) {                                             \
         printf("FAILED %s: %d %s: %s\n", #call, rc_, drmaa_strerror(rc_), diag);   \
         return 1;                                                                  \
      }                                                                             \
   } while (0)

static drmaa_job_template_t *shell_job(const char *script) {
   drmaa_job_template_t *jt = NULL;
   const char *argv[] = {"-c", script, NULL};
   if (drmaa_allocate_job_template(&jt, diag, sizeof diag) != DRMAA_ERRNO_SUCCESS) return NULL;
   drmaa_set_attribute(jt, DRMAA_REMOTE_COMMAND, "/bin/sh", diag, sizeof diag);
   drmaa_set_vector_attribute(jt, DRMAA_V_ARGV, argv, diag, sizeof diag);
   drmaa_set_attribute(jt, DRMAA_OUTPUT_PATH, ":/dev/null", diag, sizeof diag);
   drmaa_set_attribute(jt, DRMAA_JOIN_FILES, "y", diag, sizeof diag);
   return jt;
}

static int state_of(const char *id) {
   int ps = -1;
   drmaa_job_ps(id, &ps, diag, sizeof diag);
   return ps;
}

/* Waits (up to 30 s) until the job is in `want`. */
static int reach(const char *id, int want) {
   for (int i = 0; i < 300; i++) {
      if (state_of(id) == want) return 1;
      usleep(100000);
   }
   return 0;
}

int main(void) {
   char id[DRMAA_JOBNAME_BUFFER], out[DRMAA_JOBNAME_BUFFER], value[DRMAA_ATTR_BUFFER];
   int stat = 0, flag = 0, code = 0, n = 0;
   unsigned int major = 0, minor = 0;
   drmaa_attr_values_t *usage = NULL;
   drmaa_job_ids_t *ids = NULL;
   drmaa_job_template_t *jt;

   CHECK(drmaa_init(NULL, diag, sizeof diag));
   printf("init again: %d\n", drmaa_init(NULL, diag, sizeof diag));
   CHECK(drmaa_version(&major, &minor, diag, sizeof diag));
   printf("version %u.%u\n", major, minor);
   CHECK(drmaa_get_DRM_system(value, sizeof value, diag, sizeof diag));
   printf("drm %.9s\n", value);

   /* One job: its exit status and usage. */
   jt = shell_job("exit 3");
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   CHECK(drmaa_wait(id, out, sizeof out, &stat, DRMAA_TIMEOUT_WAIT_FOREVER, &usage, diag, sizeof diag));
   drmaa_wifexited(&flag, stat, diag, sizeof diag);
   drmaa_wexitstatus(&code, stat, diag, sizeof diag);
   printf("job %s: exited %d status %d\n", strcmp(id, out) == 0 ? "same id" : out, flag, code);
   drmaa_get_num_attr_values(usage, &n);
   while (drmaa_get_next_attr_value(usage, value, sizeof value) == DRMAA_ERRNO_SUCCESS)
      if (strncmp(value, "exit_status=", 12) == 0) printf("rusage %s of %s\n", value, n > 10 ? "many" : "few");
   drmaa_release_attr_values(usage);
   drmaa_delete_job_template(jt, diag, sizeof diag);

   /* A bulk job of three tasks, each waited for. */
   jt = shell_job("exit $SGE_TASK_ID");
   CHECK(drmaa_run_bulk_jobs(&ids, jt, 1, 5, 2, diag, sizeof diag));
   drmaa_get_num_job_ids(ids, &n);
   printf("bulk: %d tasks\n", n);
   drmaa_release_job_ids(ids);
   int total = 0;
   for (int i = 0; i < 3; i++) {
      CHECK(drmaa_wait(DRMAA_JOB_IDS_SESSION_ANY, out, sizeof out, &stat, 60, NULL, diag, sizeof diag));
      drmaa_wexitstatus(&code, stat, diag, sizeof diag);
      total += code;
   }
   printf("bulk: exit statuses add up to %d\n", total);
   printf("nothing left: %d\n", drmaa_wait(DRMAA_JOB_IDS_SESSION_ANY, out, sizeof out, &stat, 0, NULL, diag, sizeof diag));
   drmaa_delete_job_template(jt, diag, sizeof diag);

   /* Hold and release. */
   jt = shell_job("exit 0");
   drmaa_set_attribute(jt, DRMAA_JS_STATE, DRMAA_SUBMISSION_STATE_HOLD, diag, sizeof diag);
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   printf("held: %d\n", reach(id, DRMAA_PS_USER_ON_HOLD));
   CHECK(drmaa_control(id, DRMAA_CONTROL_RELEASE, diag, sizeof diag));
   CHECK(drmaa_synchronize((const char *[]){id, NULL}, 60, 0, diag, sizeof diag));
   printf("released and done: %d\n", state_of(id) == DRMAA_PS_DONE);
   drmaa_delete_job_template(jt, diag, sizeof diag);

   /* Suspend, resume, terminate. */
   jt = shell_job("sleep 300");
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   printf("running: %d\n", reach(id, DRMAA_PS_RUNNING));
   CHECK(drmaa_control(id, DRMAA_CONTROL_SUSPEND, diag, sizeof diag));
   printf("suspended: %d\n", reach(id, DRMAA_PS_USER_SUSPENDED));
   CHECK(drmaa_control(id, DRMAA_CONTROL_RESUME, diag, sizeof diag));
   printf("resumed: %d\n", reach(id, DRMAA_PS_RUNNING));
   CHECK(drmaa_control(id, DRMAA_CONTROL_TERMINATE, diag, sizeof diag));
   printf("terminated: %d\n", reach(id, DRMAA_PS_FAILED));
   CHECK(drmaa_wait(id, out, sizeof out, &stat, 60, NULL, diag, sizeof diag));
   drmaa_wifsignaled(&flag, stat, diag, sizeof diag);
   drmaa_wifaborted(&code, stat, diag, sizeof diag);
   /* As Grid Engine's library says of a job deleted while it ran: aborted, not signaled. */
   printf("terminated: signaled %d aborted %d\n", flag, code);
   drmaa_delete_job_template(jt, diag, sizeof diag);

   /* A job that ended before the wait. */
   jt = shell_job("exit 7");
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   reach(id, DRMAA_PS_DONE);
   CHECK(drmaa_wait(id, out, sizeof out, &stat, DRMAA_TIMEOUT_NO_WAIT, NULL, diag, sizeof diag));
   drmaa_wexitstatus(&code, stat, diag, sizeof diag);
   printf("ended before the wait: status %d\n", code);
   drmaa_delete_job_template(jt, diag, sizeof diag);

   /* A second session does not know the first one's jobs. */
   CHECK(drmaa_exit(diag, sizeof diag));
   printf("exit again: %d\n", drmaa_exit(diag, sizeof diag));
   CHECK(drmaa_init(NULL, diag, sizeof diag));
   printf("old job in a new session: %d\n",
          drmaa_wait(id, out, sizeof out, &stat, 0, NULL, diag, sizeof diag));
   CHECK(drmaa_exit(diag, sizeof diag));
   return 0;
}
