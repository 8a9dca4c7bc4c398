// The one front-end driver (libmpisim/driver): its rules, and the proof that the two front ends
// make the same model calls.
//
// Online == offline: a trace is fed (a) to the real co-simulation server over TCP by fake ranks
// that send each record as the shim sends it (clocks rebuilt as the shim keeps them: recorded
// computation, the WELCOME's call costs, the resume times), and (b) to replay. The driver's call
// log (every ms_model call with its arguments, every resume with its results, one line each) must
// be the same per rank, in the same order; the wildcard resolutions the same per rank. Calls of
// no rank (running the model up to a horizon) differ by nature: online the horizon follows live
// ranks, offline every rank runs ahead until it blocks.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "ms_coll.h"
#include "ms_driver.h"
#include "ms_replay.h"
#include "ms_server.h"
#include "ms_trace.h"
#include "protocol.h"
#include "synth_trace.h"
}

// The wire's values of the model's fields (protocol.h: MS_WIRE_X for the model's MS_X): the server
// hands the messages' modes, kinds and peers to the driver as they are, so they must be the same.
#define SAME_AS_MODEL(x) static_assert((long long)MS_WIRE_##x == (long long)MS_##x, "protocol.h: MS_WIRE_" #x)
SAME_AS_MODEL(ANY_SOURCE); SAME_AS_MODEL(ANY_TAG); SAME_AS_MODEL(PROC_NULL); SAME_AS_MODEL(COLL_ROOT_NONE);
SAME_AS_MODEL(WAIT_ALL); SAME_AS_MODEL(WAIT_ANY); SAME_AS_MODEL(WAIT_SOME); SAME_AS_MODEL(TEST_ALL);
SAME_AS_MODEL(TEST_ANY); SAME_AS_MODEL(TEST_SOME); SAME_AS_MODEL(TEST_PEEK); SAME_AS_MODEL(SEND_STANDARD);
SAME_AS_MODEL(SEND_SYNC); SAME_AS_MODEL(SEND_READY); SAME_AS_MODEL(SEND_BUFFERED); SAME_AS_MODEL(COLL_BARRIER);
SAME_AS_MODEL(COLL_BCAST); SAME_AS_MODEL(COLL_REDUCE); SAME_AS_MODEL(COLL_ALLREDUCE); SAME_AS_MODEL(COLL_GATHER);
SAME_AS_MODEL(COLL_SCATTER); SAME_AS_MODEL(COLL_ALLGATHER); SAME_AS_MODEL(COLL_ALLTOALL);
SAME_AS_MODEL(COLL_REDUCE_SCATTER); SAME_AS_MODEL(COLL_SCAN); SAME_AS_MODEL(COLL_EXSCAN); SAME_AS_MODEL(COLL_GATHERV);
SAME_AS_MODEL(COLL_SCATTERV); SAME_AS_MODEL(COLL_ALLGATHERV); SAME_AS_MODEL(COLL_ALLTOALLV);
SAME_AS_MODEL(COLL_NEIGHBOR); SAME_AS_MODEL(COLL_COUNT); SAME_AS_MODEL(RMA_PUT); SAME_AS_MODEL(RMA_GET);
SAME_AS_MODEL(RMA_ACCUMULATE); SAME_AS_MODEL(RMA_GET_ACCUMULATE); SAME_AS_MODEL(RMA_FETCH_AND_OP);
SAME_AS_MODEL(RMA_COMPARE_AND_SWAP); SAME_AS_MODEL(RMA_LOCK_SHARED); SAME_AS_MODEL(RMA_LOCK_EXCLUSIVE);
SAME_AS_MODEL(RMA_UNLOCK); SAME_AS_MODEL(RMA_KIND_COUNT);
static_assert(MS_COMM_WORLD_ID == MS_COMM_WORLD && MS_COMM_SELF_ID == MS_COMM_SELF, "protocol.h: MS_COMM_*_ID");
#undef SAME_AS_MODEL

