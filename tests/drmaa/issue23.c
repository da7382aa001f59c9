/* DRMAA behaviours of Grid Engine's library that clients rely on (issue 23, tests/drmaa.rs),
 * one scenario per run, named by the first argument; prints one line per fact.
 *
 *   race            a job polled with drmaa_job_ps until it ends, eight times: never "does not
 *                   exist" on the way
 *   commas          job environment values with commas arrive whole
 *   eqw             a job that cannot start (Eqw) is waited for until it is deleted
 *   signal          a job killed by a signal after it started is DONE, and signaled
 *   bulk            a bulk job's bare id names no job
 *   poll            a running job's state asked 200 times
 *   rejoin1         submits a long job and prints the session's contact and the job's id
 *   rejoin2 C ID    takes up session C: its job ID is its own, "terminate all" kills it */
#include <stdio.h>
#include <stdlib.h>
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

static const char *ps_name(int ps) {
   switch (ps) {
   case DRMAA_PS_UNDETERMINED: return "UNDETERMINED";
   case DRMAA_PS_QUEUED_ACTIVE: return "QUEUED_ACTIVE";
   case DRMAA_PS_SYSTEM_ON_HOLD: return "SYSTEM_ON_HOLD";
   case DRMAA_PS_USER_ON_HOLD: return "USER_ON_HOLD";
   case DRMAA_PS_USER_SYSTEM_ON_HOLD: return "USER_SYSTEM_ON_HOLD";
   case DRMAA_PS_RUNNING: return "RUNNING";
   case DRMAA_PS_SYSTEM_SUSPENDED: return "SYSTEM_SUSPENDED";
   case DRMAA_PS_USER_SUSPENDED: return "USER_SUSPENDED";
   case DRMAA_PS_DONE: return "DONE";
   case DRMAA_PS_FAILED: return "FAILED";
   default: return "?";
   }
}

/* drmaa_job_ps's state name, or its error's number. */
static const char *state_of(const char *id) {
   static char text[64];
   int ps = -1;
   int rc = drmaa_job_ps(id, &ps, diag, sizeof diag);
   if (rc != DRMAA_ERRNO_SUCCESS) {
      snprintf(text, sizeof text, "error %d", rc);
      return text;
   }
   return ps_name(ps);
}

/* Waits (up to 60 s) until the job is in `want`. */
static int reach(const char *id, const char *want) {
   for (int i = 0; i < 600; i++) {
      if (strcmp(state_of(id), want) == 0) return 1;
      usleep(100000);
   }
   return 0;
}

static int race(void) {
   char id[DRMAA_JOBNAME_BUFFER];
   int invalid = 0, ended = 0;
   drmaa_job_template_t *jt = shell_job("exit 0");
   for (int round = 0; round < 8; round++) {
      CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
      for (;;) {
         int ps = -1;
         int rc = drmaa_job_ps(id, &ps, diag, sizeof diag);
         if (rc == DRMAA_ERRNO_INVALID_JOB) {
            invalid++;
            break;
         }
         if (rc != DRMAA_ERRNO_SUCCESS) {
            printf("job_ps: %d %s\n", rc, diag);
            return 1;
         }
         if (ps == DRMAA_PS_DONE || ps == DRMAA_PS_FAILED) {
            ended++;
            break;
         }
      }
   }
   printf("race: ended %d, does not exist %d\n", ended, invalid);
   return 0;
}

static int commas(void) {
   char id[DRMAA_JOBNAME_BUFFER], out[DRMAA_JOBNAME_BUFFER], line[256] = "";
   int stat = 0;
   const char *env[] = {"CUDA_VISIBLE_DEVICES=0,1", "B=p,Z=q", "PLAIN=x", NULL};
   drmaa_job_template_t *jt =
      shell_job("printf '%s|%s|%s|%s\\n' \"$CUDA_VISIBLE_DEVICES\" \"$B\" \"${Z-unset}\" \"$PLAIN\"");
   CHECK(drmaa_set_vector_attribute(jt, DRMAA_V_ENV, env, diag, sizeof diag));
   CHECK(drmaa_set_attribute(jt, DRMAA_OUTPUT_PATH, ":" DRMAA_PLACEHOLDER_HD "/commas.out", diag,
                             sizeof diag));
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   CHECK(drmaa_wait(id, out, sizeof out, &stat, DRMAA_TIMEOUT_WAIT_FOREVER, NULL, diag,
                    sizeof diag));
   char path[1024];
   snprintf(path, sizeof path, "%s/commas.out", getenv("HOME"));
   FILE *f = fopen(path, "r");
   if (f != NULL) {
      if (fgets(line, sizeof line, f) == NULL) line[0] = 0;
      fclose(f);
   }
   printf("environment: %s", line);
   return 0;
}

static int eqw(void) {
   char id[DRMAA_JOBNAME_BUFFER], out[DRMAA_JOBNAME_BUFFER];
   int stat = 0;
   drmaa_job_template_t *jt = shell_job("exit 0");
   CHECK(drmaa_set_attribute(jt, DRMAA_WD, "/nonexistent/directory", diag, sizeof diag));
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   printf("in error state: %d\n", reach(id, "FAILED"));
   printf("wait 2 s: %d\n",
          drmaa_wait(id, out, sizeof out, &stat, 2, NULL, diag, sizeof diag));
   const char *ids[] = {id, NULL};
   printf("synchronize 2 s: %d\n", drmaa_synchronize(ids, 2, 0, diag, sizeof diag));
   printf("still %s\n", state_of(id));
   CHECK(drmaa_control(id, DRMAA_CONTROL_TERMINATE, diag, sizeof diag));
   int rc = drmaa_wait(id, out, sizeof out, &stat, 60, NULL, diag, sizeof diag);
   int aborted = 0;
   drmaa_wifaborted(&aborted, stat, NULL, 0);
   printf("deleted: wait %s, aborted %d\n", rc == DRMAA_ERRNO_EXIT_TIMEOUT ? "timed out" : "returned",
          aborted);
   return 0;
}

