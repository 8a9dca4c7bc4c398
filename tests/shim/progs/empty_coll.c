/* Collectives that move nothing: count 0, and a count of a zero-size datatype. MPICH's algorithms
 * return at once (no message), so each must cost nothing but the call in virtual time (the test
 * reads the report's call sites: virtual time inside the calls). Rank 0 prints "<name> done". */
#include <mpi.h>
#include <stdio.h>

#define REPS 20

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    int s[64] = {0}, r[64] = {0}, counts[64] = {0}, displs[64] = {0};
    const char *names[] = {"allreduce", "alltoall", "bcast", "reduce", "allgather", "gather", "scatter", "scan",
                           "alltoallv", "allgather_emptytype", "bcast_emptytype", "alltoall_emptytype", "iallreduce"};
    for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++) {
        for (int i = 0; i < REPS; i++) {
            switch (k) {
            case 0: MPI_Allreduce(s, r, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
            case 1: MPI_Alltoall(s, 0, MPI_INT, r, 0, MPI_INT, MPI_COMM_WORLD); break;
            case 2: MPI_Bcast(s, 0, MPI_INT, 0, MPI_COMM_WORLD); break;
            case 3: MPI_Reduce(s, r, 0, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); break;
            case 4: MPI_Allgather(s, 0, MPI_INT, r, 0, MPI_INT, MPI_COMM_WORLD); break;
            case 5: MPI_Gather(s, 0, MPI_INT, r, 0, MPI_INT, 0, MPI_COMM_WORLD); break;
            case 6: MPI_Scatter(s, 0, MPI_INT, r, 0, MPI_INT, 0, MPI_COMM_WORLD); break;
            case 7: MPI_Scan(s, r, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
            case 8: MPI_Alltoallv(s, counts, displs, MPI_INT, r, counts, displs, MPI_INT, MPI_COMM_WORLD); break;
            case 9: MPI_Allgather(s, 5, empty, r, 5, empty, MPI_COMM_WORLD); break;
            case 10: MPI_Bcast(s, 5, empty, 0, MPI_COMM_WORLD); break;
            case 11: MPI_Alltoall(s, 3, empty, r, 3, empty, MPI_COMM_WORLD); break;
            case 12: {
                MPI_Request q;
                MPI_Iallreduce(s, r, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
                MPI_Wait(&q, MPI_STATUS_IGNORE);
                break;
            }
            }
        }
        if (rank == 0) printf("%s done\n", names[k]);
    }
    MPI_Type_free(&empty);
    MPI_Finalize();
    return 0;
}
