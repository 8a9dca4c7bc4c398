// Replay: closed-form times on the analytic engine, determinism, compute scaling, sync groups,
// wildcards, deadlocks, killed ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ms_model.h"
#include "ms_replay.h"
#include "ms_trace.h"
#include "protocol.h"
#include "synth_trace.h"

namespace {

constexpr int64_t TAU = 6250;   // 1.28 Gb/s
int64_t prop_ps() { return (int64_t)std::llround(10.0 / 1.8e8 * 1e12); }
// analytic uncontended latency of one packet, h switches (seed 000 eq. 3)
int64_t lat(uint64_t payload, int h = 1) { return TAU * ((int64_t)payload + 4 + h) + (h + 1) * prop_ps(); }
constexpr int64_t OS = 400000, OR = 400000;

struct Outcome {
    ms_replay_result res{};
    bool ok = false;
    std::string err;
};

Outcome replay(const ms_trace *t, std::vector<std::string> sets, ms_replay_opts o = {1.0, MS_WILDCARDS_RECORDED, nullptr, nullptr, nullptr, nullptr, nullptr},
           const char *profile = "default")
{
    std::vector<const char *> s;
    for (auto &x : sets) s.push_back(x.c_str());
    char err[1024] = "";
    Outcome r;
    nm_config *cfg = ms_replay_config(t, profile, s.data(), (int)s.size(), nullptr, 0, err, sizeof err);
    if (!cfg) {
        r.err = err;
        return r;
    }
    r.ok = ms_replay_run(t, cfg, &o, &r.res, err, sizeof err) == 0;
    r.err = err;
    nm_config_destroy(cfg);
    return r;
}

const std::vector<std::string> ANALYTIC = {"network.engine=analytic", "mpi.send_overhead=400000",
                                           "mpi.recv_overhead=400000", "mpi.gap=0"};

}  // namespace

TEST(Replay, PingpongClosedFormOnAnalytic)
{
    for (uint64_t bytes : {0ull, 8ull, 1000ull}) {
        const int K = 10;
        ms_trace *t = synth_pingpong(K, bytes, 0);
        Outcome r = replay(t, ANALYTIC);
        ASSERT_TRUE(r.ok) << r.err;
        EXPECT_EQ(r.res.outcome, 0) << r.res.outcome_text;
        EXPECT_EQ(r.res.engine, std::string("analytic"));
        int64_t half = OS + lat(bytes) + OR;
        // rank 0 finishes when its last receive completes; rank 1 after its last send's overhead
        EXPECT_EQ(r.res.ranks[0].virtual_end_ps, 2 * K * half) << bytes;
        EXPECT_EQ(r.res.ranks[1].virtual_end_ps, 2 * K * half - half + OS) << bytes;
        EXPECT_EQ(r.res.ranks[0].msgs_sent, (uint64_t)K);
        EXPECT_EQ(r.res.ranks[1].msgs_recv, (uint64_t)K);
        EXPECT_EQ(r.res.ranks[0].status, MS_RR_FINALIZED);
        EXPECT_EQ(r.res.ranks[0].mpi_ps + r.res.ranks[0].compute_ps, r.res.ranks[0].virtual_end_ps);
        ms_replay_result_free(&r.res);
        ms_trace_free(t);
    }
}

TEST(Replay, ComputeIsAddedAndScaled)
{
    const int K = 5;
    const int64_t C = 3000000;   // 3 us before every round on both ranks
    ms_trace *t = synth_pingpong(K, 8, C);
    Outcome a = replay(t, ANALYTIC);
    ASSERT_TRUE(a.ok) << a.err;
    int64_t half = OS + lat(8) + OR;
    // rank 1's compute overlaps rank 0's send: each round costs C + 2 half
    EXPECT_EQ(a.res.ranks[0].virtual_end_ps, K * (C + 2 * half));
    EXPECT_EQ(a.res.ranks[0].compute_ps, K * C);
    ms_replay_opts o = {2.0, MS_WILDCARDS_RECORDED, nullptr, nullptr, nullptr, nullptr, nullptr};
    Outcome b = replay(t, ANALYTIC, o);
    ASSERT_TRUE(b.ok) << b.err;
    EXPECT_EQ(b.res.ranks[0].virtual_end_ps, K * (2 * C + 2 * half));
    EXPECT_EQ(b.res.ranks[0].compute_ps, 2 * K * C);
    // compute=none drops it
    auto sets = ANALYTIC;
    sets.push_back("compute=none");
    Outcome c = replay(t, sets);
    ASSERT_TRUE(c.ok) << c.err;
    EXPECT_EQ(c.res.ranks[0].virtual_end_ps, K * 2 * half);
    ms_replay_result_free(&a.res);
    ms_replay_result_free(&b.res);
    ms_replay_result_free(&c.res);
    ms_trace_free(t);
}

