/*
 * A test hook for the GPU machine: CUPTI failing on one rank.
 *
 *   mpirun ... -x FAIL_RANK=R -x LD_PRELOAD=tests/build/hooks/cupti_enable_fails.so ./prog --bench
 *
 * Preloaded before the real libcupti, cuptiActivityEnable fails with
 * CUPTI_ERROR_NOT_INITIALIZED in the process whose MPI rank
 * (OMPI_COMM_WORLD_RANK, or PMI_RANK) is R, as it does where a profiler
 * already holds CUPTI; other processes get CUPTI's own. One CUPTI serves a
 * whole process, so this is a case for MPI, one rank per process. Not part
 * of the examples: only tests/suites/90-gpu.sh uses it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int this_rank(void)
{
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (r == NULL)
    r = getenv("PMI_RANK");
  return r ? atoi(r) : -1;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
  const char *fail = getenv("FAIL_RANK");
  if (fail != NULL && this_rank() == atoi(fail)) {
    fprintf(stderr, "cupti_enable_fails: rank %d: cuptiActivityEnable(%d)"
                    " fails (test hook)\n", this_rank(), (int)kind);
    return CUPTI_ERROR_NOT_INITIALIZED;
  }
  CUptiResult (*real)(CUpti_ActivityKind);
  *(void **)&real = dlsym(RTLD_NEXT, "cuptiActivityEnable");
  if (real == NULL) {
    fprintf(stderr, "cupti_enable_fails: CUPTI's cuptiActivityEnable not"
                    " found: %s\n", dlerror());
    return CUPTI_ERROR_UNKNOWN;
  }
  return real(kind);
}
