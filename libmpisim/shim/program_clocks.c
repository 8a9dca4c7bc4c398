/* The program's own clocks (docs/architecture.md, "The program's own clocks").
 *
 * Benchmarks that time themselves with gettimeofday or clock_gettime instead of MPI_Wtime
 * (NetPIPE; home-grown codes; C++ std::chrono through libstdc++; Fortran's system_clock through
 * libgfortran) would print host time under co-simulation, which says nothing about the modelled
 * machine. Between MPI_Init and MPI_Finalize, on the thread that called MPI_Init, the shim answers
 * those reads in virtual time, as MPI_Wtime (SMPI does the same for code built with smpicc): the
 * realtime clocks from the host's date at MPI_Init, the monotonic ones from the host's monotonic
 * time then. Reads made by the MPI library, its runtime, libc and the shim itself, and by any
 * other thread, stay the host's: Open MPI's timeouts and progress engine must see real time.
 * shim.program_clocks = real turns it off. */
#define _GNU_SOURCE
#include "shim.h"
#include "shim_state.h"

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);

static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;

/* the epoch of the virtual clocks: the host's clocks at MPI_Init */
static int64_t epoch_realtime_ns, epoch_monotonic_ns;
/* the thread that called MPI_Init (initial-exec: a plain %fs access, no call) */
static __thread int clocks_owner __attribute__((tls_model("initial-exec")));

__attribute__((constructor)) static void resolve_real_clocks(void)
{
    real_clock_gettime = (clock_gettime_fn)(uintptr_t)dlsym(RTLD_NEXT, "clock_gettime");
    real_gettimeofday = (gettimeofday_fn)(uintptr_t)dlsym(RTLD_NEXT, "gettimeofday");
}

int ms_clock_real(int clock, struct timespec *ts)
{
    if (real_clock_gettime) return real_clock_gettime(clock, ts);
    return (int)syscall(SYS_clock_gettime, clock, ts);   /* before the constructor ran */
}

static int64_t ns_of(const struct timespec *ts) { return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec; }

void ms_program_clocks_start(void)
{
    struct timespec ts;
    ms_clock_real(CLOCK_REALTIME, &ts);
    epoch_realtime_ns = ns_of(&ts);
    ms_clock_real(CLOCK_MONOTONIC, &ts);
    epoch_monotonic_ns = ns_of(&ts);
    clocks_owner = 1;
}

/* Objects whose clock reads stay the host's: the MPI implementation and what it runs on, libc,
 * the dynamic loader, the shim. Anything else (the executable, its own libraries, libstdc++,
 * libgfortran) is the program. */
static int object_keeps_host_time(const char *path)
{
    static const char *const prefixes[] = {
        "libmpisim", "libc.so", "libc-", "ld-linux", "libpthread", "libmpi", "libopen-", "libpmix", "libprrte",
        "libevent", "libhwloc", "libuc", "libfabric", "libhcoll", "libnl", "libibverbs", "librdmacm", "libpsm",
        "libmunge", "libcuda", "libgomp", "mca_", "libompi", "liboshmem"};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(base, prefixes[i], strlen(prefixes[i]))) return 1;
    return 0;
}

/* Whether a read called from `ret` is the program's: dladdr once per calling site (a handful in
 * any program), remembered in a small table; a full neighbourhood is asked again. */
enum { SITE_SLOTS = 256 };
static struct {
    uintptr_t ret;
    int program;
} site_class[SITE_SLOTS];

static int object_of_program(const void *ret)
{
    Dl_info info;
    return dladdr(ret, &info) && info.dli_fname && !object_keeps_host_time(info.dli_fname);
}

static int caller_is_program(const void *ret)
{
    uintptr_t r = (uintptr_t)ret;
    size_t h = (size_t)((r * 0x9e3779b97f4a7c15ULL) >> 56);
    for (size_t i = 0; i < 8; i++) {
        size_t k = (h + i) & (SITE_SLOTS - 1);
        if (site_class[k].ret == r) return site_class[k].program;
        if (!site_class[k].ret) {
            site_class[k].program = object_of_program(ret);
            site_class[k].ret = r;
            return site_class[k].program;
        }
    }
    return object_of_program(ret);
}

static int virtual_read(const void *ret)
{
    return clocks_owner && ms_virtual_clock_on() && !ms_bypass() && caller_is_program(ret);
}

static int is_realtime(clockid_t c) { return c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE; }
static int is_monotonic(clockid_t c)
{
    return c == CLOCK_MONOTONIC || c == CLOCK_MONOTONIC_RAW || c == CLOCK_MONOTONIC_COARSE || c == CLOCK_BOOTTIME;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    uint64_t entry_tsc = ms_tsc();   /* the wrapper window (shim.h) */
    if ((is_realtime(clock) || is_monotonic(clock)) && virtual_read(__builtin_return_address(0))) {
        int64_t ns = ms_read_virtual_clock(MS_FN_clock_gettime, __builtin_return_address(0), entry_tsc) / 1000 +
                     (is_realtime(clock) ? epoch_realtime_ns : epoch_monotonic_ns);
        ts->tv_sec = (time_t)(ns / 1000000000LL);
        ts->tv_nsec = (long)(ns % 1000000000LL);
        return 0;
    }
    return ms_clock_real(clock, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    uint64_t entry_tsc = ms_tsc();
    if (virtual_read(__builtin_return_address(0))) {
        int64_t ns = ms_read_virtual_clock(MS_FN_gettimeofday, __builtin_return_address(0), entry_tsc) / 1000 + epoch_realtime_ns;
        tv->tv_sec = (time_t)(ns / 1000000000LL);
        tv->tv_usec = (suseconds_t)(ns % 1000000000LL / 1000);
        if (tz) memset(tz, 0, sizeof(struct timezone));
        return 0;
    }
    if (real_gettimeofday) return real_gettimeofday(tv, tz);
    return (int)syscall(SYS_gettimeofday, tv, tz);
}