static int signal_(void) {
   char id[DRMAA_JOBNAME_BUFFER], out[DRMAA_JOBNAME_BUFFER], sig[64] = "";
   int stat = 0, signaled = 0, aborted = 0;
   drmaa_job_template_t *jt = shell_job("kill -KILL $$");
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   const char *ids[] = {id, NULL};
   CHECK(drmaa_synchronize(ids, DRMAA_TIMEOUT_WAIT_FOREVER, 0, diag, sizeof diag));
   printf("killed: %s\n", state_of(id));
   CHECK(drmaa_wait(id, out, sizeof out, &stat, 60, NULL, diag, sizeof diag));
   drmaa_wifsignaled(&signaled, stat, NULL, 0);
   drmaa_wifaborted(&aborted, stat, NULL, 0);
   drmaa_wtermsig(sig, sizeof sig, stat, NULL, 0);
   printf("signaled %d %s, aborted %d\n", signaled, sig, aborted);
   return 0;
}

static int bulk(void) {
   char first[DRMAA_JOBNAME_BUFFER], bare[DRMAA_JOBNAME_BUFFER];
   drmaa_job_ids_t *ids = NULL;
   drmaa_job_template_t *jt = shell_job("sleep 60");
   CHECK(drmaa_run_bulk_jobs(&ids, jt, 1, 2, 1, diag, sizeof diag));
   CHECK(drmaa_get_next_job_id(ids, first, sizeof first));
   drmaa_release_job_ids(ids);
   snprintf(bare, sizeof bare, "%s", first);
   *strchr(bare, '.') = 0;
   printf("task known: %d\n", strncmp(state_of(first), "error", 5) != 0);
   printf("bare id: %s\n", state_of(bare));
   CHECK(drmaa_control(DRMAA_JOB_IDS_SESSION_ALL, DRMAA_CONTROL_TERMINATE, diag, sizeof diag));
   const char *all[] = {DRMAA_JOB_IDS_SESSION_ALL, NULL};
   CHECK(drmaa_synchronize(all, 60, 1, diag, sizeof diag));
   return 0;
}

static int poll_(void) {
   char id[DRMAA_JOBNAME_BUFFER];
   int running = 0;
   drmaa_job_template_t *jt = shell_job("sleep 300");
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   reach(id, "RUNNING");
   for (int i = 0; i < 200; i++) running += strcmp(state_of(id), "RUNNING") == 0;
   printf("running %d\n", running);
   CHECK(drmaa_control(id, DRMAA_CONTROL_TERMINATE, diag, sizeof diag));
   return 0;
}

static int rejoin1(void) {
   char id[DRMAA_JOBNAME_BUFFER], contact[DRMAA_CONTACT_BUFFER];
   drmaa_job_template_t *jt = shell_job("sleep 300");
   CHECK(drmaa_run_job(id, sizeof id, jt, diag, sizeof diag));
   CHECK(drmaa_get_contact(contact, sizeof contact, diag, sizeof diag));
   printf("%s %s\n", contact, id);
   return 0;
}

static int rejoin2(const char *id) {
   char out[DRMAA_JOBNAME_BUFFER];
   int stat = 0;
   printf("state of the earlier job: %s\n", state_of(id));
   CHECK(drmaa_control(DRMAA_JOB_IDS_SESSION_ALL, DRMAA_CONTROL_TERMINATE, diag, sizeof diag));
   int rc = drmaa_wait(id, out, sizeof out, &stat, 60, NULL, diag, sizeof diag);
   printf("wait: %s\n", rc == DRMAA_ERRNO_SUCCESS || rc == DRMAA_ERRNO_NO_RUSAGE ? "ended"
                        : rc == DRMAA_ERRNO_INVALID_JOB ? "not of this session"
                                                        : "other");
   return 0;
}

int main(int argc, char **argv) {
   const char *what = argc > 1 ? argv[1] : "";
   const char *contact = strcmp(what, "rejoin2") == 0 && argc > 3 ? argv[2] : NULL;
   int rc;
   CHECK(drmaa_init(contact, diag, sizeof diag));
   if (strcmp(what, "race") == 0) rc = race();
   else if (strcmp(what, "commas") == 0) rc = commas();
   else if (strcmp(what, "eqw") == 0) rc = eqw();
   else if (strcmp(what, "signal") == 0) rc = signal_();
   else if (strcmp(what, "bulk") == 0) rc = bulk();
   else if (strcmp(what, "poll") == 0) rc = poll_();
   else if (strcmp(what, "rejoin1") == 0) rc = rejoin1();
   else if (contact != NULL) rc = rejoin2(argv[3]);
   else {
      printf("unknown scenario \"%s\"\n", what);
      rc = 2;
   }
   CHECK(drmaa_exit(diag, sizeof diag));
   return rc;
}
