/*
 * Can Open MPI run and connect 2 local ranks here? Rank 0 sends a number to
 * rank 1, which sends it back plus one; each says what it got. The test
 * suite runs it once, under the mpirun options its MPI cases use, before
 * any MPI case (tests/lib/programs.sh).
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char *argv[])
{
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
    return 1;
  int rank = -1, size = 0, value = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int ok = size == 2;
  if (ok && rank == 0) {
    value = 41;
    ok = MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD) == MPI_SUCCESS &&
         MPI_Recv(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE) == MPI_SUCCESS;
  } else if (ok && rank == 1) {
    ok = MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE) == MPI_SUCCESS;
    value++;
    ok = ok && MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_SUCCESS;
  }
  printf("mpi_pingpong: rank %d of %d got %d\n", rank, size, value);
  MPI_Finalize();
  return ok ? 0 : 1;
}
