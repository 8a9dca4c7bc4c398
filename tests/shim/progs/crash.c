/* Rank 1 dies (SIGSEGV) after a collective; the others wait for it in MPI_Barrier. */
#include <mpi.h>
#include <stdio.h>
#include <signal.h>
int main(int c, char **v) {
  MPI_Init(&c, &v); int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  int x = r; MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (r == 1) raise(SIGSEGV);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize(); return 0; }
