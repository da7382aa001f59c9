/* bench/drmaa.sh's client: the latency of drmaa_job_ps and drmaa_wait in a cell where the
 * caller already has many jobs queued. Prints one line per figure (microseconds).
 *
 *   job_ps, spool unchanged   drmaa_job_ps of a queued job, asked ROUNDS * 10 times
 *   job_ps after a submission the first drmaa_job_ps after drmaa_run_job (the cell changed)
 *   wait, job ended           drmaa_wait of a job that has ended (its end recorded)
 *   run + wait of `true`      drmaa_run_job of /bin/true and drmaa_wait for it: submission,
 *                             dispatch, the end recorded, and the wait seeing it
 *
 * Usage: drmaa_latency QUEUED_JOB_ID ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "drmaa.h"

static char diag[DRMAA_ERROR_STRING_BUFFER];

static double now_us(void) {
   struct timespec t;
   clock_gettime(CLOCK_MONOTONIC, &t);
   return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
   double x = *(const double *)a, y = *(const double *)b;
   return (x > y) - (x < y);
}

static void report(const char *what, double *v, int n) {
   qsort(v, n, sizeof *v, cmp);
   printf("%-28s %6d calls: median %9.0f us, p90 %9.0f us, max %9.0f us\n", what, n,
          v[(n - 1) / 2], v[(int)(n * 0.9) < n ? (int)(n * 0.9) : n - 1], v[n - 1]);
}

static int fail(const char *call, int rc) {
   printf("FAILED %s: %d %s\n", call, rc, diag);
   return 1;
}

int main(int argc, char **argv) {
   if (argc < 3) {
      fprintf(stderr, "usage: drmaa_latency QUEUED_JOB_ID ROUNDS\n");
      return 2;
   }
   const char *queued = argv[1];
   int rounds = atoi(argv[2]), rc, ps, stat, lost = 0;
   char id[DRMAA_JOBNAME_BUFFER], out[DRMAA_JOBNAME_BUFFER];
   double *unchanged = calloc(rounds * 10, sizeof(double));
   double *changed = calloc(rounds, sizeof(double));
   double *ended = calloc(rounds, sizeof(double));
   double *trip = calloc(rounds, sizeof(double));
   drmaa_job_template_t *jt = NULL;
   if ((rc = drmaa_init(NULL, diag, sizeof diag))) return fail("drmaa_init", rc);
   drmaa_allocate_job_template(&jt, diag, sizeof diag);
   drmaa_set_attribute(jt, DRMAA_REMOTE_COMMAND, "/bin/true", diag, sizeof diag);
   drmaa_set_attribute(jt, DRMAA_OUTPUT_PATH, ":/dev/null", diag, sizeof diag);
   drmaa_set_attribute(jt, DRMAA_JOIN_FILES, "y", diag, sizeof diag);
   /* The first call starts what the session asks (not counted). */
   if ((rc = drmaa_job_ps(queued, &ps, diag, sizeof diag))) return fail("drmaa_job_ps", rc);
   for (int i = 0; i < rounds * 10; i++) {
      double a = now_us();
      if ((rc = drmaa_job_ps(queued, &ps, diag, sizeof diag))) return fail("drmaa_job_ps", rc);
      unchanged[i] = now_us() - a;
   }
   for (int i = 0; i < rounds; i++) {
      double a = now_us();
      if ((rc = drmaa_run_job(id, sizeof id, jt, diag, sizeof diag)))
         return fail("drmaa_run_job", rc);
      double b = now_us();
      rc = drmaa_job_ps(id, &ps, diag, sizeof diag);
      changed[i] = now_us() - b;
      /* The library before issue 23 could lose a job that ended while it asked. */
      if (rc == DRMAA_ERRNO_INVALID_JOB) lost++;
      else if (rc) return fail("drmaa_job_ps", rc);
      const char *ids[] = {id, NULL};
      if ((rc = drmaa_synchronize(ids, DRMAA_TIMEOUT_WAIT_FOREVER, 0, diag, sizeof diag)))
         return fail("drmaa_synchronize", rc);
      double c = now_us();
      rc = drmaa_wait(id, out, sizeof out, &stat, DRMAA_TIMEOUT_WAIT_FOREVER, NULL, diag,
                      sizeof diag);
      if (rc && rc != DRMAA_ERRNO_NO_RUSAGE) return fail("drmaa_wait", rc);
      ended[i] = now_us() - c;
      (void)a;
   }
   for (int i = 0; i < rounds; i++) {
      double a = now_us();
      if ((rc = drmaa_run_job(id, sizeof id, jt, diag, sizeof diag)))
         return fail("drmaa_run_job", rc);
      rc = drmaa_wait(id, out, sizeof out, &stat, DRMAA_TIMEOUT_WAIT_FOREVER, NULL, diag,
                      sizeof diag);
      if (rc && rc != DRMAA_ERRNO_NO_RUSAGE) return fail("drmaa_wait", rc);
      trip[i] = now_us() - a;
   }
   report("job_ps, spool unchanged", unchanged, rounds * 10);
   report("job_ps after a submission", changed, rounds);
   if (lost) printf("    (of which %d said the job does not exist)\n", lost);
   report("wait, job ended", ended, rounds);
   report("run + wait of true", trip, rounds);
   drmaa_exit(diag, sizeof diag);
   return 0;
}