namespace {

struct CallLog {
    std::vector<std::vector<std::string>> calls, resolves;
    explicit CallLog(int n) : calls(n), resolves(n) {}
};

void collect(void *user, int rank, const char *line)
{
    auto *log = static_cast<CallLog *>(user);
    if (rank < 0) return;   // running the model: depends on how ranks interleave
    if (!strncmp(line, "resolve ", 8)) log->resolves[rank].push_back(line);
    else log->calls[rank].push_back(line);
}

nm_config *config_for(const ms_trace *t, std::vector<std::string> sets = {})
{
    setenv("MPISIM_PROFILE_PATH", MPISIM_SOURCE_PROFILE_DIR, 1);
    std::vector<const char *> s;
    for (auto &x : sets) s.push_back(x.c_str());
    char warn[2048], err[1024] = "";
    nm_config *cfg = ms_replay_config(t, nullptr, s.data(), (int)s.size(), warn, sizeof warn, err, sizeof err);
    EXPECT_NE(cfg, nullptr) << err;
    return cfg;
}

// ---- the offline path -------------------------------------------------------------------------

CallLog offline(const ms_trace *t, const nm_config *cfg, ms_replay_result *res)
{
    CallLog log(t->nranks);
    ms_replay_opts o = {1.0, MS_WILDCARDS_VIRTUAL, nullptr, collect, &log, nullptr, nullptr};
    char err[1024] = "";
    EXPECT_EQ(ms_replay_run(t, cfg, &o, res, err, sizeof err), 0) << err;
    return log;
}

// ---- the online path: fake ranks send a trace's records as the shim does -----------------------

bool write_all(int fd, const void *p, size_t n)
{
    const char *c = static_cast<const char *>(p);
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

bool read_all(int fd, void *p, size_t n)
{
    char *c = static_cast<char *>(p);
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= (size_t)r;
    }
    return true;
}

bool send_msg(int fd, uint32_t type, const void *a, size_t alen, const void *b = nullptr, size_t blen = 0)
{
    ms_msg_header h = {type, (uint32_t)(alen + blen)};
    return write_all(fd, &h, sizeof h) && (!alen || write_all(fd, a, alen)) && (!blen || write_all(fd, b, blen));
}

// Read until the message `want` (RESUME or FIN_OK); its time in *t. Resolutions are skipped.
bool await(int fd, uint32_t want, int64_t *t)
{
    for (;;) {
        ms_msg_header h;
        if (!read_all(fd, &h, sizeof h)) return false;
        std::vector<char> p(h.length);
        if (h.length && !read_all(fd, p.data(), h.length)) return false;
        if (h.type == MS_MSG_ABORT || h.type == MS_MSG_DESCRIBE) return false;
        if (h.type != want) continue;
        if (want == MS_MSG_RESUME) {
            ms_msg_resume rs;
            memcpy(&rs, p.data(), sizeof rs);
            *t = rs.t;
        }
        return true;
    }
}

int connect_to(const std::string &endpoint)
{
    int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (sockaddr *)&a, sizeof a) != 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

bool play_rank(const std::string &endpoint, const std::string &secret, const ms_trace *t, int rank)
{
    int fd = connect_to(endpoint);
    if (fd < 0) return false;
    ms_msg_hello hello;
    memset(&hello, 0, sizeof hello);
    hello.magic = MS_PROTO_MAGIC;
    hello.version = MS_PROTO_VERSION;
    hello.rank = rank;
    hello.size = t->nranks;
    hello.sizes_check = ms_proto_sizes_check();
    memcpy(hello.secret, secret.data(), MS_SECRET_LEN);
    ms_msg_header h;
    ms_msg_welcome w;
    if (!send_msg(fd, MS_MSG_HELLO, &hello, sizeof hello) || !read_all(fd, &h, sizeof h) ||
        h.type != MS_MSG_WELCOME || h.length != sizeof w || !read_all(fd, &w, sizeof w))
        return false;
    const ms_trace_rank *tr = &t->ranks[rank];
    int64_t clock = 0;
    bool ok = true;
    for (size_t k = 0; ok && k < tr->nev; k++) {
        const ms_trace_event *e = &tr->ev[k];
        switch (e->kind) {
        case MS_TRACE_CALL:
            clock += e->compute_ps > 0 ? e->compute_ps : 0;
            break;
        case MS_TRACE_ISEND: {
            ms_msg_isend m = {clock, e->req, e->comm, e->bytes, e->peer, e->tag, e->mode, e->fn, e->callsite};
            ok = send_msg(fd, MS_MSG_ISEND, &m, sizeof m);
            clock += w.isend_cost_base_ps + w.isend_cost_per_byte_ps * (int64_t)e->bytes;
            break;
        }
        case MS_TRACE_IRECV: {
            ms_msg_irecv m = {clock, e->req, e->comm, e->bytes, e->peer, e->tag, e->fn,
                              e->flags & MS_TRACE_FLAG_NOTIFY ? MS_IRECV_NOTIFY : 0, e->callsite};
            ok = send_msg(fd, MS_MSG_IRECV, &m, sizeof m);
            clock += w.irecv_cost_base_ps + w.irecv_cost_per_byte_ps * (int64_t)e->bytes;
            break;
        }
        case MS_TRACE_ICOLL: {
            ms_msg_icoll m = {clock, e->req, e->comm, e->bytes, e->mode, e->peer, e->list_n, e->fn, e->flags, 0};
            ok = send_msg(fd, MS_MSG_ICOLL, &m, sizeof m, e->list_n > 0 ? tr->lists + e->list_off : nullptr,
                          sizeof(uint64_t) * (size_t)(e->list_n > 0 ? e->list_n : 0));
            break;
        }
        case MS_TRACE_RMA: {
            ms_msg_rma m = {clock, e->req, e->comm, e->bytes, e->callsite, e->peer, e->mode, e->fn, 0};
            ok = send_msg(fd, MS_MSG_RMA, &m, sizeof m);
            clock += w.isend_cost_base_ps + w.isend_cost_per_byte_ps * (int64_t)e->bytes;
            break;
        }
        case MS_TRACE_COMM_ADD: {
            const ms_trace_comm *c = &t->comms[e->list_off];
            ms_msg_comm_add m = {c->id, c->size, 0};
            ok = send_msg(fd, MS_MSG_COMM_ADD, &m, sizeof m, t->members + c->offset, sizeof(int32_t) * (size_t)c->size);
            break;
        }
        case MS_TRACE_CANCEL:
        case MS_TRACE_FREE: {
            ms_msg_cancel m = {clock, e->req, e->fn, 0};
            ok = send_msg(fd, e->kind == MS_TRACE_CANCEL ? MS_MSG_CANCEL : MS_MSG_FREE, &m, sizeof m);
            break;
        }
        case MS_TRACE_WAIT: {
            ms_msg_wait m = {clock, e->mode, e->list_n, e->fn, e->flags, 0};
            ok = send_msg(fd, MS_MSG_WAIT, &m, sizeof m, e->list_n > 0 ? tr->lists + e->list_off : nullptr,
                          sizeof(uint64_t) * (size_t)e->list_n) &&
                 await(fd, MS_MSG_RESUME, &clock);
            break;
        }
        case MS_TRACE_PROBE: {
            ms_msg_probe m = {clock, e->comm, e->peer, e->tag, e->mode, e->fn, 0};
            ok = send_msg(fd, MS_MSG_PROBE, &m, sizeof m) && await(fd, MS_MSG_RESUME, &clock);
            break;
        }
        case MS_TRACE_UNMODELLED:
            ok = send_msg(fd, MS_MSG_UNMODELLED, tr->text + e->list_off, strlen(tr->text + e->list_off) + 1);
            break;
        case MS_TRACE_FINALIZE: {
            ms_msg_finalize m;
            memset(&m, 0, sizeof m);
            m.t = clock;
            int64_t unused;
            ok = send_msg(fd, MS_MSG_FINALIZE, &m, sizeof m) && await(fd, MS_MSG_FIN_OK, &unused);
            k = tr->nev;
            break;
        }
        default:   // the recording's own records (resumes, resolutions, exits): not sent
            break;
        }
    }
    close(fd);
    return ok;
}

CallLog online(const ms_trace *t, const nm_config *cfg, std::string *outcome)
{
    CallLog log(t->nranks);
    char err[1024] = "";
    ms_server *s = ms_server_create();
    char *argv[] = {(char *)"trace"};
    EXPECT_EQ(ms_server_configure(s, cfg, t->nranks, 1, argv, err, sizeof err), 0) << err;
    ms_server_set_call_log(s, collect, &log);
    char endpoint[256];
    EXPECT_EQ(ms_server_listen(s, "127.0.0.1", "127.0.0.1", endpoint, sizeof endpoint, err, sizeof err), 0) << err;
    std::string secret = ms_server_secret(s), ep = endpoint;
    fflush(nullptr);
    pid_t child = fork();
    if (child == 0) {
        alarm(100);   // a rank that never gets its answer fails the test instead of hanging it
        std::vector<std::thread> ranks;
        std::vector<char> ok((size_t)t->nranks, 0);
        for (int r = 0; r < t->nranks; r++)
            ranks.emplace_back([&, r] { ok[(size_t)r] = play_rank(ep, secret, t, r); });
        int bad = 0;
        for (int r = 0; r < t->nranks; r++) {
            ranks[(size_t)r].join();
            bad += !ok[(size_t)r];
        }
        _exit(bad ? 1 : 0);
    }
    int status = 0;
    EXPECT_EQ(ms_server_run(s, child, &status, err, sizeof err), 0) << err;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a fake rank failed (status " << status << ")";
    char buf[8192];
    if (ms_server_outcome(s, buf, sizeof buf) != 0) *outcome = buf;
    ms_server_destroy(s);
    return log;
}

// Both paths, then the comparison, rank by rank and line by line.
void expect_same_calls(const ms_trace *t, std::vector<std::string> sets = {}, size_t min_lines = 1)
{
    nm_config *cfg = config_for(t, sets);
    ASSERT_NE(cfg, nullptr);
    ms_replay_result res;
    CallLog off = offline(t, cfg, &res);
    EXPECT_EQ(res.outcome, 0) << res.outcome_text;
    std::string outcome;
    CallLog on = online(t, cfg, &outcome);
    EXPECT_EQ(outcome, "");
    size_t total = 0;
    for (int r = 0; r < t->nranks; r++) {
        const auto &a = on.calls[(size_t)r], &b = off.calls[(size_t)r];
        total += a.size();
        size_t i = 0;
        while (i < a.size() && i < b.size() && a[i] == b[i]) i++;
        EXPECT_EQ(a.size(), b.size()) << "rank " << r << ": online made " << a.size() << " calls, replay " << b.size();
        if (i < a.size() || i < b.size())
            ADD_FAILURE() << "rank " << r << " call " << i << " differs:\n  online: " << (i < a.size() ? a[i] : "(none)")
                          << "\n  replay: " << (i < b.size() ? b[i] : "(none)");
        EXPECT_EQ(on.resolves[(size_t)r], off.resolves[(size_t)r]) << "rank " << r << ": wildcard resolutions";
    }
    EXPECT_GE(total, min_lines) << "too few model calls to prove anything";
    ms_replay_result_free(&res);
    nm_config_destroy(cfg);
}

// Four ranks through most of what the driver does: a communicator creation whose members all
// finish at once (held, then released together), wildcard receives and a blocking probe, a
// nonblocking probe and a test that find nothing yet, a cancelled receive, a freed send, a
// rendezvous message, a v-collective on the new communicator, a bcast.
ms_trace *mixed_trace()
{
    synth *s = synth_new(4);
    const uint64_t W = MS_COMM_WORLD, C = 100;
    const int32_t members[4] = {3, 2, 1, 0};
    for (int r = 0; r < 4; r++) {
        synth_call(s, r, SY_COMM_SPLIT, 0);
        uint64_t q = synth_icoll(s, r, MS_COLL_ALLREDUCE, 0, 16, W);
        synth_wait(s, r, MS_WAIT_ALL, 1, &q, MS_TRACE_FLAG_SYNC);
        synth_comm_add(s, r, C, 4, members);
        synth_exit(s, r, SY_COMM_SPLIT);
    }
    // rank 1: eager message to 0, a small send it frees, then the collectives
    synth_call(s, 1, SY_ISEND, 1000000);
    uint64_t a = synth_isend(s, 1, 0, 5, 64, W);
    synth_wait(s, 1, MS_WAIT_ALL, 1, &a, 0);
    uint64_t f = synth_isend(s, 1, 2, 1, 8, W);
    synth_free(s, 1, f);
    // rank 2: a rendezvous message to 0 (above the eager threshold), the freed send's receive
    synth_call(s, 2, SY_ISEND, 500000);
    uint64_t b = synth_isend(s, 2, 0, 6, 100000, W);
    synth_wait(s, 2, MS_WAIT_ALL, 1, &b, 0);
    uint64_t g = synth_irecv(s, 2, 1, 1, 8, W);
    synth_wait(s, 2, MS_WAIT_ALL, 1, &g, 0);
    // rank 0: blocking wildcard probe, two wildcard receives, then a synchronous send to 3
    synth_call(s, 0, SY_PROBE, 0);
    synth_probe(s, 0, MS_ANY_SOURCE, MS_ANY_TAG, 1, W);
    uint64_t q0[2] = {synth_irecv(s, 0, MS_ANY_SOURCE, MS_ANY_TAG, 100000, W),
                      synth_irecv(s, 0, MS_ANY_SOURCE, MS_ANY_TAG, 100000, W)};
    synth_wait(s, 0, MS_WAIT_ALL, 2, q0, 0);
    synth_call(s, 0, SY_ISEND, 2000000);
    uint64_t d = synth_isend(s, 0, 3, 9, 8, W);
    synth_wait(s, 0, MS_WAIT_ALL, 1, &d, 0);
    // rank 3: a nonblocking probe finds nothing, a receive nobody sends is cancelled, a test
    // before the message is there, then the wait
    synth_call(s, 3, SY_PROBE, 0);
    synth_probe(s, 3, MS_ANY_SOURCE, MS_ANY_TAG, 0, W);
    uint64_t c = synth_irecv(s, 3, 0, 99, 8, W);
    synth_cancel(s, 3, c);
    synth_wait(s, 3, MS_WAIT_ALL, 1, &c, 0);
    uint64_t e = synth_irecv(s, 3, 0, 9, 8, W);
    synth_wait(s, 3, MS_TEST_ALL, 1, &e, 0);
    synth_wait(s, 3, MS_WAIT_ALL, 1, &e, 0);
    // everyone: an alltoallv on the new communicator, a bcast on it, a barrier on the world
    for (int r = 0; r < 4; r++) {
        const uint64_t counts[4] = {100, 2000, 30000, (uint64_t)(400 * (r + 1))};
        synth_call(s, r, SY_ALLREDUCE, 100000 * (uint64_t)r);
        uint64_t v = synth_icollv(s, r, MS_COLL_ALLTOALLV, 0, 0, C, 4, counts);
        synth_wait(s, r, MS_WAIT_ALL, 1, &v, 0);
        uint64_t x = synth_icoll(s, r, MS_COLL_BCAST, 2, 50000, C);
        synth_wait(s, r, MS_WAIT_ALL, 1, &x, 0);
        uint64_t y = synth_icoll(s, r, MS_COLL_BARRIER, 0, 0, W);
        synth_wait(s, r, MS_WAIT_ALL, 1, &y, 0);
        synth_finalize(s, r);
    }
    return synth_finish(s);
}

// Three ranks under the host model's registration cache: rank 0 posts wildcard receives and,
// behind them, receives naming a sender that the shim holds back from the real MPI (NOTIFY: the
// model resolves them when it matches them), every buffer with its address (a reused buffer hits
// the cache, a new one registers). Rendezvous sizes, so that registration costs time.
ms_trace *held_trace()
{
    synth *s = synth_new(3);
    const uint64_t W = MS_COMM_WORLD, n = 40000;
    for (int round = 0; round < 3; round++) {
        const uint64_t base = 0x7f0000000000ull + (uint64_t)round * 0x100000;   // round 1 reuses round 0's
        const uint64_t off = round == 1 ? 0 : base;
        synth_call(s, 0, SY_WAITALL, 200000);
        uint64_t q[4];
        q[0] = synth_irecv(s, 0, MS_ANY_SOURCE, 5, n, W);
        synth_post_details(s, 0, off + 0x10000, 0);
        q[1] = synth_irecv(s, 0, 1, 5, n, W);
        synth_post_details(s, 0, off + 0x20000, MS_TRACE_FLAG_NOTIFY);
        q[2] = synth_irecv(s, 0, 2, MS_ANY_TAG, n, W);
        synth_post_details(s, 0, off + 0x30000, 0);
        q[3] = synth_irecv(s, 0, 2, 5, n, W);
        synth_post_details(s, 0, off + 0x40000, MS_TRACE_FLAG_NOTIFY);
        synth_wait(s, 0, MS_WAIT_ALL, 4, q, 0);
        synth_exit(s, 0, SY_WAITALL);
        for (int r = 1; r < 3; r++) {
            synth_call(s, r, SY_WAITALL, 100000 * (uint64_t)r);
            uint64_t p[2];
            for (int k = 0; k < 2; k++) {
                p[k] = synth_isend(s, r, 0, 5, n, W);
                synth_post_details(s, r, 0x7e0000000000ull + (uint64_t)(0x10000 * k), 0);   // the same two each round
            }
            synth_wait(s, r, MS_WAIT_ALL, 2, p, 0);
            synth_exit(s, r, SY_WAITALL);
        }
    }
    for (int r = 0; r < 3; r++) synth_finalize(s, r);
    return synth_finish(s);
}

// Three ranks through one-sided communication and an intercommunicator: puts, gets and an
// accumulate to two targets completed by one wait (a flush), two exclusive locks of rank 0 that
// the model serialises, a fetching atomic and a get-accumulate, a fence's barrier on the
// window's communicator, post/start/complete/wait as its zero-byte notices, then collectives of
// an intercommunicator ({0, 1} and {2}) on the union of its groups.
ms_trace *rma_trace()
{
    synth *s = synth_new(3);
    const uint64_t WIN = 200, U = 300;
    const int32_t members[3] = {0, 1, 2};
    for (int r = 0; r < 3; r++) {
        synth_comm_add(s, r, WIN, 3, members);
        synth_comm_add(s, r, U, 3, members);
    }
    synth_call(s, 0, SY_WAITALL, 100000);
    uint64_t q0[3] = {synth_rma(s, 0, MS_RMA_PUT, 1, 64, 0, WIN), synth_rma(s, 0, MS_RMA_GET, 2, 0, 4096, WIN),
                      synth_rma(s, 0, MS_RMA_ACCUMULATE, 1, 800, 0, WIN)};
    synth_wait(s, 0, MS_WAIT_ALL, 3, q0, 0);
    for (int r = 1; r < 3; r++) {
        synth_call(s, r, SY_WAIT, 300000 * (uint64_t)r);
        uint64_t l = synth_rma(s, r, MS_RMA_LOCK_EXCLUSIVE, 0, 0, 0, WIN);
        synth_wait(s, r, MS_WAIT_ALL, 1, &l, 0);
        uint64_t o = r == 1 ? synth_rma(s, r, MS_RMA_PUT, 0, 100000, 0, WIN)
                            : synth_rma(s, r, MS_RMA_FETCH_AND_OP, 0, 8, 8, WIN);
        synth_wait(s, r, MS_WAIT_ALL, 1, &o, 0);
        uint64_t u = synth_rma(s, r, MS_RMA_UNLOCK, 0, 0, 0, WIN);
        synth_wait(s, r, MS_WAIT_ALL, 1, &u, 0);
    }
    for (int r = 0; r < 3; r++) {
        synth_call(s, r, SY_BARRIER, 0);
        uint64_t b = synth_icoll(s, r, MS_COLL_BARRIER, 0, 0, WIN);
        synth_wait(s, r, MS_WAIT_ALL, 1, &b, 0);
    }
    // rank 0 exposes its window to 1 and 2; they put and get-accumulate, then say they are done
    synth_call(s, 0, SY_WAIT, 0);
    uint64_t done[2] = {synth_irecv(s, 0, 1, 1, 0, WIN), synth_irecv(s, 0, 2, 1, 0, WIN)};
    for (int r = 1; r < 3; r++) synth_free(s, 0, synth_isend(s, 0, r, 0, 0, WIN));
    synth_wait(s, 0, MS_WAIT_ALL, 2, done, 0);
    for (int r = 1; r < 3; r++) {
        synth_call(s, r, SY_WAIT, 0);
        uint64_t post = synth_irecv(s, r, 0, 0, 0, WIN);
        synth_wait(s, r, MS_WAIT_ALL, 1, &post, 0);
        uint64_t o = r == 1 ? synth_rma(s, r, MS_RMA_PUT, 0, 30000, 0, WIN)
                            : synth_rma(s, r, MS_RMA_GET_ACCUMULATE, 0, 16, 16, WIN);
        synth_wait(s, r, MS_WAIT_ALL, 1, &o, 0);
        uint64_t d = synth_isend(s, r, 0, 1, 0, WIN);
        synth_wait(s, r, MS_WAIT_ALL, 1, &d, 0);
    }
    // the intercommunicator: an allreduce, a bcast from the high group's only member (MPI_ROOT
    // there, its union rank 2 in the low group), a barrier, an alltoallv
    for (int r = 0; r < 3; r++) {
        synth_call(s, r, SY_ALLREDUCE, 50000);
        uint64_t a = synth_icoll(s, r, MS_COLL_ALLREDUCE, 0, 64, U);
        synth_inter(s, r, 2);
        synth_wait(s, r, MS_WAIT_ALL, 1, &a, 0);
        uint64_t b = synth_icoll(s, r, MS_COLL_BCAST, 2, 20000, U);
        synth_inter(s, r, 2);
        synth_wait(s, r, MS_WAIT_ALL, 1, &b, 0);
        uint64_t c = synth_icoll(s, r, MS_COLL_BARRIER, 0, 0, U);
        synth_inter(s, r, 2);
        synth_wait(s, r, MS_WAIT_ALL, 1, &c, 0);
        const uint64_t lo[2] = {100, 2000}, hi[4] = {2000, 2000, 100, 100};   // send counts, then receive counts
        uint64_t v = synth_icollv(s, r, MS_COLL_ALLTOALLV, 0, 0, U, r < 2 ? 2 : 4, r < 2 ? lo : hi);
        synth_inter(s, r, 2);
        synth_wait(s, r, MS_WAIT_ALL, 1, &v, 0);
        synth_finalize(s, r);
    }
    return synth_finish(s);
}

}  // namespace

