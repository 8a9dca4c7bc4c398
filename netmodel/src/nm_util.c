/* Small helpers shared by netmodel's parts (one copy, not one per file). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nm_internal.h"

void nm_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int nm_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

char *nm_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* Read a whole stream into a NUL-terminated buffer; when larger than `max`, *len = more than
 * max and the caller reports the size error. NULL when out of memory. */
char *nm_read_all(FILE *f, size_t max, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n > max) { *len = n; return buf; }
        if (n < cap) break;
        char *nb = cap > max ? NULL : realloc(buf, 2 * cap + 1);
        if (!nb) { free(buf); return NULL; }
        buf = nb;
        cap *= 2;
    }
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}
