// Local answers (docs/architecture.md "Local answers"): what the shim computes or promises is what
// the model says. An eager standard send completes at max(t, CPU free) + send overhead + copy
// (ms_model_local_send, ms_model_cpu_free); a negative Test answer's lookahead window
// (ms_model_quiet_until plus the other ranks' clocks) never ends after the tested request's
// completion, over random traffic on several profiles.
#include "model_test_util.h"

#include <random>

using namespace mt;

namespace {

// Rank 0 sends eager standard messages of random sizes, with computation between, to the
// others; the completion times the model reports are the ones the shim would compute.
void check_local_sends(std::vector<std::string> sets, int nranks, bool expect_local)
{
    Sim s(nranks, sets);
    double copy = -1;
    int moves = 0;
    ASSERT_EQ(ms_model_local_send(s.m, &copy, &moves) != 0, expect_local);
    if (!expect_local) return;
    std::mt19937 rng(7);
    int64_t thr = nm_config_int(s.cfg, "mpi.eager_threshold");
    std::vector<std::pair<uint64_t, int64_t>> want;   // request, predicted completion
    int64_t t = 0, cpu = 0;
    uint64_t req = 1;
    std::vector<uint64_t> pending;
    for (int k = 0; k < 60; k++) {
        int dst = 1 + (int)(rng() % (unsigned)(nranks - 1));
        uint64_t b = rng() % 3 == 0 ? 0 : rng() % (uint64_t)thr;
        s.prog[0].push_back(isend(req, dst, k, b));
        s.prog[dst].push_back(irecv(req, 0, k, b));
        int64_t c = copy > 0 ? (int64_t)std::llround(copy * (double)b) : 0;
        int64_t done = std::max(t, cpu) + ms_model_isend_cost(s.m, b) + c;
        want.emplace_back(req, done);
        cpu = done;
        t += ms_model_isend_cost(s.m, b);
        pending.push_back(req);
        if (rng() % 3 == 0) {   // wait for what was sent (the clock jumps to the last completion)
            s.prog[0].push_back(wait(pending));
            t = std::max(t, done);
            pending.clear();
        }
        int64_t gap = rng() % 2 ? (int64_t)(rng() % 3000000) : 0;
        if (gap) s.prog[0].push_back(compute(gap));
        t += gap;
        req++;
    }
    if (!pending.empty()) s.prog[0].push_back(wait(pending));
    for (int r = 1; r < nranks; r++) {
        std::vector<uint64_t> all;
        for (auto &o : s.prog[r]) all.push_back(o.req);
        s.prog[r].push_back(wait(all));
    }
    s.run();
    ASSERT_FALSE(s.deadlock);
    for (auto &w : want) EXPECT_EQ(s.result(0, w.first).complete_time, w.second) << "request " << w.first;
}

}  // namespace

TEST(ModelLocal, EagerSendCompletionIsLocal)
{
    check_local_sends({}, 4, true);
    check_local_sends({"@default"}, 4, true);
    // one rank per node, the sender's copy into the NIC's buffers (seed 003's send_copy_rate)
    check_local_sends({"@seed003-ecard", "host.ranks_per_node=1"}, 3, true);
    // every rank on one node, one CPU's copy into shared memory and no memory-rate sharing
    check_local_sends({"host.ranks_per_node=4", "host.shm_copy_rate=900 MB/s", "host.shm_latency=0.3us"}, 4, true);
    // seed 003's 8 nodes, ranks spread over them first: 4 ranks are on 4 nodes (local), 10 share
    // nodes whose memory rate makes copies wait for each other (not local)
    check_local_sends({"@seed003-ecard"}, 4, true);
    check_local_sends({"@seed003-ecard"}, 10, false);
}

TEST(ModelLocal, CpuFreeOnlyWhenOnlyOwnPostsMoveIt)
{
    Sim s(2, {});
    EXPECT_EQ(ms_model_cpu_free(s.m, 0), 0);
    s.prog[0] = {isend(1, 1, 0, 100), coll(2, MS_COLL_BARRIER, 0), wait({2}), wait({1})};
    s.prog[1] = {irecv(1, 0, 0, 100), coll(2, MS_COLL_BARRIER, 0), wait({1, 2})};
    ASSERT_TRUE(s.step(0));
    ASSERT_TRUE(s.step(0));
    EXPECT_EQ(ms_model_cpu_free(s.m, 0), -1) << "a collective outstanding";
    s.run();
    EXPECT_GE(ms_model_cpu_free(s.m, 0), 0);
    // registration costs: an outstanding receive may move the CPU (a rendezvous match)
    Sim r(2, {"host.reg_cost=2us"});
    r.prog[1] = {irecv(1, 0, 0, 100000)};
    ASSERT_TRUE(r.step(1));
    EXPECT_EQ(ms_model_cpu_free(r.m, 1), -1);
    EXPECT_EQ(ms_model_cpu_free(r.m, 0), 0);
}

