/* Shared by the fuzz harnesses: the bytes of one input as a file (the parsers under test read
 * files by path, as the tools do). One file per process, rewritten for every input, in a
 * directory of its own that goes when the process exits. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A private directory for this process's scratch files, made once (mkdtemp: a name another
 * process, or a PID reused after a run that was killed, cannot have taken) and removed with what
 * is in it when the process exits. */
static char fuzz_scratch_dir[256];
static pid_t fuzz_scratch_owner;   /* a forked child (the HDF5 reader's guard) leaves it alone */

static inline void fuzz_scratch_remove(void)
{
    if (getpid() != fuzz_scratch_owner) return;
    DIR *d = opendir(fuzz_scratch_dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", fuzz_scratch_dir, e->d_name);
        unlink(p);
    }
    if (d) closedir(d);
    rmdir(fuzz_scratch_dir);
}

static inline const char *fuzz_scratch(void)
{
    if (!fuzz_scratch_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_scratch_dir, sizeof fuzz_scratch_dir, "%s/mpisim-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fuzz_scratch_dir)) abort();
        fuzz_scratch_owner = getpid();
        atexit(fuzz_scratch_remove);
    }
    return fuzz_scratch_dir;
}

static inline const char *fuzz_file(const unsigned char *data, size_t len, const char *suffix)
{
    static char path[300];
    if (!path[0]) snprintf(path, sizeof path, "%s/input%s", fuzz_scratch(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (len && fwrite(data, 1, len, f) != len) abort();
    if (fclose(f) != 0) abort();
    return path;
}

/* A returned error must be one line of text naming what was read. */
static inline void fuzz_check_error(const char *err, const char *must_contain)
{
    if (!err[0]) abort();
    if (must_contain && !strstr(err, must_contain)) abort();
}

#endif
