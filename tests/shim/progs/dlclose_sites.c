/* MPI calls from a library that the program then unloads (dlclose): under --compute cpu the
 * shim learns which call follows which call site and touches that code after a switch-out
 * (libmpisim/shim/warm_path.c). Here the same barrier is followed by the library's calls, then,
 * once the library is gone, by the program's own: its old addresses must not be touched.
 * Usage: dlclose_sites LIB.so; prints whether the library was unmapped. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void own_pingpong(int rounds)
{
    int rank;
    char b = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < rounds; i++) {
        if (rank == 0) {
            MPI_Send(&b, 1, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(&b, 1, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&b, 1, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&b, 1, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
}

static __attribute__((noinline)) void step(void (*f)(int))
{
    MPI_Barrier(MPI_COMM_WORLD);   /* one call site, followed by f's calls */
    f(2);
}

static int mapped(uintptr_t a)
{
    FILE *m = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (m && fgets(line, sizeof line, m)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) found = 1;
    }
    if (m) fclose(m);
    return found;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
    void (*pp)(int) = h ? (void (*)(int))dlsym(h, "lib_pingpong") : NULL;
    if (!pp) {
        fprintf(stderr, "dlclose_sites: cannot load %s: %s\n", argc > 1 ? argv[1] : "(none)", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < 300; i++) step(pp);
    uintptr_t where = (uintptr_t)pp;
    dlclose(h);
    int gone = !mapped(where);
    for (int i = 0; i < 300; i++) step(own_pingpong);
    if (rank == 0) printf("dlclose_sites=ok unmapped=%s\n", gone ? "yes" : "no");
    MPI_Finalize();
    return 0;
}
