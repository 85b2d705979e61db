/* A fixture of tests/checks/coverage_report.py: a report's phrases. */
#include "whatran.h"
#include <stdio.h>

void report(int n, int forked)
{
  const char *unit = "B";
  if (n == 0)
    printf("no collective\n");
  else
    printf("%d collectives of %s\n", n, unit);
  if (forked)
    printf("not measured: this process was forked,"
           " and CUPTI is not used after a fork\n");
  printf("%s\n", forked ? "a forked process"
                        : "the measured process");
}