TEST(OnlineEqualsOffline, PingPong)
{
    ms_trace *t = synth_pingpong(5, 70000, 3000000);
    expect_same_calls(t, {}, 40);
    ms_trace_free(t);
}

TEST(OnlineEqualsOffline, StencilAnalytic)
{
    ms_trace *t = synth_stencil(4, 3, 2048, 1000000);
    expect_same_calls(t, {"network.engine=analytic"}, 100);
    ms_trace_free(t);
}

TEST(OnlineEqualsOffline, Fan)
{
    ms_trace *t = synth_fan(4, 2, 30000);
    expect_same_calls(t, {}, 40);
    ms_trace_free(t);
}

TEST(OnlineEqualsOffline, MixedCalls)
{
    ms_trace *t = mixed_trace();
    expect_same_calls(t, {}, 60);
    ms_trace_free(t);
}

// Receives held back behind wildcards (NOTIFY) and buffer addresses: both are event fields the
// server decodes from the wire and replay takes from the trace; dropping either on one side
// changes the call log (the addresses, the flag) and the resolutions (a NOTIFY receive's).
TEST(OnlineEqualsOffline, HeldBackReceivesAndBuffers)
{
    ms_trace *t = held_trace();
    const std::vector<std::string> host = {"host.reg_cost=2 us", "host.reg_cost_per_page=990000",
                                           "host.reg_cache=131072"};
    expect_same_calls(t, host, 40);
    // the held-back receives are resolved (online as offline, compared above), and the addresses
    // reach the model: without them every buffer is taken as reused (a cache hit), with them the
    // new buffers of rounds 0 and 2 register, which takes time
    nm_config *cfg = config_for(t, host);
    ms_replay_result with, without;
    CallLog off = offline(t, cfg, &with);
    EXPECT_EQ(off.resolves[0].size(), 12u) << "6 wildcards and 6 held-back receives";
    for (int r = 0; r < t->nranks; r++)
        for (size_t k = 0; k < t->ranks[r].nev; k++) t->ranks[r].ev[k].callsite = 0;
    offline(t, cfg, &without);
    EXPECT_LT(without.ranks[0].virtual_end_ps, with.ranks[0].virtual_end_ps) << "unknown buffers count as reused";
    ms_replay_result_free(&with);
    ms_replay_result_free(&without);
    nm_config_destroy(cfg);
    ms_trace_free(t);
}

