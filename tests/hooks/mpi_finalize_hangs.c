/* Preloaded into an MPI program (mpirun -x LD_PRELOAD=... -x
 * HANG_FINALIZE_RANK=R): MPI_Finalize never returns on rank R, as a
 * finalize stuck on a lost peer would not. The other ranks finalize. */
#include <stdlib.h>
#include <unistd.h>

#include <mpi.h>

int MPI_Finalize(void)
{
  const char *hang = getenv("HANG_FINALIZE_RANK");
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (hang != NULL && atoi(hang) == rank)
    for (;;)
      pause();
  return PMPI_Finalize();
}