namespace {

struct Promise {
    int rank;
    uint64_t req;
    int64_t until;
};

// Random traffic: every rank posts its sends and receives (eager, rendezvous, synchronous) with
// computation between, then polls each receive and each synchronous send with MPI_Test until it
// completes. After every model run, each negative Test answer gets its window as the server
// computes it; the request must not complete before the window ends.
void check_windows(std::vector<std::string> sets, unsigned seed, bool one_op, bool expect_windows = true)
{
    const int n = 4;
    Sim s(n, sets);
    std::mt19937 rng(seed);
    std::vector<std::vector<Op>> posts(n), polls(n);
    std::vector<std::vector<uint64_t>> sends(n);
    uint64_t req = 1;
    for (int k = 0; k < 40; k++) {
        int src = (int)(rng() % n), dst = (int)((src + 1 + rng() % (n - 1)) % n);
        unsigned kind = rng() % 4;
        uint64_t b = kind == 3 ? 40000 : rng() % 2000;
        ms_send_mode mode = kind == 2 ? MS_SEND_SYNC : MS_SEND_STANDARD;
        posts[src].push_back(isend(req, dst, k, b, mode));
        posts[dst].push_back(irecv(req + 1, rng() % 3 == 0 ? MS_ANY_SOURCE : src, k, b));
        if (rng() % 2) posts[src].push_back(compute((int64_t)(rng() % 4000000)));
        if (rng() % 2) posts[dst].push_back(compute((int64_t)(rng() % 4000000)));
        polls[dst].push_back(test_loop(req + 1));
        if (mode == MS_SEND_SYNC) polls[src].push_back(test_loop(req));
        else sends[src].push_back(req);
        req += 2;
    }
    for (int r = 0; r < n; r++) {
        s.prog[r] = posts[r];
        s.prog[r].insert(s.prog[r].end(), polls[r].begin(), polls[r].end());
        if (!sends[r].empty()) s.prog[r].push_back(wait(sends[r]));
    }
    std::vector<Promise> promises;
    std::vector<size_t> seen(n, 0);
    int given = 0;
    for (int it = 0; it < 10000000; it++) {
        if (one_op) {
            int best = -1;
            for (int r = 0; r < n; r++)
                if (s.state[r] == 0 && (best < 0 || s.clock[r] < s.clock[best])) best = r;
            if (best >= 0) s.step(best);
        } else {
            for (int r = 0; r < n; r++)
                while (s.state[r] == 0 && s.step(r)) {
                }
        }
        int64_t H = NM_TIME_NEVER;
        bool running = false, blocked = false;
        for (int r = 0; r < n; r++) {
            if (s.state[r] == 0) {
                running = true;
                H = std::min(H, s.clock[r]);
            }
            blocked |= s.state[r] == 1;
        }
        if (!running && !blocked) break;
        ASSERT_TRUE(running || ms_model_next_time(s.m) != NM_TIME_NEVER) << "deadlock";
        ASSERT_EQ(ms_model_run_until(s.m, H), 0);
        // the windows of this run's negative test answers, as ms_driver_quiet_until makes them
        for (int r = 0; r < n; r++) {
            for (; seen[r] < s.log[r].size(); seen[r]++) {
                const Resume &R = s.log[r][seen[r]];
                if (s.state[r] != 0 || seen[r] + 1 != s.log[r].size()) continue;   // only the latest
                if (R.res.size() != 1 || R.res[0].completed) continue;
                const Op &op = s.prog[r][s.pc[r]];
                if (op.kind != Op::TEST_LOOP) continue;
                int64_t t = R.t - nm_config_int(s.cfg, "mpi.poll_cost"), lat = 0;
                int64_t q = ms_model_quiet_until(s.m, r, t, &op.req, 1, 0, &lat);
                for (int j = 0; j < n && q > t; j++)
                    if (j != r && s.state[j] == 0) q = std::min(q, s.clock[j] + lat);
                if (q > t) {
                    promises.push_back({r, op.req, q});
                    given++;
                }
            }
        }
    }
    for (int r = 0; r < n; r++) EXPECT_EQ(s.state[r], 2) << "rank " << r << " did not finish";
    for (auto &p : promises) {
        const ms_req_result &res = s.result(p.rank, p.req);
        EXPECT_GE(res.complete_time, p.until)
            << "rank " << p.rank << " request " << p.req << " completed inside its window (seed " << seed << ")";
    }
    if (expect_windows) EXPECT_GT(given, 0) << "no window given (seed " << seed << ")";
    else EXPECT_EQ(given, 0) << "a window under host-driven rendezvous, where every test runs held turns";
}

}  // namespace

TEST(ModelLocal, WindowsHoldOverRandomTraffic)
{
    for (unsigned seed = 1; seed <= 12; seed++) {
        check_windows({}, seed, seed % 2 == 0);
        check_windows({"@default"}, seed, seed % 2 == 1);
    }
    // host.rndv_progress = in_call: a test enters the library and runs held turns, so no window
    check_windows({"@seed003-ecard"}, 3, true, false);
    check_windows({"host.ranks_per_node=2", "host.shm_latency=0.5us", "host.shm_copy_rate=1000 MB/s"}, 5, false);
}