// One-sided communication and intercommunicators: new event kinds and fields (RMA, ICOLL's low
// group) that the server decodes from the wire and replay takes from the trace; also with the
// target's CPU doing the operations (held turns, like a host-driven rendezvous).
TEST(OnlineEqualsOffline, OneSidedAndIntercomm)
{
    ms_trace *t = rma_trace();
    expect_same_calls(t, {}, 60);
    expect_same_calls(t, {"host.rma_progress=in_call"}, 60);
    ms_trace_free(t);
}

// A real capture shipped with the results (8 ranks of matmul), under its recorded configuration.
TEST(OnlineEqualsOffline, RecordedMatmul)
{
    char err[1024] = "";
    ms_trace *t = ms_trace_read_h5(MPISIM_SOURCE_DIR "/results/casestudy_matmul64.h5", err, sizeof err);
    ASSERT_NE(t, nullptr) << err;
    expect_same_calls(t, {}, 100);
    ms_trace_free(t);
}

// ---- the driver's own rules, without a front end ------------------------------------------------

namespace {

struct Drv {
    nm_config *cfg = nullptr;
    ms_driver *d = nullptr;
    std::vector<std::pair<int, int64_t>> resumes;
    explicit Drv(int n)
    {
        char err[1024] = "";
        cfg = nm_config_create();
        EXPECT_EQ(ms_driver_register_keys(cfg, err, sizeof err), 0) << err;
        EXPECT_EQ(nm_config_set(cfg, "network.engine=analytic", "test", err, sizeof err), 0) << err;
        d = ms_driver_create(cfg, n, err, sizeof err);
        EXPECT_NE(d, nullptr) << err;
        static const ms_driver_ops ops = {on_resume, nullptr};
        ms_driver_set_ops(d, &ops, this);
    }
    ~Drv()
    {
        ms_driver_destroy(d);
        nm_config_destroy(cfg);
    }
    static void on_resume(void *user, int rank, int, int64_t t, const ms_req_result *, size_t)
    {
        static_cast<Drv *>(user)->resumes.push_back({rank, t});
    }
    int apply(int rank, ms_driver_event e)
    {
        char err[1024] = "";
        int rc = ms_driver_apply(d, rank, &e, err, sizeof err);
        EXPECT_EQ(rc, 0) << err;
        return rc;
    }
    int advance()
    {
        char err[1024] = "";
        int rc = ms_driver_advance(d, err, sizeof err);
        EXPECT_GE(rc, 0) << err;
        return rc;
    }
};

ms_driver_event wait_on(int64_t t, const uint64_t *q, size_t n, int flags = 0)
{
    ms_driver_event e{};
    e.kind = MS_EV_WAIT;
    e.t = t;
    e.mode = MS_WAIT_ALL;
    e.list = q;
    e.nlist = n;
    e.flags = flags;
    return e;
}

// A send or receive (kind), or a clock event (MS_EV_CLOCK: only t).
ms_driver_event event(int kind, int64_t t, uint64_t req = 0, int peer = 0, uint64_t bytes = 0)
{
    ms_driver_event e{};
    e.kind = kind;
    e.t = t;
    e.req = req;
    e.peer = peer;
    e.bytes = bytes;
    return e;
}

}  // namespace

