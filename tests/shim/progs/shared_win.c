/* An MPI-3 shared-memory window: the ranks of one node (MPI_Comm_split_type) allocate one
 * (MPI_Win_allocate_shared), each writes its own part with plain stores, then reads its right
 * neighbour's through MPI_Win_shared_query's pointer after MPI_Win_sync and a barrier (the loads
 * and stores are the program's own computation), and a put into the left neighbour's part under
 * fences, then post/start/complete with the target polling MPI_Win_test. Rank 0 prints what it
 * checked. */
#include <mpi.h>
#include <stdio.h>

#define N 256

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int rank, size;
    MPI_Comm_rank(node, &rank);
    MPI_Comm_size(node, &size);
    int *mine;
    MPI_Win win;
    MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine, &win);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, bad = 0;
    MPI_Aint sz;
    int du;
    int *theirs;
    MPI_Win_shared_query(win, right, &sz, &du, &theirs);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < N; i++) mine[i] = rank * 1000 + i;
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    for (int i = 0; i < N; i++) bad += theirs[i] != right * 1000 + i;
    MPI_Win_unlock_all(win);
    MPI_Barrier(node);
    int v[N];
    for (int i = 0; i < N; i++) v[i] = -rank;
    MPI_Win_fence(0, win);
    MPI_Put(v, N, MPI_INT, left, 0, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < N; i++) bad += mine[i] != -right;
    /* post/start/complete and a target polling MPI_Win_test for the end of its exposure */
    MPI_Group g, gl, gr;
    MPI_Comm_group(node, &g);
    MPI_Group_incl(g, 1, &left, &gl);
    MPI_Group_incl(g, 1, &right, &gr);
    MPI_Win_post(gl, 0, win);
    MPI_Win_start(gr, 0, win);
    for (int i = 0; i < N; i++) v[i] = rank + 3;
    MPI_Put(v, N, MPI_INT, right, 0, N, MPI_INT, win);
    MPI_Win_complete(win);
    int flag = 0;
    while (!flag) MPI_Win_test(win, &flag);
    for (int i = 0; i < N; i++) bad += mine[i] != left + 3;
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    MPI_Group_free(&g);
    MPI_Win_free(&win);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int wr;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    if (wr == 0) printf("shared window of %d ranks: %s\n", size, all ? "check=FAIL" : "check=ok");
    MPI_Comm_free(&node);
    MPI_Finalize();
    return all != 0;
}
