/* A fixture of tests/checks/coverage_report.py: a watchdog's verdict. */
#include <stdio.h>

void verdict(int rank)
{
  printf("rank %d's call has not returned\n", rank);
}
