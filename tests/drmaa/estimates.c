/* drmaa_gridspool_estimated_start, gridspool's extension of DRMAA 1.0 (issue 28,
 * tests/drmaa.rs): the first argument is the id of a job that holds the cell's one slot for
 * 600 s. Submits a job of 60 s, a held one and one no host can take, waits for a forecast of
 * them, and prints one line per fact: each estimate, then the errors of a running job, a job
 * that does not exist, a NULL pointer and of a call without a session. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "drmaa.h"

#ifndef GRIDSPOOL_DRMAA_EXTENSIONS
#error "drmaa.h has no gridspool extensions"
#endif

static char diag[DRMAA_ERROR_STRING_BUFFER];

#define CHECK(call)                                                                 \
   do {                                                                             \
      int rc_ = (call);                                                             \
      if (rc_ != DRMAA_ERRNO_SUCCESS) {                                             \
         printf("FAILED %s: %d %s: %s\n", #call, rc_, drmaa_strerror(rc_), diag);   \
         return 1;                                                                  \
      }                                                                             \
   } while (0)

static int submit(char *id, size_t len, const char *state, const char *native) {
   drmaa_job_template_t *jt = NULL;
   const char *argv[] = {"0", NULL};
   CHECK(drmaa_allocate_job_template(&jt, diag, sizeof diag));
   CHECK(drmaa_set_attribute(jt, DRMAA_REMOTE_COMMAND, "/bin/sleep", diag, sizeof diag));
   CHECK(drmaa_set_vector_attribute(jt, DRMAA_V_ARGV, argv, diag, sizeof diag));
   CHECK(drmaa_set_attribute(jt, DRMAA_OUTPUT_PATH, ":/dev/null", diag, sizeof diag));
   CHECK(drmaa_set_attribute(jt, DRMAA_JOIN_FILES, "y", diag, sizeof diag));
   CHECK(drmaa_set_attribute(jt, DRMAA_WCT_HLIMIT, "60", diag, sizeof diag));
   CHECK(drmaa_set_attribute(jt, DRMAA_JS_STATE, state, diag, sizeof diag));
   if (native != NULL)
      CHECK(drmaa_set_attribute(jt, DRMAA_NATIVE_SPECIFICATION, native, diag, sizeof diag));
   CHECK(drmaa_run_job(id, len, jt, diag, sizeof diag));
   drmaa_delete_job_template(jt, NULL, 0);
   return 0;
}

/* The estimate of `id` in words: `at TIME DETAIL`, `unknown DETAIL`, `never DETAIL`, or
 * `error N DIAGNOSIS`. */
static const char *estimate(const char *id) {
   static char text[2 * DRMAA_ERROR_STRING_BUFFER];
   char detail[DRMAA_ERROR_STRING_BUFFER] = "";
   time_t start = 0;
   diag[0] = 0;
   int rc = drmaa_gridspool_estimated_start(id, &start, detail, sizeof detail, diag, sizeof diag);
   if (rc != DRMAA_ERRNO_SUCCESS)
      snprintf(text, sizeof text, "error %d %s", rc, diag);
   else if (start == DRMAA_GRIDSPOOL_START_UNKNOWN)
      snprintf(text, sizeof text, "unknown %s", detail);
   else if (start == DRMAA_GRIDSPOOL_START_NEVER)
      snprintf(text, sizeof text, "never %s", detail);
   else
      snprintf(text, sizeof text, "at %lld %s", (long long)start, detail);
   return text;
}

/* Whether the forecast has seen `id` (its estimate is not the one of a job it has not). */
static int forecast_has(const char *id) {
   const char *e = estimate(id);
   return strstr(e, "not in the last forecast") == NULL && strstr(e, "no forecast has") == NULL;
}

int main(int argc, char **argv) {
   char waiting[DRMAA_JOBNAME_BUFFER], held[DRMAA_JOBNAME_BUFFER], never[DRMAA_JOBNAME_BUFFER];
   const char *running = argc > 1 ? argv[1] : "0";
   printf("no session: %s\n", estimate(running));
   CHECK(drmaa_init(NULL, diag, sizeof diag));
   if (submit(waiting, sizeof waiting, DRMAA_SUBMISSION_STATE_ACTIVE, NULL) ||
       submit(held, sizeof held, DRMAA_SUBMISSION_STATE_HOLD, NULL) ||
       submit(never, sizeof never, DRMAA_SUBMISSION_STATE_ACTIVE, "-l arch=nowhere"))
      return 1;
   for (int i = 0; i < 600; i++) {
      if (forecast_has(waiting) && forecast_has(held) && forecast_has(never)) break;
      usleep(100000);
   }
   printf("waiting: %s\n", estimate(waiting));
   printf("held: %s\n", estimate(held));
   printf("never: %s\n", estimate(never));
   printf("running: %s\n", estimate(running));
   printf("gone: %s\n", estimate("999999"));
   printf("null: %d\n", drmaa_gridspool_estimated_start(waiting, NULL, NULL, 0, NULL, 0));
   CHECK(drmaa_control(DRMAA_JOB_IDS_SESSION_ALL, DRMAA_CONTROL_TERMINATE, diag, sizeof diag));
   CHECK(drmaa_exit(diag, sizeof diag));
   return 0;
}
