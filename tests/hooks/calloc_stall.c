/* Preloaded into an MPI program (mpirun -x LD_PRELOAD=... -x
 * STALL_CALLOC_COUNT=N -x STALL_RANK=R): on rank R, calloc(N, 4) never
 * returns, as a rank stuck outside any call the watchdog watches (the
 * lesson's host buffers of N floats come from calloc). The rank is Open
 * MPI's OMPI_COMM_WORLD_RANK. */
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

void *__libc_calloc(size_t n, size_t size);

void *calloc(size_t n, size_t size)
{
  const char *count = getenv("STALL_CALLOC_COUNT");
  const char *rank = getenv("STALL_RANK");
  const char *mine = getenv("OMPI_COMM_WORLD_RANK");
  if (count != NULL && rank != NULL && mine != NULL && size == 4 &&
      n == strtoull(count, NULL, 10) && atoi(rank) == atoi(mine))
    for (;;)
      pause();
  return __libc_calloc(n, size);
}
