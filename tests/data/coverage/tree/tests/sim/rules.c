/* A fixture of tests/checks/coverage_report.py: a simulation's file, its
 * two reporting functions and where it reports. */
#include <stdio.h>
#include <unistd.h>

_Noreturn void violation(const char *rule, const char *what)
{
  fprintf(stderr, "ncclsim: RULE VIOLATION [%s]: %s\n", rule, what);
  _exit(70);
}

static int refuse(const char *call)
{
  fprintf(stderr, "ncclsim: %s: NCCL WARN refused\n", call);
  return 4;
}

int check_window(int size)
{
  if (size < 0)
    violation("window-size", "a negative size");
  if (size == 0)
    return refuse("ncclCommWindowRegister");
  if (size > 100) {
    fprintf(stderr,
            "ncclsim: bad size %d\n", size);
    _exit(70);
  }
  /* violation("in-a-comment", "not a site") */
  return 0;
}