TEST(Replay, DeterministicOnMyrinetAndAnalytic)
{
    ms_trace *t = synth_stencil(16, 20, 512, 200000);
    for (const char *engine : {"analytic", "myrinet"}) {
        std::vector<std::string> sets = {std::string("network.engine=") + engine};
        Outcome a = replay(t, sets), b = replay(t, sets);
        ASSERT_TRUE(a.ok && b.ok) << a.err << b.err;
        EXPECT_EQ(a.res.outcome, 0) << a.res.outcome_text;
        for (int i = 0; i < 16; i++) {
            EXPECT_EQ(a.res.ranks[i].virtual_end_ps, b.res.ranks[i].virtual_end_ps);
            EXPECT_EQ(a.res.ranks[i].msgs_sent, 20u * 4u + 4u /* the barrier's dissemination rounds */);
        }
        EXPECT_GT(a.res.virtual_time_ps, 20 * 200000);
        ms_replay_result_free(&a.res);
        ms_replay_result_free(&b.res);
    }
    ms_trace_free(t);
}

// The replay checks each record just before it reads it (ms_trace_validate_events) rather than in
// a pass before it starts: a damaged record anywhere, in the middle of a rank's records, in the
// records a deadlock never reaches, or behind MPI_Finalize, is still the error
// ms_trace_validate names, with no result.
TEST(Replay, DamagedRecordsAreFoundWhereverTheyAre)
{
    struct Case {
        const char *what;
        int rank;
        double where;   // fraction of the rank's records
        bool after_finalize;
    } cases[] = {{"middle", 5, 0.5, false}, {"first", 0, 0.0, false}, {"last record", 15, 1.0, false},
                 {"behind MPI_Finalize", 7, 0.0, true}};
    for (const Case &c : cases) {
        ms_trace *t = synth_stencil(16, 20, 512, 200000);
        ms_trace_rank *r = &t->ranks[c.rank];
        size_t k = 0;
        if (c.after_finalize) {   // 300 CLOCK records, then a WAIT (whose list is out of range)
            ms_trace_event *ev = (ms_trace_event *)realloc(r->ev, (r->nev + 301) * sizeof *ev);
            ASSERT_NE(ev, nullptr);
            r->ev = ev;
            memset(&r->ev[r->nev], 0, 301 * sizeof *ev);
            for (int i = 0; i < 300; i++) r->ev[r->nev++].kind = MS_TRACE_CLOCK;
            k = r->nev++;
            r->ev[k].kind = MS_TRACE_WAIT;
        } else {
            k = c.where >= 1.0 ? r->nev - 1 : (size_t)(c.where * (double)r->nev);
            while (r->ev[k].kind != MS_TRACE_WAIT) k = k + 1 < r->nev ? k + 1 : 0;
        }
        r->ev[k].list_off = (int64_t)r->nlists + 1;
        r->ev[k].list_n = 2;
        char want[256], err[1024];
        ASSERT_LT(ms_trace_validate(t, "trace", want, sizeof want), 0);
        Outcome o = replay(t, {"network.engine=analytic"});
        EXPECT_FALSE(o.ok) << c.what;
        EXPECT_EQ(o.err, std::string(want)) << c.what;
        EXPECT_NE(o.err.find("rank " + std::to_string(c.rank) + " event " + std::to_string(k) + ":"),
                  std::string::npos) << c.what << ": " << o.err;
        EXPECT_EQ(o.res.ranks, nullptr) << c.what;
        (void)err;
        ms_trace_free(t);
    }
}

