/* A program that closes the descriptors it did not open (as daemons and some launchers' children
 * do) and then opens a file of its own, which gets the number the shim's trace had: its output
 * file is argv[1].<rank> (given that number with dup2 when a lower one was free). With argv[2] "unlink" it also removes the rank's trace file first, so
 * that the shim cannot open it again. Then 3000 barriers (records beyond a flush) and its last
 * line. Its output file must hold its own two lines only. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int trace_fd = -1;
    char trace_path[PATH_MAX] = "";
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[64], t[PATH_MAX];
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(p, t, sizeof t - 1);
        if (n <= 0) continue;
        t[n] = 0;
        if (strstr(t, ".mstrace")) {
            trace_fd = atoi(e->d_name);
            snprintf(trace_path, sizeof trace_path, "%s", t);
        }
    }
    if (d) closedir(d);
    if (trace_fd < 0) return 7;   /* run it with a trace */
    if (argc > 2 && !strcmp(argv[2], "unlink")) unlink(trace_path);
    close(trace_fd);
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s.%d", argv[1], rank);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 6;
    if (fd != trace_fd) {   /* a lower number was free: the program's file takes the trace's anyway */
        if (dup2(fd, trace_fd) != trace_fd) return 5;
        close(fd);
        fd = trace_fd;
    }
    dprintf(fd, "own output of rank %d\n", rank);
    for (int i = 0; i < 3000; i++) MPI_Barrier(MPI_COMM_WORLD);
    dprintf(fd, "rank %d done\n", rank);
    close(fd);
    MPI_Finalize();
    return 0;
}