TEST(Driver, HorizonIsTheLeastClockOfRunningRanks)
{
    Drv x(3);
    EXPECT_EQ(ms_driver_horizon(x.d), 0) << "unconnected ranks hold the horizon at 0";
    for (int r = 0; r < 3; r++) ms_driver_connect(x.d, r);
    ms_driver_event c{};
    c.kind = MS_EV_CLOCK;
    c.t = 500;
    x.apply(0, c);
    c.t = 300;
    x.apply(1, c);
    c.t = 900;
    x.apply(2, c);
    EXPECT_EQ(ms_driver_horizon(x.d), 300);
    ms_driver_event u{};
    u.kind = MS_EV_UNTIMED;
    x.apply(1, u);
    EXPECT_EQ(ms_driver_horizon(x.d), 500) << "a rank in an untimed call does not hold the horizon";
    EXPECT_EQ(ms_driver_state(x.d, 1), MS_RANK_UNTIMED);
    ms_driver_event f{};
    f.kind = MS_EV_FINALIZE;
    f.t = 600;
    x.apply(0, f);
    EXPECT_EQ(ms_driver_horizon(x.d), 900);
}

TEST(Driver, SynchronisingGroupLeavesTogetherAtTheLatestTime)
{
    Drv x(3);
    for (int r = 0; r < 3; r++) ms_driver_connect(x.d, r);
    for (int r = 0; r < 3; r++) {
        ms_driver_event e{};
        e.kind = MS_EV_ICOLL;
        e.t = 1000000 * r;   // the last member arrives 2 us after the first
        e.req = 1;
        e.comm = MS_COMM_WORLD;
        e.bytes = 16;
        e.mode = MS_COLL_ALLREDUCE;
        x.apply(r, e);
        uint64_t q = 1;
        x.apply(r, wait_on(e.t, &q, 1, MS_EV_FLAG_SYNC));
    }
    for (int i = 0; i < 10 && x.resumes.size() < 3; i++) x.advance();
    ASSERT_EQ(x.resumes.size(), 3u);
    for (auto &r : x.resumes) EXPECT_EQ(r.second, x.resumes[0].second) << "rank " << r.first;
    EXPECT_GT(x.resumes[0].second, 2000000);
}