TEST(Replay, FanInAndOutFinish)
{
    ms_trace *t = synth_fan(8, 2, 2048);
    Outcome r = replay(t, {});
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 0) << r.res.outcome_text;
    EXPECT_EQ(r.res.engine, std::string("myrinet"));
    EXPECT_EQ(r.res.ranks[0].msgs_recv, 2u * 7u + 4u * 3u);   // + 4 barriers of 3 dissemination rounds
    ms_replay_result_free(&r.res);
    ms_trace_free(t);
}

// A polling receiver whose recording saw the message late: the replay's model completes the
// receive at the first MPI_Test, the trace tests it eight times more (recorded: not complete)
// and completes it at the tenth. The replay leaves it out of those tests and forgets it once the
// recording has completed it; the Waitall-only sender leaves nothing behind.
TEST(Replay, EarlyCompletionsAreForgotten)
{
    synth *s = synth_new(2);
    synth_send(s, 0, 0, 1, 9, 1024);
    synth_call(s, 1, SY_IRECV, 0);
    uint64_t q = synth_irecv(s, 1, 0, 9, 1024, MS_COMM_WORLD);
    synth_exit(s, 1, SY_IRECV);
    for (int i = 0; i < 10; i++) {
        synth_call(s, 1, SY_WAIT, 1000000);
        synth_wait(s, 1, MS_TEST_ALL, 1, &q, 0);
        ms_trace_result res{};
        res.req = q;
        res.completed = i == 9;
        res.complete_time = MS_TRACE_UNKNOWN_TIME;
        res.source = res.completed ? 0 : -1;
        res.tag = res.completed ? 9 : -1;
        res.bytes = res.completed ? 1024 : 0;
        synth_resume(s, 1, 0, 1, &res);
        synth_exit(s, 1, SY_WAIT);
    }
    for (int r = 0; r < 2; r++) synth_finalize(s, r);
    ms_trace *t = synth_finish(s);
    Outcome r = replay(t, {});
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 0) << r.res.outcome_text;
    EXPECT_EQ(r.res.ranks[1].msgs_recv, 1u);
    EXPECT_EQ(r.res.early_done_peak, 1u);
    EXPECT_EQ(r.res.early_done_end, 0u);
    ms_replay_result_free(&r.res);
    ms_trace_free(t);
}

TEST(Replay, SyncGroupLeavesTogether)
{
    // 3 ranks enter a communicator creation at different times: all leave at the latest exit
    synth *s = synth_new(3);
    int32_t mem[3] = {0, 1, 2};
    for (int r = 0; r < 3; r++) {
        synth_call(s, r, SY_COMM_SPLIT, (int64_t)r * 5000000);
        uint64_t q = synth_icoll(s, r, MS_COLL_ALLREDUCE, 0, 16, MS_COMM_WORLD);
        synth_wait(s, r, MS_WAIT_ALL, 1, &q, MS_WAIT_FLAG_SYNC);
        synth_exit(s, r, SY_COMM_SPLIT);
        synth_comm_add(s, r, 77, 3, mem);
        // a barrier on the new communicator
        synth_call(s, r, SY_BARRIER, 0);
        q = synth_icoll(s, r, MS_COLL_BARRIER, 0, 0, 77);
        synth_wait(s, r, MS_WAIT_ALL, 1, &q, 0);
        synth_exit(s, r, SY_BARRIER);
        synth_finalize(s, r);
    }
    ms_trace *t = synth_finish(s);
    Outcome r = replay(t, ANALYTIC);
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 0) << r.res.outcome_text;
    // after the creation all clocks are equal, so the barrier ends together too
    EXPECT_EQ(r.res.ranks[0].virtual_end_ps, r.res.ranks[1].virtual_end_ps);
    EXPECT_EQ(r.res.ranks[1].virtual_end_ps, r.res.ranks[2].virtual_end_ps);
    EXPECT_GT(r.res.ranks[0].virtual_end_ps, 10000000);
    ms_replay_result_free(&r.res);
    ms_trace_free(t);
}

