/* Inside the watchdog: its thread (watchdog.c) and its report
 * (watchdog_report.c). A rank's line, as one process hands it to another:
 * "RANK STATE MS IDLE SEQ\t" (its state, verdict.h) then the words printed. */
#ifndef WATCHDOG_IMPL_H
#define WATCHDOG_IMPL_H

#include "watchdog.h"

#define CALL_CHARS 512 /* the longest call a line names */

/* This process's ranks from .. from + n - 1, one line each: malloc'd
 * text, or NULL without memory. */
char *watchdog_collect(int from, int n);
/* Whether those ranks hang after limit_s seconds (verdict.h). */
int watchdog_limit_passed(int from, int n, int limit_s);

enum report_outcome {
  REPORTED,        /* the lines are printed: end the job */
  ANOTHER_REPORTS, /* a process with a lower number asked: it ends the job */
  NO_HANG          /* the other processes' answers show progress */
};
/* This process's rank passed the limit: collects every rank's line,
 * asking the other processes (*asker: the one that reports instead), and
 * prints the report if the job hangs, else tells the others to carry on. */
enum report_outcome watchdog_report(int from, int n, int in_setup,
                                    int limit_s, int *asker);

#endif