TEST(Driver, RejoinAfterAnUntimedCallGoesOnAtOnce)
{
    Drv x(1);
    ms_driver_connect(x.d, 0);
    ms_driver_event u{};
    u.kind = MS_EV_UNTIMED;
    x.apply(0, u);
    x.apply(0, wait_on(1234, nullptr, 0, MS_EV_FLAG_REJOIN));
    ASSERT_EQ(x.resumes.size(), 1u) << "resumed from inside apply";
    EXPECT_EQ(x.resumes[0].second, 1234);
    EXPECT_EQ(ms_driver_state(x.d, 0), MS_RANK_RUNNING);
}

// A rank in an untimed call does not hold the horizon back, so the model moves on without it:
// here to rank 1's receive posted at 1 us, a model event the network never sees. The rank comes
// back at the model's time, not the network's (still 0), nor its own clock before the call, or its
// next post is refused as "before the model's time" (cosim_mpiio under load).
TEST(Driver, RejoinIsNeverBeforeTheModelsTime)
{
    Drv x(2);
    ms_driver_connect(x.d, 0);
    ms_driver_connect(x.d, 1);
    x.apply(0, event(MS_EV_CLOCK, 500));
    ms_driver_event u{};
    u.kind = MS_EV_UNTIMED;
    x.apply(0, u);
    x.apply(1, event(MS_EV_IRECV, 1000000, 1, 0, 8));
    uint64_t q = 1;
    x.apply(1, wait_on(1000000, &q, 1));
    x.advance();
    ASSERT_GE(ms_driver_now(x.d), 1000000) << "the model ran past the untimed rank";
    x.apply(0, wait_on(600, nullptr, 0, MS_EV_FLAG_REJOIN));
    ASSERT_EQ(x.resumes.size(), 1u);
    EXPECT_EQ(x.resumes[0].first, 0);
    EXPECT_GE(x.resumes[0].second, ms_driver_now(x.d));
    EXPECT_EQ(ms_driver_horizon(x.d), x.resumes[0].second) << "the rank holds the horizon from its rejoin time";
    ASSERT_EQ(x.apply(0, event(MS_EV_ISEND, x.resumes[0].second, 1, 1, 8)), 0) << "its next post is accepted";
    x.apply(0, wait_on(x.resumes[0].second, &q, 1));
    for (int i = 0; i < 10 && x.resumes.size() < 2; i++) x.advance();
    ASSERT_EQ(x.resumes.size(), 2u);
    EXPECT_EQ(x.resumes[1].first, 0) << "the eager send completes";
    x.apply(0, event(MS_EV_FINALIZE, x.resumes[1].second));
    for (int i = 0; i < 10 && x.resumes.size() < 3; i++) x.advance();
    ASSERT_EQ(x.resumes.size(), 3u);
    EXPECT_EQ(x.resumes[2].first, 1) << "the message is received";
    EXPECT_GT(x.resumes[2].second, x.resumes[0].second);
}