TEST(Replay, WildcardsRecordedOrVirtual)
{
    // rank 0 receives twice from ANY_SOURCE; rank 2 sends at once, rank 1 after 50 us. The
    // recording says rank 1 came first (as if the real run went the other way).
    synth *s = synth_new(3);
    uint64_t q1, q2;
    synth_call(s, 0, SY_RECV, 0);
    q1 = synth_irecv(s, 0, MS_ANY_SOURCE, 3, 8, 0);
    synth_wait(s, 0, MS_WAIT_ALL, 1, &q1, 0);
    synth_resolve(s, 0, q1, 1, 3, 8);
    synth_exit(s, 0, SY_RECV);
    synth_call(s, 0, SY_RECV, 0);
    q2 = synth_irecv(s, 0, MS_ANY_SOURCE, 3, 8, 0);
    synth_wait(s, 0, MS_WAIT_ALL, 1, &q2, 0);
    synth_resolve(s, 0, q2, 2, 3, 8);
    synth_exit(s, 0, SY_RECV);
    synth_send(s, 1, 50000000, 0, 3, 8);
    synth_send(s, 2, 0, 0, 3, 8);
    for (int r = 0; r < 3; r++) synth_finalize(s, r);
    ms_trace *t = synth_finish(s);
    Outcome rec = replay(t, ANALYTIC, {1.0, MS_WILDCARDS_RECORDED, nullptr, nullptr, nullptr, nullptr, nullptr});
    Outcome virt = replay(t, ANALYTIC, {1.0, MS_WILDCARDS_VIRTUAL, nullptr, nullptr, nullptr, nullptr, nullptr});
    ASSERT_TRUE(rec.ok && virt.ok) << rec.err << virt.err;
    int64_t one = OS + lat(8) + OR;
    // virtual: the first receive takes rank 2 (at `one`), the second rank 1's late message
    EXPECT_EQ(virt.res.ranks[0].virtual_end_ps, 50000000 + one);
    // recorded: the first waits for rank 1; rank 2's message is already there for the second
    EXPECT_EQ(rec.res.ranks[0].virtual_end_ps, 50000000 + one + OR);
    ms_replay_result_free(&rec.res);
    ms_replay_result_free(&virt.res);
    ms_trace_free(t);
}

TEST(Replay, DeadlockAndKilledRanksAreReported)
{
    synth *s = synth_new(2);
    synth_recv(s, 0, 0, 1, 1, 8);   // both receive first: deadlock
    synth_recv(s, 1, 0, 0, 1, 8);
    ms_trace *t = synth_finish(s);
    Outcome r = replay(t, ANALYTIC);
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 1);
    EXPECT_NE(std::string(r.res.outcome_text).find("deadlock"), std::string::npos);
    EXPECT_NE(std::string(r.res.outcome_text).find("MPI_Waitall"), std::string::npos) << r.res.outcome_text;
    EXPECT_EQ(r.res.ranks[0].status, MS_RR_BLOCKED);
    ms_replay_result_free(&r.res);
    ms_trace_free(t);

    // rank 1's records stop after one exchange (killed): rank 0 finishes, rank 1 "died", and the
    // replay of such a partial trace is not "ok"
    s = synth_new(2);
    synth_send(s, 0, 0, 1, 1, 8);
    synth_recv(s, 1, 0, 0, 1, 8);
    synth_finalize(s, 0);
    t = synth_finish(s);
    r = replay(t, ANALYTIC);
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 2) << r.res.outcome_text;
    EXPECT_NE(std::string(r.res.outcome_text).find("partial trace"), std::string::npos) << r.res.outcome_text;
    EXPECT_NE(std::string(r.res.outcome_text).find("rank 1"), std::string::npos) << r.res.outcome_text;
    EXPECT_EQ(r.res.ranks[0].status, MS_RR_FINALIZED);
    EXPECT_EQ(r.res.ranks[1].status, MS_RR_DIED);
    EXPECT_EQ(r.res.ranks[1].virtual_end_ps, OS + lat(8) + OR);
    ms_replay_result_free(&r.res);
    ms_trace_free(t);
}

TEST(Replay, BadInputsAreErrorsNotCrashes)
{
    ms_trace *t = synth_pingpong(2, 8, 0);
    Outcome r = replay(t, {"network.no_such_key=1"});
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.err.find("no_such_key"), std::string::npos) << r.err;
    r = replay(t, {"network.topology=crossbar:1"});
    EXPECT_FALSE(r.ok);
    // a wait naming an unknown request: the model refuses it, the replay says where
    t->ranks[0].lists[0] = 999;
    r = replay(t, ANALYTIC);
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 2);
    EXPECT_NE(std::string(r.res.outcome_text).find("rank 0 event"), std::string::npos) << r.res.outcome_text;
    ms_replay_result_free(&r.res);
    ms_trace_free(t);
}

