/* Shared by the fuzz harnesses: the bytes of one input as a file (the parsers under test read
 * files by path, as the tools do). One file per process, rewritten for every input. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline const char *fuzz_file(const unsigned char *data, size_t len, const char *suffix)
{
    static char path[256];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path - 16, "%s/mpisim-fuzz-%d", dir && *dir ? dir : "/tmp", (int)getpid());
        strcat(path, suffix);
    }
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
