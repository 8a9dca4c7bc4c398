/* How ranks reach the server: the run's secret and the hello over TCP, pending connections, and
 * the shared-memory transport. */
#define _GNU_SOURCE
#include "server_internal.h"

static int secret_equal(const char *a, const char *b)
{
    unsigned char d = 0;
    for (int i = 0; i < MS_SECRET_LEN; i++) d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* Connections that have not said hello yet: at most this many at once (the oldest goes first,
 * it had the longest), each for at most MS_HELLO_DEADLINE_S. A rank says hello right after it
 * connects, so a few seconds cover oversubscribed nodes; strangers cannot hold the server's
 * descriptors or its poll loop for long. */
#define MS_HELLO_DEADLINE_S 5.0
static size_t pending_limit(const ms_server *s) { return (size_t)(s->nranks < 64 ? 64 : s->nranks); }

void srv_drop_pending(ms_server *s, size_t i, const char *why)
{
    if (why) {
        /* the first few are named; all are counted in the report (rejected_connections) */
        if (s->rejected_connections++ < 5)
            fprintf(stderr, "mpisim: refused a connection to the model server: %s%s\n", why,
                    s->rejected_connections == 5 ? " (further refusals are only counted in the report)" : "");
    }
    if (s->pending[i].fd >= 0 && why) close(s->pending[i].fd);
    free(s->pending[i].in.p);
    s->pending[i] = s->pending[--s->npending];
}

/* Whether a HELLO may join this run (NULL) or why not. */
static const char *check_hello(ms_server *s, const ms_msg_header *h, const ms_msg_hello *hello)
{
    if (h->type != MS_MSG_HELLO || h->length != sizeof *hello || hello->magic != MS_PROTO_MAGIC)
        return "not an mpisim rank";
    if (hello->version != MS_PROTO_VERSION || hello->sizes_check != ms_proto_sizes_check())
        return "a rank built from another mpisim version";
    if (!secret_equal(hello->secret, s->secret)) return "wrong secret (a rank of another run?)";
    if (hello->rank < 0 || hello->rank >= s->nranks || hello->size != s->nranks)
        return "rank or job size does not match this run";
    if (ms_driver_state(s->drv, hello->rank) != MS_RANK_UNCONNECTED) return "this rank is already connected";
    return NULL;
}

/* Every rank has attached (either way): nobody else may open the segment by its name. */
static void all_attached(ms_server *s)
{
    if (!s->shm || s->shm_unlinked || s->tcp_ranks + s->shm_ranks < s->nranks) return;
    shm_unlink(s->shm_name);
    s->shm_unlinked = 1;
}

static void accept_rank(ms_server *s, rank_info *r, const ms_msg_hello *hello)
{
    r->pid = hello->pid;
    memcpy(r->host, hello->hostname, sizeof r->host);
    r->host[sizeof r->host - 1] = 0;
    memcpy(r->binding, hello->binding, sizeof r->binding);
    r->binding[sizeof r->binding - 1] = 0;
    ms_driver_connect(s->drv, hello->rank);
    s->nconnected++;
    s->last_connect = wall_now();
    s->connect_clock.idle_s = 0;   /* a rank connected: the startup moves */
    srv_send_msg(r, MS_MSG_WELCOME, &s->welcome, sizeof s->welcome, NULL, 0);
}

/* A connection that has not yet said who it is. */
void srv_read_pending(ms_server *s, size_t i)
{
    pending_conn *c = &s->pending[i];
    char tmp[sizeof(ms_msg_header) + sizeof(ms_msg_hello)];
    ssize_t n = read(c->fd, tmp, sizeof tmp - c->in.len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        srv_drop_pending(s, i, "closed before introducing itself");
        return;
    }
    srv_buf_put(&c->in, tmp, (size_t)n);
    if (c->in.len < sizeof tmp) return;
    ms_msg_header h;
    ms_msg_hello hello;
    memcpy(&h, c->in.p, sizeof h);
    memcpy(&hello, c->in.p + sizeof h, sizeof hello);
    const char *why = check_hello(s, &h, &hello);
    if (why) {
        srv_drop_pending(s, i, why);
        return;
    }
    rank_info *r = &s->ranks[hello.rank];
    r->fd = c->fd;
    accept_rank(s, r, &hello);
    srv_flush_rank(r);
    s->tcp_ranks++;
    c->fd = -1;
    srv_drop_pending(s, i, NULL);
    all_attached(s);
}

/* ---- the shared-memory transport ---------------------------------------------------------- */

/* Slot `rank` has bytes up (a HELLO from a rank attaching, or messages of an attached rank), or
 * its rank left. */
static void read_shm_rank(ms_server *s, int rank)
{
    rank_info *r = &s->ranks[rank];
    ms_shm_slot *sl = ms_shm_slot_at(s->shm, rank);
    uint32_t state = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
    if (r->shm_closed || state == MS_SLOT_REFUSED) return;
    for (;;) {
        if (srv_buf_room(&r->in, 65536, 131072) < 0) return;
        size_t n = ms_ring_read(s->shm, &sl->up, r->in.p + r->in.len, r->in.cap - r->in.len);
        r->in.len += n;
        if (n == 0 || r->in.len < r->in.cap) break;
    }
    if (!r->shm) {
        /* authenticated as a TCP connection is: the slot says which rank it is, the HELLO must agree */
        ms_msg_header h;
        ms_msg_hello hello;
        if (r->in.len < sizeof h + sizeof hello) return;
        memcpy(&h, r->in.p, sizeof h);
        memcpy(&hello, r->in.p + sizeof h, sizeof hello);
        const char *why = check_hello(s, &h, &hello);
        if (!why && (hello.rank != rank || r->fd >= 0)) why = "its slot in the shared segment is another rank's";
        if (why) {
            s->rejected_connections++;
            fprintf(stderr, "mpisim: refused a rank attaching through shared memory: %s\n", why);
            __atomic_store_n(&sl->state, MS_SLOT_REFUSED, __ATOMIC_RELEASE);
            ms_bell_ring(&sl->rank_bell);
            r->in.len = 0;
            return;
        }
        r->shm = 1;
        s->shm_ranks++;
        memmove(r->in.p, r->in.p + sizeof h + sizeof hello, r->in.len - sizeof h - sizeof hello);
        r->in.len -= sizeof h + sizeof hello;
        accept_rank(s, r, &hello);
        srv_flush_shm(s, rank);
        all_attached(s);
    }
    srv_drain_input(s, rank);
    if (state == MS_SLOT_CLOSED) {   /* read after the state: what it wrote before it left is in */
        r->in.len = 0;
        srv_rank_gone(s, rank);
    }
}

/* Read every slot written since the last look; how many there were. */
int srv_read_shm(ms_server *s)
{
    int got = 0;
    for (int w = 0; w < ms_shm_dirty_words(s->nranks); w++) {
        uint64_t bits = ms_shm_take_dirty(s->shm, w);
        while (bits) {
            int b = __builtin_ctzll(bits);
            bits &= bits - 1;
            read_shm_rank(s, w * 64 + b);
            got++;
        }
    }
    return got;
}

/* A rank attached through shared memory has no socket whose close says it died: look at its
 * process now and then (it runs on this host, in this PID namespace). */
void srv_check_shm_pids(ms_server *s, int launcher_done)
{
    for (int i = 0; i < s->nranks; i++) {
        rank_info *r = &s->ranks[i];
        if (!r->shm || r->shm_closed) continue;
        if (launcher_done || ms_shm_pid_gone(r->pid)) {
            read_shm_rank(s, i);   /* what it wrote before it went */
            if (!r->shm_closed) srv_rank_gone(s, i);
        }
    }
}

int ms_server_shm(ms_server *s, char *name, size_t len, char *err, size_t errlen)
{
    /* The name is visible to every user in /dev/shm, so it carries a token of its own, not the
     * secret the ranks present (which stays in their environment); mode 0600 keeps other users
     * out, and the name goes once every rank has attached. */
    unsigned char raw[8];
    int rfd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (rfd < 0 || read(rfd, raw, sizeof raw) != (ssize_t)sizeof raw) {
        if (rfd >= 0) close(rfd);
        return fail(err, errlen, "cannot read /dev/urandom for the shared segment's name");
    }
    close(rfd);
    int o = snprintf(s->shm_name, sizeof s->shm_name, "/mpisim-%d-", (int)getpid());
    for (size_t i = 0; i < sizeof raw; i++) o += snprintf(s->shm_name + o, sizeof s->shm_name - (size_t)o, "%02x", raw[i]);
    int fd = shm_open(s->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return fail(err, errlen, "cannot create the shared segment %s: %s", s->shm_name, strerror(errno));
    s->shm_bytes = ms_shm_bytes(s->nranks);
    /* every page allocated now: a sparse segment on a tmpfs someone fills meanwhile gives SIGBUS at
     * the first write of a ring (mpisim and the ranks died so, "Bus error", no report) */
    int e = fchmod(fd, 0600) < 0 ? errno : posix_fallocate(fd, 0, (off_t)s->shm_bytes);
    if (e) {
        close(fd);
        shm_unlink(s->shm_name);
        return fail(err, errlen, "cannot allocate the shared segment (%zu KiB for %d ranks) in /dev/shm: %s",
                    s->shm_bytes >> 10, s->nranks, strerror(e));
    }
    void *base = mmap(NULL, s->shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        shm_unlink(s->shm_name);
        return fail(err, errlen, "cannot map the shared segment: %s", strerror(errno));
    }
    ms_shm_init(base, s->nranks);
    ((ms_shm_header *)base)->server_pid = (int32_t)getpid();
    s->shm = base;
    snprintf(name, len, "%s", s->shm_name);
    return 0;
}

static void drop_oldest_pending(ms_server *s, const char *why)
{
    size_t old = 0;
    for (size_t i = 1; i < s->npending; i++)
        if (s->pending[i].deadline < s->pending[old].deadline) old = i;
    if (s->npending) srv_drop_pending(s, old, why);
}

void srv_accept_all(ms_server *s)
{
    for (int k = 0; k < 256; k++) {   /* a bounded batch: the ranks' traffic goes on meanwhile */
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors: the listen socket stays readable, and polling it again at
                 * once would spin. Free one (the oldest stranger) and rest the socket a while,
                 * longer each time it happens again */
                drop_oldest_pending(s, "no file descriptors left for new connections");
                s->accept_backoff = s->accept_backoff > 0 ? s->accept_backoff * 2 : 0.01;
                if (s->accept_backoff > 1.0) s->accept_backoff = 1.0;
                s->accept_resume = wall_now() + s->accept_backoff;
            }
            return;
        }
        s->accept_backoff = 0;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (s->npending >= pending_limit(s)) drop_oldest_pending(s, "too many connections that have not said hello");
        if (s->npending == s->cap_pending) {
            size_t nc = s->cap_pending ? s->cap_pending * 2 : 64;
            pending_conn *q = realloc(s->pending, sizeof *q * nc);
            if (!q) {
                close(fd);
                s->rejected_connections++;
                continue;
            }
            s->pending = q;
            s->cap_pending = nc;
        }
        pending_conn *c = &s->pending[s->npending++];
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->deadline = wall_now() + MS_HELLO_DEADLINE_S;
    }
}

/* A deadlock: ask every waiting rank where its program called from, report when they said. */