TEST(Replay, HugeComputationIsAnErrorNotAnOverflow)
{
    // two gaps of 2^59.9 ps each pass validation; their sum passes the clock's bound
    synth *s = synth_new(2);
    const int64_t big = (int64_t)1 << 60;
    for (int rank = 0; rank < 2; rank++) {
        synth_call(s, rank, SY_BARRIER, big);
        synth_exit(s, rank, SY_BARRIER);
        synth_call(s, rank, SY_BARRIER, big);
        synth_exit(s, rank, SY_BARRIER);
        synth_call(s, rank, SY_BARRIER, big);
        synth_exit(s, rank, SY_BARRIER);
        synth_call(s, rank, SY_BARRIER, big);
        synth_exit(s, rank, SY_BARRIER);
        synth_call(s, rank, SY_BARRIER, big);
        synth_exit(s, rank, SY_BARRIER);
        synth_finalize(s, rank);
    }
    ms_trace *t = synth_finish(s);
    Outcome r = replay(t, ANALYTIC);
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 2);
    EXPECT_NE(std::string(r.res.outcome_text).find("2^62 ps"), std::string::npos) << r.res.outcome_text;
    ms_replay_result_free(&r.res);
    // one gap scaled past the bound by --cpu-scale
    t->ranks[0].ev[0].compute_ps = 1000;
    r = replay(t, ANALYTIC, {1e300, MS_WILDCARDS_RECORDED, nullptr, nullptr, nullptr, nullptr, nullptr});
    ASSERT_TRUE(r.ok) << r.err;
    EXPECT_EQ(r.res.outcome, 2);
    EXPECT_NE(std::string(r.res.outcome_text).find("rank 0 event 0"), std::string::npos) << r.res.outcome_text;
    ms_replay_result_free(&r.res);
    // a gap beyond 2^60 ps is a damaged record: the trace does not validate
    t->ranks[1].ev[0].compute_ps = INT64_MAX;
    r = replay(t, ANALYTIC);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.err.find("rank 1 event 0"), std::string::npos) << r.err;
    ms_trace_free(t);
}

TEST(Replay, RecordedConfigurationIsTheDefault)
{
    ms_trace *t = synth_pingpong(3, 8, 0);
    t->config_json = strdup("{\"network.engine\": {\"value\": \"analytic\", \"unit\": \"\", \"source\": \"x\"},"
                            " \"mpi.send_overhead\": {\"value\": 1000000, \"unit\": \"ps\", \"source\": \"x\"},"
                            " \"network.gone_key\": {\"value\": 3}}");
    char warn[512], err[512];
    nm_config *cfg = ms_replay_config(t, nullptr, nullptr, 0, warn, sizeof warn, err, sizeof err);
    ASSERT_NE(cfg, nullptr) << err;
    EXPECT_STREQ(nm_config_string(cfg, "network.engine"), "analytic");
    EXPECT_EQ(nm_config_int(cfg, "mpi.send_overhead"), 1000000);
    EXPECT_NE(std::string(warn).find("network.gone_key"), std::string::npos);
    ms_replay_opts o = {1.0, MS_WILDCARDS_RECORDED, nullptr, nullptr, nullptr, nullptr, nullptr};
    ms_replay_result res;
    ASSERT_EQ(ms_replay_run(t, cfg, &o, &res, err, sizeof err), 0) << err;
    int64_t half = 1000000 + lat(8) + OR;
    EXPECT_EQ(res.ranks[0].virtual_end_ps, 2 * 3 * half);
    // the report is the online schema
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_EQ(ms_replay_write_report(f, t, "x.h5", cfg, &o, &res), 0);
    fclose(f);
    std::string rep(buf, len);
    free(buf);
    for (const char *k : {"\"schema\": \"mpisim-report/1\"", "\"virtual_end_ps\"", "\"compute_ps\"", "\"mpi_ps\"",
                          "\"msgs_sent\"", "\"bytes_recv\"", "\"summary\"", "\"replay\"", "\"config\""})
        EXPECT_NE(rep.find(k), std::string::npos) << k;
    ms_replay_result_free(&res);
    nm_config_destroy(cfg);
    ms_trace_free(t);
}
