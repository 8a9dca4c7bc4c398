/* The shim's connection to the model server: see transport.h. */
#define _GNU_SOURCE
#include "transport.h"
#include "ms_shm.h"
#include "protocol.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

void ms_tp_init(ms_transport *t)
{
    memset(t, 0, sizeof *t);
    t->fd = -1;
}

int ms_tp_connect_tcp(ms_transport *t, const char *spec)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof host) return -1;
    const char *h0 = spec, *h1 = colon;
    if (*h0 == '[' && h1 > h0 && h1[-1] == ']') {   /* [::1]:port */
        h0++;
        h1--;
    }
    memcpy(host, h0, (size_t)(h1 - h0));
    host[h1 - h0] = 0;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    t->fd = fd;
    return 0;
}

/* Map the server's segment `name` if it is this user's and this version's and has slot `rank`;
 * NULL (and why) otherwise. */
static void *map_segment(const char *name, int rank, size_t *bytes_out, char *err, size_t errlen)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open the shared segment %s: %s", name, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        /* not created by this user's server, or open to others: never trust it */
        close(fd);
        snprintf(err, errlen, "the shared segment %s is not this user's private segment", name);
        return NULL;
    }
    size_t bytes = (size_t)st.st_size;
    void *base = bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "cannot map the shared segment %s", name);
        return NULL;
    }
    const ms_shm_header *h = base;
    if (ms_shm_check(base, bytes) < 0 || rank < 0 || rank >= h->nranks) {
        munmap(base, bytes);
        snprintf(err, errlen, "the shared segment %s is not a segment of this mpisim version for rank %d", name, rank);
        return NULL;
    }
    if (ms_shm_pid_gone(h->server_pid)) {
        /* its mpisim was killed before this rank came: nobody would ever answer */
        int pid = h->server_pid;
        munmap(base, bytes);
        snprintf(err, errlen, "the model server (mpisim, pid %d) has ended: its run was stopped before this rank "
                 "reached MPI_Init", pid);
        return NULL;
    }
    *bytes_out = bytes;
    return base;
}

