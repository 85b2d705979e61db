/* Preloaded into an MPI program (mpirun -x LD_PRELOAD=...): MPI_Init_thread
 * grants at most MPI_THREAD_FUNNELED, as an MPI built without thread
 * support would. The watchdog's thread may then call no MPI function. */
#include <mpi.h>

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
  if (required > MPI_THREAD_FUNNELED)
    required = MPI_THREAD_FUNNELED;
  int err = PMPI_Init_thread(argc, argv, required, provided);
  if (*provided > MPI_THREAD_FUNNELED)
    *provided = MPI_THREAD_FUNNELED;
  return err;
}

/* And says so when asked again later. */
int MPI_Query_thread(int *provided)
{
  int err = PMPI_Query_thread(provided);
  if (*provided > MPI_THREAD_FUNNELED)
    *provided = MPI_THREAD_FUNNELED;
  return err;
}