TEST(Driver, StallIsADeadlockOrARankThatDied)
{
    for (int die = 0; die < 2; die++) {
        Drv x(2);
        static const char *const names[] = {"MPI_Recv"};
        ms_driver_set_fn_names(x.d, names, 1);
        ms_driver_connect(x.d, 0);
        ms_driver_connect(x.d, 1);
        ms_driver_event e{};
        e.kind = MS_EV_IRECV;
        e.t = 10;
        e.req = 7;
        e.peer = 1;
        e.bytes = 8;
        x.apply(0, e);
        uint64_t q = 7;
        ms_driver_event w = wait_on(10, &q, 1);
        w.fn = 0;
        x.apply(0, w);
        if (die) {
            ms_driver_rank_gone(x.d, 1);
        } else {
            e.peer = 0;
            x.apply(1, e);
            x.apply(1, w);
        }
        EXPECT_EQ(x.advance(), 1) << "every rank waits or has ended and nothing is in flight";
        char text[4096];
        int kind = ms_driver_describe_stall(x.d, text, sizeof text, nullptr, nullptr);
        EXPECT_EQ(kind, die ? 2 : 1) << text;
        EXPECT_NE(strstr(text, die ? "rank 1 ended without MPI_Finalize" : "deadlock in virtual time"), nullptr) << text;
        EXPECT_NE(strstr(text, "rank 0 at 0.000010 us in MPI_Recv"), nullptr) << text;
    }
}

TEST(Driver, LenientWaitsLeaveOutWhatTheModelAlreadyCompleted)
{
    for (int lenient = 0; lenient < 2; lenient++) {
        Drv x(2);
        ms_driver_set_lenient_waits(x.d, lenient);
        ms_driver_connect(x.d, 0);
        ms_driver_connect(x.d, 1);
        x.apply(0, event(MS_EV_ISEND, 0, 1, 1, 8));
        x.apply(1, event(MS_EV_IRECV, 0, 1, 0, 8));
        uint64_t q = 1;
        x.apply(0, wait_on(0, &q, 1));
        x.apply(1, wait_on(0, &q, 1));
        ms_driver_event fin{};
        fin.kind = MS_EV_FINALIZE;
        for (int i = 0; i < 10 && x.resumes.size() < 2; i++) {
            ASSERT_EQ(x.advance(), 0);
            // a running rank holds the horizon at its clock: rank 0 ends, so that rank 1's
            // receive can complete
            if (ms_driver_state(x.d, 0) == MS_RANK_RUNNING) {
                fin.t = ms_driver_clock(x.d, 0);
                x.apply(0, fin);
            }
        }
        ASSERT_EQ(x.resumes.size(), 2u);
        // the recording waits on request 1 again (a polling loop of a capture-only trace)
        char err[1024] = "";
        ms_driver_event again = wait_on(ms_driver_clock(x.d, 1), &q, 1);
        int rc = ms_driver_apply(x.d, 1, &again, err, sizeof err);
        if (lenient) EXPECT_EQ(rc, 0) << err;
        else EXPECT_NE(strstr(err, "the model refused a wait"), nullptr) << err;
    }
}

// The stall watchdog goes through the driver's stall test: ranks that wait in the real MPI (they
// say so) or sit in an untimed call stop the run only when every other rank waits in the model or
// has ended and the model cannot move; a stalled rank that moves again clears it.
TEST(Driver, StallWatchdogStopsOnlyWhenNothingCanMove)
{
    Drv x(3);
    static const char *const names[] = {"MPI_Recv"};
    ms_driver_set_fn_names(x.d, names, 1);
    for (int r = 0; r < 3; r++) ms_driver_connect(x.d, r);
    // rank 0 waits in the model for a message of rank 1, which never sends it
    x.apply(0, event(MS_EV_IRECV, 10, 7, 1, 8));
    uint64_t q = 7;
    ms_driver_event w = wait_on(10, &q, 1);
    w.fn = 0;
    x.apply(0, w);
    x.apply(1, event(MS_EV_CLOCK, 20));
    x.apply(2, event(MS_EV_CLOCK, 20));
    EXPECT_EQ(x.advance(), 0) << "ranks 1 and 2 compute";
    ms_driver_rank_stalled(x.d, 1, "MPI_Send waits in the real MPI for its send to rank 2 tag 3");
    EXPECT_EQ(x.advance(), 0) << "rank 2 still computes";
    EXPECT_EQ(ms_driver_stuck(x.d), 0);
    ms_driver_event u{};
    u.kind = MS_EV_UNTIMED;
    x.apply(2, u);
    EXPECT_EQ(x.advance(), 0) << "rank 2 is inside an untimed call, not yet for the stall timeout";
    ms_driver_rank_stalled(x.d, 2, "inside the untimed call MPI_Win_fence for 60 s");
    EXPECT_EQ(x.advance(), 1) << "every rank stalled or waiting in the model";
    char text[4096];
    EXPECT_EQ(ms_driver_describe_stall(x.d, text, sizeof text, nullptr, nullptr), 3) << text;
    EXPECT_NE(strstr(text, "stall: ranks wait inside the real MPI"), nullptr) << text;
    EXPECT_NE(strstr(text, "rank 0 at 0.000010 us in MPI_Recv"), nullptr) << text;
    EXPECT_NE(strstr(text, "rank 1 at 0.000020 us: MPI_Send waits in the real MPI"), nullptr) << text;
    EXPECT_NE(strstr(text, "rank 2 at 0.000020 us: inside the untimed call MPI_Win_fence"), nullptr) << text;
    // rank 2 comes back from its untimed call: the job moves again
    x.apply(2, wait_on(30, nullptr, 0, MS_EV_FLAG_REJOIN));
    EXPECT_EQ(ms_driver_stuck(x.d), 0);
    EXPECT_EQ(x.advance(), 0);
    // rank 2 ends; rank 1 says it moves again, then is stalled anew
    x.apply(2, event(MS_EV_FINALIZE, 40));
    ms_driver_rank_stalled(x.d, 1, "");
    EXPECT_EQ(x.advance(), 0);
    ms_driver_rank_stalled(x.d, 1, "MPI_Send waits in the real MPI for its send to rank 2 tag 3");
    EXPECT_EQ(x.advance(), 1);
    // a rank that ended while stalled in MPI_Finalize (its detached sends) counts too; any event
    // of a stalled rank clears its stall
    ms_driver_rank_stalled(x.d, 2, "MPI_Finalize waits in the real MPI for its send to rank 1 tag 4");
    x.apply(1, event(MS_EV_CLOCK, 50));
    EXPECT_EQ(ms_driver_stuck(x.d), 0) << "rank 1 moved";
}

