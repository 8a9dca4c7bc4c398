/* MPI-IO (collective open/write, independent read): runs untimed and counted under mpisim, with
 * the same answers as natively. Usage: mpiio FILE */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  if (argc < 2) return 2;
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_File f; int buf[4] = {rank, rank, rank, rank};
  MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &f);
  MPI_File_write_at_all(f, (MPI_Offset)rank * 16, buf, 4, MPI_INT, MPI_STATUS_IGNORE);
  MPI_File_close(&f);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &f);
  int in[4]; MPI_File_read_at(f, (MPI_Offset)((rank + 1) % size) * 16, in, 4, MPI_INT, MPI_STATUS_IGNORE);
  MPI_File_close(&f);
  int s; MPI_Allreduce(&in[0], &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("r%d read=%d sum=%d\n", rank, in[3], s);
  MPI_Finalize();
}
