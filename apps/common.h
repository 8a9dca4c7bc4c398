/* Small helpers shared by the mpisim study programs (header only, plain C11 + MPI).
 *
 * The programs are ordinary MPI programs: they contain no mpisim code and build with a plain
 * `mpicc -O2 -std=c11 prog.c -o prog -lm` (this header is found next to the source).
 *
 * Conventions used by every program (see apps/README.md):
 *   - every rank parses the same arguments; on a usage error rank 0 prints the message and the
 *     usage line on stderr and every rank exits with status 2;
 *   - results are printed by rank 0 on stdout; lines starting with '#' carry `key=value`
 *     metadata, other lines form one CSV block whose first line is the header;
 *   - the last line is `# check=ok` (or `# check=FAIL`, with details on stderr and exit 1);
 *   - all times come from MPI_Wtime (virtual time under the simulator), in seconds;
 *   - MB means 10^6 bytes.
 */
#ifndef MPISIM_APPS_COMMON_H
#define MPISIM_APPS_COMMON_H

#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int app_world_rank(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static inline int app_world_size(void)
{
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

/* Usage error: rank 0 reports it; every rank leaves with status 2. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4), noreturn))
#endif
static void app_usage_error(const char *prog, const char *usage, const char *fmt, ...)
{
    if (app_world_rank() == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: error: ", prog);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nusage: %s\n", usage);
        va_end(ap);
        fflush(stderr);
    }
    MPI_Finalize();
    exit(2);
}

/* Help: rank 0 prints the usage on stdout; every rank leaves with status 0. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void app_help(const char *usage)
{
    if (app_world_rank() == 0) {
        printf("usage: %s\n", usage);
        fflush(stdout);
    }
    MPI_Finalize();
    exit(0);
}

/* Integer with an optional binary suffix k/K (x1024), m/M (x1048576), g/G (x2^30).
 * Returns 0 on success, -1 if malformed or outside [lo, hi]. */
static inline int app_parse_long(const char *s, long lo, long hi, long *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    long long mult = 1;
    if (*end == 'k' || *end == 'K') {
        mult = 1024LL;
        end++;
    } else if (*end == 'm' || *end == 'M') {
        mult = 1024LL * 1024LL;
        end++;
    } else if (*end == 'g' || *end == 'G') {
        mult = 1024LL * 1024LL * 1024LL;
        end++;
    }
    if (*end != '\0')
        return -1;
    if (v > LLONG_MAX / mult || v < LLONG_MIN / mult)
        return -1;
    v *= mult;
    if (v < lo || v > hi)
        return -1;
    *out = (long)v;
    return 0;
}

static inline int app_parse_double(const char *s, double lo, double hi, double *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0')
        return -1;
    if (!(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* Comma-separated list of integers (suffixes allowed), appended to *v (realloc'd).
 * Returns 0 on success, -1 on a malformed element. */
static inline int app_parse_list(const char *s, long lo, long hi, long **v, int *n)
{
    if (s == NULL || *s == '\0')
        return -1;
    const char *p = s;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char tok[64];
        if (len == 0 || len >= sizeof tok)
            return -1;
        memcpy(tok, p, len);
        tok[len] = '\0';
        long x;
        if (app_parse_long(tok, lo, hi, &x) != 0)
            return -1;
        long *nv = (long *)realloc(*v, (size_t)(*n + 1) * sizeof(long));
        if (nv == NULL)
            return -1;
        *v = nv;
        (*v)[(*n)++] = x;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static int app_cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Sort ascending and drop duplicates. */
static inline void app_sort_unique(long *v, int *n)
{
    if (*n <= 1)
        return;
    qsort(v, (size_t)*n, sizeof(long), app_cmp_long);
    int m = 1;
    for (int i = 1; i < *n; i++)
        if (v[i] != v[m - 1])
            v[m++] = v[i];
    *n = m;
}

/* Deterministic payload: byte k of a message identified by `seed` is byte k % 8 of a hash of
 * (seed, k / 8), so that buffers are filled and checked 8 bytes at a time. */
static inline uint64_t app_pattern_word(uint64_t seed, uint64_t w)
{
    uint64_t x = w * 0x9E3779B97F4A7C15ULL + seed * 0xBF58476D1CE4E5B9ULL + 0x94D049BB133111EBULL;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 32;
    return x;
}

static inline unsigned char app_pattern_byte(uint64_t seed, size_t k)
{
    return (unsigned char)((app_pattern_word(seed, (uint64_t)(k >> 3)) >> (8 * (k & 7))) & 0xFF);
}

static inline void app_fill_pattern(void *buf, size_t n, uint64_t seed)
{
    unsigned char *p = (unsigned char *)buf;
    size_t w = 0;
    for (; (w + 1) * 8 <= n; w++) {
        uint64_t x = app_pattern_word(seed, (uint64_t)w);
        for (int b = 0; b < 8; b++) /* little-endian byte order on every host */
            p[w * 8 + (size_t)b] = (unsigned char)(x >> (8 * b));
    }
    for (size_t k = w * 8; k < n; k++)
        p[k] = app_pattern_byte(seed, k);
}

/* Number of bytes that differ from the pattern (0 = correct). */
static inline size_t app_check_pattern(const void *buf, size_t n, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t bad = 0, w = 0;
    for (; (w + 1) * 8 <= n; w++) {
        uint64_t x = app_pattern_word(seed, (uint64_t)w);
        for (int b = 0; b < 8; b++)
            bad += p[w * 8 + (size_t)b] != (unsigned char)(x >> (8 * b));
    }
    for (size_t k = w * 8; k < n; k++)
        bad += (p[k] != app_pattern_byte(seed, k));
    return bad;
}

/* splitmix64: a small seeded generator for the programs that need random choices. */
static inline uint64_t app_rand_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static inline double app_rand_unit(uint64_t *state)
{
    return (double)(app_rand_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n). */
static inline uint64_t app_rand_below(uint64_t *state, uint64_t n)
{
    return n ? app_rand_next(state) % n : 0;
}

static inline void *app_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

static inline void *app_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%zu x %zu bytes)\n", n, size);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

/* Busy-wait for `seconds` of MPI_Wtime time (virtual time under the simulator). */
static inline void app_spin(double seconds)
{
    if (seconds <= 0.0)
        return;
    double deadline = MPI_Wtime() + seconds;
    while (MPI_Wtime() < deadline) {
    }
}

/* End of a run: sum the error counts of all ranks; rank 0 prints `# check=ok` or
 * `# check=FAIL errors=N`. Returns the exit status every rank should use (0 or 1). */
static inline int app_finish(long local_errors, const char *prog)
{
    long total = 0;
    MPI_Allreduce(&local_errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (app_world_rank() == 0) {
        if (total == 0) {
            printf("# check=ok\n");
        } else {
            printf("# check=FAIL errors=%ld\n", total);
            fprintf(stderr, "%s: verification FAILED (%ld errors)\n", prog, total);
        }
        fflush(stdout);
        fflush(stderr);
    }
    return total == 0 ? 0 : 1;
}

#endif /* MPISIM_APPS_COMMON_H */