// A model that still has work below the horizon a stalled rank holds is not stuck: the watchdog
// waits for the model to run first.
TEST(Driver, StallWaitsForTheModel)
{
    Drv x(2);
    ms_driver_connect(x.d, 0);
    ms_driver_connect(x.d, 1);
    x.apply(0, event(MS_EV_ISEND, 0, 1, 1, 8));
    x.apply(1, event(MS_EV_IRECV, 0, 1, 0, 8));
    uint64_t q = 1;
    x.apply(1, wait_on(0, &q, 1));
    x.apply(0, event(MS_EV_CLOCK, 1000000000));   // rank 0 far ahead: the message arrives below its clock
    ms_driver_rank_stalled(x.d, 0, "MPI_Wait waits in the real MPI for a request mpisim does not time");
    EXPECT_TRUE(ms_driver_next_time(x.d) < ms_driver_clock(x.d, 0));
    EXPECT_EQ(ms_driver_stuck(x.d), 0) << "the model can still deliver the message";
    EXPECT_EQ(x.advance(), 0) << "the model ran, rank 1 is resumed and runs";
    ASSERT_EQ(x.resumes.size(), 1u);
    EXPECT_EQ(x.resumes[0].first, 1);
}

// MPI_THREAD_MULTIPLE: a rank's threads are lanes of their own. A thread first seen is parked
// until it rejoins; one thread blocked in the model and another running keep the rank running
// (the horizon is the running thread's clock); a resume names the thread whose wait it answers.
TEST(Driver, ThreadsOfARankBlockAndRunApart)
{
    Drv x(2);
    std::vector<int> threads;
    struct Cb {
        static void on_resume(void *user, int rank, int thread, int64_t t, const ms_req_result *, size_t)
        {
            auto *v = static_cast<std::pair<Drv *, std::vector<int> *> *>(user);
            v->first->resumes.push_back({rank, t});
            v->second->push_back(thread);
        }
    };
    std::pair<Drv *, std::vector<int> *> u{&x, &threads};
    static const ms_driver_ops ops = {Cb::on_resume, nullptr};
    ms_driver_set_ops(x.d, &ops, &u);
    for (int r = 0; r < 2; r++) ms_driver_connect(x.d, r);
    // rank 0's thread 1 joins at 100 ns: parked until its rejoin
    ms_driver_event j = wait_on(100000, nullptr, 0, MS_EV_FLAG_REJOIN);
    j.thread = 1;
    x.apply(0, j);
    EXPECT_EQ(ms_driver_threads(x.d, 0), 2);
    EXPECT_EQ(ms_driver_thread_state(x.d, 0, 1), MS_RANK_RUNNING);
    ASSERT_EQ(threads.size(), 1u);
    EXPECT_EQ(threads[0], 1);
    // thread 1 receives from rank 1 and blocks; thread 0 computes on to 5 us
    ms_driver_event rv = event(MS_EV_IRECV, 200000, 1, 1, 8);
    rv.thread = 1;
    x.apply(0, rv);
    uint64_t q = 1;
    ms_driver_event w = wait_on(200000, &q, 1);
    w.thread = 1;
    x.apply(0, w);
    EXPECT_EQ(ms_driver_thread_state(x.d, 0, 1), MS_RANK_BLOCKED);
    EXPECT_EQ(ms_driver_state(x.d, 0), MS_RANK_RUNNING) << "thread 0 runs while thread 1 waits";
    ms_driver_event c = event(MS_EV_CLOCK, 5000000);
    x.apply(0, c);
    c.t = 9000000;
    x.apply(1, c);
    EXPECT_EQ(ms_driver_horizon(x.d), 5000000) << "the running thread holds the horizon";
    // rank 1 sends at 9 us: thread 1 of rank 0 is resumed (not thread 0), after 9 us
    x.apply(1, event(MS_EV_ISEND, 9000000, 7, 0, 8));
    ms_driver_event f{};
    f.kind = MS_EV_FINALIZE;
    f.t = 9000000;
    x.apply(1, f);
    c.t = 50000000;
    x.apply(0, c);   // thread 0 computes on to 50 us: the horizon
    x.advance();
    ASSERT_GE(threads.size(), 2u);
    bool seen = false;
    for (size_t i = 1; i < threads.size(); i++)
        if (x.resumes[i].first == 0) {
            EXPECT_EQ(threads[i], 1);
            EXPECT_GT(x.resumes[i].second, 9000000);
            seen = true;
        }
    EXPECT_TRUE(seen) << "rank 0's thread 1 was never resumed";
}

// A thread parked idle (waiting for another thread of its rank) counts as waiting: with every
// other thread blocked and nothing pending, the job is stuck; parked untimed, it is not.
TEST(Driver, IdleThreadsCountAsWaiting)
{
    for (int idle = 0; idle < 2; idle++) {
        Drv x(1);
        ms_driver_connect(x.d, 0);
        ms_driver_event j = wait_on(0, nullptr, 0, MS_EV_FLAG_REJOIN);
        j.thread = 1;
        x.apply(0, j);
        x.apply(0, event(MS_EV_IRECV, 10, 1, 0, 8));   // thread 0 waits for a message never sent
        uint64_t q = 1;
        x.apply(0, wait_on(10, &q, 1));
        ms_driver_event p{};
        p.kind = idle ? MS_EV_IDLE : MS_EV_UNTIMED;
        p.thread = 1;
        p.t = 20;
        x.apply(0, p);
        EXPECT_EQ(x.advance(), idle ? 1 : 0) << (idle ? "idle" : "untimed");
    }
}
