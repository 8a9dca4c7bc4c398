/* The program's own clocks under co-simulation (shim.program_clocks): the same ping-pongs timed
 * with MPI_Wtime, clock_gettime (monotonic and realtime) and gettimeofday, and the process's CPU
 * time (always the host's). Rank 0 prints one line of elapsed times in ns, and the realtime clock
 * at the end in seconds since the epoch.
 * Usage: program_clocks [ROUND_TRIPS] (default 1000); needs 2 ranks. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static void pingpong(int rank, int trips)
{
    char b = 0;
    for (int i = 0; i < trips; i++) {
        if (rank == 0) {
            MPI_Send(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&b, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&b, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
}

static long long ns_of(struct timespec t) { return (long long)t.tv_sec * 1000000000LL + t.tv_nsec; }

static long long elapsed_clock(clockid_t c, int rank, int trips)
{
    struct timespec a, b;
    clock_gettime(c, &a);
    pingpong(rank, trips);
    clock_gettime(c, &b);
    return ns_of(b) - ns_of(a);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int trips = argc > 1 ? atoi(argv[1]) : 1000;

    double w0 = MPI_Wtime();
    pingpong(rank, trips);
    long long wtime = (long long)((MPI_Wtime() - w0) * 1e9 + 0.5);
    long long mono = elapsed_clock(CLOCK_MONOTONIC, rank, trips);
    long long real = elapsed_clock(CLOCK_REALTIME, rank, trips);
    struct timeval ta, tb;
    gettimeofday(&ta, NULL);
    pingpong(rank, trips);
    gettimeofday(&tb, NULL);
    long long tod = ((long long)(tb.tv_sec - ta.tv_sec) * 1000000LL + (tb.tv_usec - ta.tv_usec)) * 1000LL;
    struct timespec cpu0, cpu1, now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
    pingpong(rank, trips);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
    clock_gettime(CLOCK_REALTIME, &now);
    if (rank == 0)
        printf("wtime_ns=%lld monotonic_ns=%lld realtime_ns=%lld gettimeofday_ns=%lld cputime_ns=%lld date_s=%lld\n",
               wtime, mono, real, tod, ns_of(cpu1) - ns_of(cpu0), (long long)now.tv_sec);
    MPI_Finalize();
    return 0;
}
