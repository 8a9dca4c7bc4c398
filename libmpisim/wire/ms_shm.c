/* The shared-memory transport's segment, rings and doorbells: see ms_shm.h. */
#define _GNU_SOURCE
#include "ms_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

static uint32_t layout_check(void)
{
    return (uint32_t)(sizeof(ms_shm_header) * 3u + sizeof(ms_shm_slot) * 5u + sizeof(ms_ring) * 7u +
                      sizeof(ms_doorbell) * 11u + MS_SHM_UP_BYTES / 1024u * 13u + MS_SHM_DOWN_BYTES / 1024u * 17u);
}

int ms_shm_dirty_words(int nranks) { return (nranks + 63) / 64; }

static size_t slots_off(int nranks) { return round64(sizeof(ms_shm_header)) + round64(8u * (size_t)ms_shm_dirty_words(nranks)); }
static size_t data_off(int nranks) { return slots_off(nranks) + round64(sizeof(ms_shm_slot)) * (size_t)nranks; }

size_t ms_shm_bytes(int nranks)
{
    return data_off(nranks) + (size_t)nranks * (MS_SHM_UP_BYTES + MS_SHM_DOWN_BYTES);
}

ms_shm_slot *ms_shm_slot_at(void *base, int rank)
{
    const ms_shm_header *h = base;
    return (ms_shm_slot *)((char *)base + slots_off(h->nranks) + round64(sizeof(ms_shm_slot)) * (size_t)rank);
}

static uint64_t *dirty_words(void *base) { return (uint64_t *)((char *)base + round64(sizeof(ms_shm_header))); }

void ms_shm_init(void *base, int nranks)
{
    ms_shm_header *h = base;
    h->nranks = nranks;
    h->total_bytes = ms_shm_bytes(nranks);
    h->layout_check = layout_check();
    size_t d = data_off(nranks);
    for (int i = 0; i < nranks; i++) {
        ms_shm_slot *s = ms_shm_slot_at(base, i);
        s->up.size = MS_SHM_UP_BYTES;
        s->up.data_off = d;
        d += MS_SHM_UP_BYTES;
        s->down.size = MS_SHM_DOWN_BYTES;
        s->down.data_off = d;
        d += MS_SHM_DOWN_BYTES;
    }
    h->version = MS_SHM_VERSION;
    __atomic_store_n(&h->magic, MS_SHM_MAGIC, __ATOMIC_RELEASE);   /* last: the layout is complete */
}

int ms_shm_check(const void *base, size_t mapped)
{
    const ms_shm_header *h = base;
    if (mapped < sizeof *h || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != MS_SHM_MAGIC ||
        h->version != MS_SHM_VERSION || h->layout_check != layout_check() || h->nranks < 1)
        return -1;
    if (h->total_bytes != ms_shm_bytes(h->nranks) || mapped < h->total_bytes) return -1;
    return 0;
}

/* ---- rings ---------------------------------------------------------------------------------- */

size_t ms_ring_readable(const ms_ring *r)
{
    return (size_t)(__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - __atomic_load_n(&r->tail, __ATOMIC_RELAXED));
}

size_t ms_ring_writable(const ms_ring *r)
{
    return (size_t)(r->size - (__atomic_load_n(&r->head, __ATOMIC_RELAXED) - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE)));
}

size_t ms_ring_write(void *base, ms_ring *r, const void *src, size_t n)
{
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED), tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    size_t room = (size_t)(r->size - (head - tail));
    if (n > room) n = room;
    if (!n) return 0;
    char *data = (char *)base + r->data_off;
    size_t at = (size_t)(head & (r->size - 1)), first = r->size - at < n ? r->size - at : n;
    memcpy(data + at, src, first);
    memcpy(data, (const char *)src + first, n - first);
    /* sequentially consistent: the reader's "I sleep" and this store are ordered (ms_bell_wait) */
    __atomic_store_n(&r->head, head + n, __ATOMIC_SEQ_CST);
    return n;
}

size_t ms_ring_read(void *base, ms_ring *r, void *dst, size_t n)
{
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED), head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    size_t have = (size_t)(head - tail);
    if (n > have) n = have;
    if (!n) return 0;
    const char *data = (const char *)base + r->data_off;
    size_t at = (size_t)(tail & (r->size - 1)), first = r->size - at < n ? r->size - at : n;
    memcpy(dst, data + at, first);
    memcpy((char *)dst + first, data, n - first);
    __atomic_store_n(&r->tail, tail + n, __ATOMIC_SEQ_CST);
    /* a producer waiting for room (a full ring) */
    if (__atomic_load_n(&r->space.sleeping, __ATOMIC_SEQ_CST)) ms_bell_ring(&r->space);
    return n;
}

/* ---- doorbells ------------------------------------------------------------------------------ */

static long futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    /* not FUTEX_PRIVATE_FLAG: the word is shared between processes */
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

uint32_t ms_bell_seq(ms_doorbell *b) { return __atomic_load_n(&b->seq, __ATOMIC_SEQ_CST); }

void ms_bell_ring(ms_doorbell *b)
{
    __atomic_add_fetch(&b->seq, 1, __ATOMIC_SEQ_CST);
    /* the system call only when the waiter said it sleeps: no cost while both sides spin */
    if (__atomic_load_n(&b->sleeping, __ATOMIC_SEQ_CST)) futex(&b->seq, FUTEX_WAKE, INT_MAX, NULL);
}

int ms_bell_wait(ms_doorbell *b, uint32_t seen, int64_t timeout_ns, int (*more)(void *arg), void *arg)
{
    __atomic_store_n(&b->sleeping, 1, __ATOMIC_SEQ_CST);
    /* after saying so, look once more: a writer that published before it saw the flag did not wake us */
    if ((more && more(arg)) || __atomic_load_n(&b->seq, __ATOMIC_SEQ_CST) != seen) {
        __atomic_store_n(&b->sleeping, 0, __ATOMIC_SEQ_CST);
        return 1;
    }
    struct timespec ts = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
    long rc = futex(&b->seq, FUTEX_WAIT, seen, timeout_ns >= 0 ? &ts : NULL);
    int e = errno;
    __atomic_store_n(&b->sleeping, 0, __ATOMIC_SEQ_CST);
    return !(rc < 0 && e == ETIMEDOUT);
}

void ms_shm_notify_server(void *base, int rank)
{
    ms_shm_header *h = base;
    __atomic_fetch_or(&dirty_words(base)[rank / 64], 1ULL << (rank % 64), __ATOMIC_SEQ_CST);
    ms_bell_ring(&h->server_bell);
}

uint64_t ms_shm_take_dirty(void *base, int word)
{
    uint64_t *w = &dirty_words(base)[word];
    if (!__atomic_load_n(w, __ATOMIC_RELAXED)) return 0;   /* no write to the shared line when idle */
    return __atomic_exchange_n(w, 0, __ATOMIC_SEQ_CST);
}

int ms_shm_pid_gone(int pid)
{
    if (pid <= 0) return 0;
    if (kill(pid, 0) < 0) return errno == ESRCH;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    const char *rp = strrchr(buf, ')');   /* "pid (comm) state ..." */
    return rp && (rp[1] == ' ') && (rp[2] == 'Z' || rp[2] == 'X');
}