int ms_tp_attach_shm(ms_transport *t, const char *name, int rank, char *err, size_t errlen)
{
    size_t bytes = 0;
    void *base = map_segment(name, rank, &bytes, err, errlen);
    if (!base) return -1;
    const ms_shm_header *h = base;
    ms_shm_slot *sl = ms_shm_slot_at(base, rank);
    /* LEFT_EARLY too: a child process of this rank's (a shell the program ran before MPI_Init)
     * may have ended with its environment */
    uint32_t expect = MS_SLOT_FREE;
    if (!__atomic_compare_exchange_n(&sl->state, &expect, MS_SLOT_CLAIMED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
        (expect != MS_SLOT_LEFT_EARLY ||
         !__atomic_compare_exchange_n(&sl->state, &expect, MS_SLOT_CLAIMED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))) {
        munmap(base, bytes);
        snprintf(err, errlen, "slot %d of the shared segment is taken (two processes with one rank?)", rank);
        return -1;
    }
    sl->pid = (int32_t)getpid();
    t->shm = base;
    t->shm_bytes = bytes;
    t->slot = sl;
    t->rank = rank;
    t->server_pid = h->server_pid;
    return 0;
}

void ms_tp_note_left_early(const char *name, int rank)
{
    char why[8];
    size_t bytes = 0;
    void *base = map_segment(name, rank, &bytes, why, sizeof why);
    if (!base) return;
    ms_shm_header *h = base;
    ms_shm_slot *sl = ms_shm_slot_at(base, rank);
    /* the order first, then the state the server reads it by */
    if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == MS_SLOT_FREE) {
        __atomic_store_n(&sl->left_order, __atomic_add_fetch(&h->early_exits, 1, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
        uint32_t expect = MS_SLOT_FREE;
        if (__atomic_compare_exchange_n(&sl->state, &expect, MS_SLOT_LEFT_EARLY, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            ms_shm_notify_server(base, rank);
    }
    munmap(base, bytes);
}

int ms_tp_put(ms_transport *t, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    size_t need = t->out_len + sizeof h + alen + blen;
    if (need > t->out_cap) {
        size_t cap = t->out_cap ? t->out_cap : 65536;
        while (cap < need) cap *= 2;
        char *p = realloc(t->out, cap);
        if (!p) return -1;
        t->out = p;
        t->out_cap = cap;
    }
    memcpy(t->out + t->out_len, &h, sizeof h);
    t->out_len += sizeof h;
    if (alen) memcpy(t->out + t->out_len, a, alen);
    t->out_len += alen;
    if (blen) memcpy(t->out + t->out_len, b, blen);
    t->out_len += blen;
    return 0;
}

static int refused(const ms_transport *t)
{
    return __atomic_load_n(&t->slot->state, __ATOMIC_ACQUIRE) == MS_SLOT_REFUSED;
}

/* After a sleep that saw nothing: is the server still there? (It has no socket whose close
 * would tell us.) Once a second or so: a kill(2) per timed-out sleep would be a system call too. */
static int server_gone(ms_transport *t)
{
    if (++t->quiet_waits % 256) return 0;
    return ms_shm_pid_gone(t->server_pid);
}

static int ring_has_room(void *arg)
{
    const ms_transport *t = arg;
    return ms_ring_writable(&t->slot->up) > 0 || refused(t);
}

static int flush_shm(ms_transport *t)
{
    size_t off = 0;
    while (off < t->out_len) {
        if (refused(t)) return -1;
        ms_ring *up = &t->slot->up;
        uint32_t seen = ms_bell_seq(&up->space);
        size_t w = ms_ring_write(t->shm, up, t->out + off, t->out_len - off);
        if (w) {
            off += w;
            ms_shm_notify_server(t->shm, t->rank);
            continue;
        }
        /* full: the server drains every written ring on its next turn */
        if (!ms_bell_wait(&up->space, seen, 1000000, ring_has_room, t) && server_gone(t)) return -1;
    }
    t->out_len = 0;
    return 0;
}

int ms_tp_flush(ms_transport *t)
{
    if (t->shm) return flush_shm(t);
    size_t off = 0;
    while (off < t->out_len) {
        /* a server gone is an error to report, not a SIGPIPE that kills the program */
        ssize_t w = send(t->fd, t->out + off, t->out_len - off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd p = {t->fd, POLLOUT, 0};
                poll(&p, 1, 10);
                continue;
            }
            return -1;
        }
        off += (size_t)w;
    }
    t->out_len = 0;
    return 0;
}

static int in_reserve(ms_transport *t)
{
    if (t->in_cap - t->in_len >= 65536) return 0;
    size_t cap = t->in_cap ? t->in_cap * 2 : 131072;
    char *q = realloc(t->in, cap);
    if (!q) return -1;
    t->in = q;
    t->in_cap = cap;
    return 0;
}

static int down_ready(void *arg)
{
    const ms_transport *t = arg;
    return ms_ring_readable(&t->slot->down) > 0 || refused(t);
}

static long read_shm(ms_transport *t, int64_t wait_us)
{
    ms_ring *down = &t->slot->down;
    uint32_t seen = ms_bell_seq(&t->slot->rank_bell);
    if (!ms_ring_readable(down) && wait_us > 0) {
        t->sleeps++;
        if (ms_bell_wait(&t->slot->rank_bell, seen, wait_us * 1000, down_ready, t)) t->quiet_waits = 0;
        else if (server_gone(t)) return -1;
    }
    if (refused(t)) return -1;
    long got = 0;
    for (;;) {
        if (in_reserve(t) < 0) return -1;
        size_t n = ms_ring_read(t->shm, down, t->in + t->in_len, t->in_cap - t->in_len);
        t->in_len += n;
        got += (long)n;
        if (n == 0 || t->in_len < t->in_cap) break;
    }
    return got;
}

long ms_tp_read(ms_transport *t, int wait_ms) { return ms_tp_read_us(t, (int64_t)wait_ms * 1000); }

long ms_tp_read_us(ms_transport *t, int64_t wait_us)
{
    if (t->shm) return read_shm(t, wait_us);
    struct pollfd pfd = {t->fd, POLLIN, 0};
    int n = poll(&pfd, 1, wait_us > 0 ? (int)((wait_us + 999) / 1000) : 0);
    if (n <= 0) return 0;
    long got = 0;
    for (;;) {
        if (in_reserve(t) < 0) return -1;
        ssize_t r = read(t->fd, t->in + t->in_len, t->in_cap - t->in_len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN) break;
        if (r <= 0) return -1;
        t->in_len += (size_t)r;
        got += r;
        if (t->in_len < t->in_cap) break;
    }
    return got;
}

void ms_tp_kick(ms_transport *t, int rank)
{
    if (!t->shm || rank < 0 || rank == t->rank || rank >= ((const ms_shm_header *)t->shm)->nranks) return;
    ms_shm_slot *sl = ms_shm_slot_at(t->shm, rank);
    /* only a sleeper needs it: a rank that spins drives its real MPI already */
    if (__atomic_load_n(&sl->rank_bell.sleeping, __ATOMIC_SEQ_CST)) ms_bell_ring(&sl->rank_bell);
}

int ms_tp_server_alive(const ms_transport *t)
{
    return !(t->shm && ms_shm_pid_gone(t->server_pid));
}

int ms_tp_send_now(ms_transport *t, uint32_t type, const void *a, size_t alen)
{
    char buf[sizeof(ms_msg_header) + 1200];
    if (alen > sizeof buf - sizeof(ms_msg_header)) return -1;
    ms_msg_header h = {type, (uint32_t)alen};
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, a, alen);
    size_t n = sizeof h + alen;
    if (t->shm) {
        if (refused(t) || ms_ring_writable(&t->slot->up) < n) return -1;
        ms_ring_write(t->shm, &t->slot->up, buf, n);
        ms_shm_notify_server(t->shm, t->rank);
        return 0;
    }
    if (t->fd < 0) return -1;
    return send(t->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n ? 0 : -1;
}

size_t ms_tp_next(const ms_transport *t)
{
    ms_msg_header h;
    if (t->in_len < sizeof h) return 0;
    memcpy(&h, t->in, sizeof h);
    return t->in_len - sizeof h >= h.length ? sizeof h + h.length : 0;
}

void ms_tp_consume(ms_transport *t, size_t n)
{
    memmove(t->in, t->in + n, t->in_len - n);
    t->in_len -= n;
}

void ms_tp_close(ms_transport *t)
{
    if (t->fd >= 0) close(t->fd);
    if (t->shm) {
        /* what a socket's close says: everything up the ring was the last */
        __atomic_store_n(&t->slot->state, MS_SLOT_CLOSED, __ATOMIC_RELEASE);
        ms_shm_notify_server(t->shm, t->rank);
        munmap(t->shm, t->shm_bytes);
    }
    free(t->out);
    free(t->in);
    ms_tp_init(t);
}
