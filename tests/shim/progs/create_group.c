/* MPI_Comm_create_group (collective over the group only) twice with the same group and tag,
 * interleaved with communicator creation over the whole parent: ids must agree everywhere. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Group wg, even; MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int n = (size + 1) / 2, ranks[64]; for (int i = 0; i < n; i++) ranks[i] = 2 * i;
  MPI_Group_incl(wg, n, ranks, &even);
  for (int rep = 0; rep < 2; rep++) {
    if (rank % 2 == 0) {
      MPI_Comm c; MPI_Comm_create_group(MPI_COMM_WORLD, even, 5, &c);
      int s = 0; MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, c);
      int cr; MPI_Comm_rank(c, &cr);
      printf("rank %d rep %d crank %d sum %d\n", rank, rep, cr, s);
      MPI_Comm_free(&c);
    }
    /* everyone, afterwards: the parent's own creations still agree */
    MPI_Comm d; MPI_Comm_dup(MPI_COMM_WORLD, &d); int t = 0; MPI_Allreduce(&rank, &t, 1, MPI_INT, MPI_SUM, d);
    printf("rank %d rep %d dup sum %d\n", rank, rep, t); MPI_Comm_free(&d);
  }
  MPI_Group_free(&even); MPI_Group_free(&wg);
  MPI_Finalize();
}
