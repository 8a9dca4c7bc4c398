// Collectives: the step lists of every algorithm (pure generator checks) and their execution by
// the model on the analytic network (every member completes, message counts, exact times for
// small cases).
#include "model_test_util.h"

#include <cmath>

using namespace mt;

static const int64_t OS = 400000, OR = 400000;
static const int SIZES[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16};

static int ceil_log2(int p)
{
    int k = 0;
    while ((1 << k) < p) k++;
    return k;
}

static bool is_v(ms_coll_kind k)
{
    return k == MS_COLL_GATHERV || k == MS_COLL_SCATTERV || k == MS_COLL_ALLGATHERV || k == MS_COLL_ALLTOALLV;
}

// Per-member arguments of one collective call (counts per member for the v-variants).
struct CollCase {
    ms_coll_kind kind;
    int P, root;
    uint64_t bytes;
    std::vector<std::vector<uint64_t>> counts;   // per member (empty: none)
    uint64_t member_bytes(int me) const
    {
        if (kind == MS_COLL_GATHERV || kind == MS_COLL_SCATTERV) return counts[root][me];
        return bytes;
    }
    const uint64_t *member_counts(int me) const { return counts.empty() ? nullptr : counts[me].data(); }
};

static CollCase make_case(ms_coll_kind kind, int P, uint64_t bytes, int root)
{
    CollCase c{kind, P, root, bytes, {}};
    if (is_v(kind) || kind == MS_COLL_REDUCE_SCATTER) {
        c.counts.assign(P, std::vector<uint64_t>(P));
        for (int me = 0; me < P; me++)
            for (int j = 0; j < P; j++) {
                if (kind == MS_COLL_ALLTOALLV) c.counts[me][j] = ((me * 3 + j * 5) % 4) * bytes / 2;
                else c.counts[me][j] = ((j * 7) % 3) * bytes / 2 + (j == 1 ? 0 : 1);   // same for all members
            }
    }
    if (kind == MS_COLL_NEIGHBOR) {
        // a ring: receive from left and right, send to right and left (different sizes each way
        // where the two neighbours differ)
        c.counts.assign(P, {});
        for (int me = 0; me < P; me++) {
            uint64_t l = (uint64_t)((me + P - 1) % P), r = (uint64_t)((me + 1) % P);
            uint64_t to_right = bytes, to_left = P > 2 ? bytes / 2 + 1 : bytes;
            c.counts[me] = {2, 2, l, r, to_right, to_left, r, l, to_right, to_left};
        }
    }
    return c;
}

static std::vector<ms_coll_plan> plans_of(const CollCase &c, int alg)
{
    std::vector<ms_coll_plan> v(c.P);
    for (int me = 0; me < c.P; me++) {
        v[me] = ms_coll_plan{};
        EXPECT_EQ(ms_coll_generate(&v[me], c.kind, alg, c.P, me, c.root, c.member_bytes(me), c.member_counts(me)), 0)
            << ms_coll_kind_name(c.kind) << " P=" << c.P << " me=" << me;
    }
    return v;
}

static uint64_t count_sends(const std::vector<ms_coll_plan> &v)
{
    uint64_t n = 0;
    for (auto &p : v)
        for (size_t i = 0; i < p.nops; i++) n += p.ops[i].is_send;
    return n;
}

// Every send has a matching receive, in order, with the same size (receive sizes are unknown
// for alltoallv, where only the count is checked).
static void check_pairing(const CollCase &c, const std::vector<ms_coll_plan> &v, const char *what)
{
    std::map<std::pair<int, int>, std::vector<uint64_t>> sends, recvs;
    for (int me = 0; me < c.P; me++) {
        const ms_coll_plan &p = v[me];
        for (size_t s = 0; s < p.nsteps; s++)
            for (size_t i = 0; i < p.steps[s].nops; i++) {
                const ms_coll_op &op = p.ops[p.steps[s].first_op + i];
                ASSERT_GE(op.peer, 0);
                ASSERT_LT(op.peer, c.P);
                if (op.is_send) sends[{me, op.peer}].push_back(op.bytes);
                else recvs[{op.peer, me}].push_back(op.bytes);
            }
    }
    for (auto &kv : sends) {
        auto it = recvs.find(kv.first);
        ASSERT_NE(it, recvs.end()) << what << ": no receive for " << kv.first.first << "->" << kv.first.second;
        ASSERT_EQ(kv.second.size(), it->second.size()) << what << ": " << kv.first.first << "->" << kv.first.second;
        if (c.kind != MS_COLL_ALLTOALLV) {
            EXPECT_EQ(kv.second, it->second) << what << ": sizes " << kv.first.first << "->" << kv.first.second;
        }
    }
    for (auto &kv : recvs) EXPECT_TRUE(sends.count(kv.first)) << what << ": receive without send";
}

static std::vector<uint64_t> test_bytes(ms_coll_kind k)
{
    (void)k;
    return {0, 8, 3000, 40000};
}

TEST(CollPlans, AllAlgorithmsPairUp)
{
    for (int k = 0; k < MS_COLL_COUNT; k++) {
        ms_coll_kind kind = (ms_coll_kind)k;
        for (int alg = 0; alg < ms_coll_algorithm_count(kind); alg++)
            for (int P : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 32})
                for (uint64_t B : test_bytes(kind))
                    for (int root : {0, P - 1, P / 2}) {
                        CollCase c = make_case(kind, P, B, root);
                        auto v = plans_of(c, alg);
                        std::string what = std::string(ms_coll_kind_name(kind)) + "/" +
                                           ms_coll_algorithm_name(kind, alg) + " P=" + std::to_string(P) +
                                           " B=" + std::to_string(B) + " root=" + std::to_string(root);
                        check_pairing(c, v, what.c_str());
                        for (auto &p : v) ms_coll_plan_free(&p);
                    }
    }
}

TEST(CollPlans, MessageCounts)
{
    for (int P : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
        int lg = ceil_log2(P), pof2 = 1 << (int)std::floor(std::log2(P)), rem = P - pof2;
        auto sends = [&](ms_coll_kind kind, const char *alg, uint64_t B, int root = 0) {
            CollCase c = make_case(kind, P, B, root);
            auto v = plans_of(c, ms_coll_algorithm_lookup(kind, alg));
            uint64_t n = count_sends(v);
            for (auto &p : v) ms_coll_plan_free(&p);
            return n;
        };
        uint64_t P1 = (uint64_t)(P - 1);
        EXPECT_EQ(sends(MS_COLL_BARRIER, "dissemination", 0), (uint64_t)(P * lg)) << P;
        for (int root = 0; root < P; root++) {
            EXPECT_EQ(sends(MS_COLL_BCAST, "binomial", 100, root), P1) << P;
            EXPECT_EQ(sends(MS_COLL_REDUCE, "binomial", 100, root), P1) << P;
            EXPECT_EQ(sends(MS_COLL_GATHER, "binomial", 100, root), P1) << P;
            EXPECT_EQ(sends(MS_COLL_SCATTER, "binomial", 100, root), P1) << P;
            EXPECT_EQ(sends(MS_COLL_GATHER, "linear", 100, root), P1) << P;
            EXPECT_EQ(sends(MS_COLL_SCATTER, "linear", 100, root), P1) << P;
        }
        EXPECT_EQ(sends(MS_COLL_ALLGATHER, "ring", 100), (uint64_t)P * P1);
        EXPECT_EQ(sends(MS_COLL_ALLGATHER, "bruck", 100), (uint64_t)(P * lg));
        EXPECT_EQ(sends(MS_COLL_ALLTOALL, "pairwise", 100), (uint64_t)P * P1);
        EXPECT_EQ(sends(MS_COLL_ALLTOALL, "scattered", 100), P == 1 ? 0 : (uint64_t)P * P);
        EXPECT_EQ(sends(MS_COLL_ALLTOALL, "bruck", 100), (uint64_t)(P * lg));
        EXPECT_EQ(sends(MS_COLL_ALLREDUCE, "recursive_doubling", 100),
                  (uint64_t)(pof2 * (int)std::log2(pof2) + 2 * rem));
        EXPECT_EQ(sends(MS_COLL_BCAST, "scatter_ring_allgather", 1 << 20),
                  P1 + (uint64_t)P * P1);   // scatter P-1 (all chunks non-empty) + ring
        if ((P & (P - 1)) == 0) {
            EXPECT_EQ(sends(MS_COLL_ALLGATHER, "recursive_doubling", 100), (uint64_t)(P * lg));
        }
    }
}

TEST(CollPlans, MpichSelection)
{
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_BCAST, ms_coll_choose(MS_COLL_BCAST, 16, 12287, nullptr)), "binomial");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_BCAST, ms_coll_choose(MS_COLL_BCAST, 7, 100000, nullptr)), "binomial");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_BCAST, ms_coll_choose(MS_COLL_BCAST, 16, 12288, nullptr)),
                 "scatter_doubling_allgather");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_BCAST, ms_coll_choose(MS_COLL_BCAST, 12, 12288, nullptr)),
                 "scatter_ring_allgather");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_BCAST, ms_coll_choose(MS_COLL_BCAST, 16, 1 << 20, nullptr)),
                 "scatter_ring_allgather");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLREDUCE, ms_coll_choose(MS_COLL_ALLREDUCE, 8, 2048, nullptr)),
                 "recursive_doubling");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLREDUCE, ms_coll_choose(MS_COLL_ALLREDUCE, 8, 2056, nullptr)),
                 "reduce_scatter_allgather");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_REDUCE, ms_coll_choose(MS_COLL_REDUCE, 8, 4096, nullptr)),
                 "reduce_scatter_gather");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLGATHER, ms_coll_choose(MS_COLL_ALLGATHER, 8, 1000, nullptr)),
                 "recursive_doubling");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLGATHER, ms_coll_choose(MS_COLL_ALLGATHER, 7, 1000, nullptr)),
                 "bruck");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLGATHER, ms_coll_choose(MS_COLL_ALLGATHER, 7, 100000, nullptr)),
                 "ring");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLTOALL, ms_coll_choose(MS_COLL_ALLTOALL, 8, 256, nullptr)), "bruck");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLTOALL, ms_coll_choose(MS_COLL_ALLTOALL, 7, 256, nullptr)),
                 "scattered");
    EXPECT_STREQ(ms_coll_algorithm_name(MS_COLL_ALLTOALL, ms_coll_choose(MS_COLL_ALLTOALL, 8, 32769, nullptr)),
                 "pairwise");
}

// Run one collective on every member through the model; all complete; counts agree with the plans.
static void run_case(const CollCase &c, int alg)
{
    std::vector<std::string> sets;
    if (alg > 0)
        sets.push_back(std::string("mpi.coll.") + ms_coll_kind_name(c.kind) +
                       ".algorithm=" + ms_coll_algorithm_name(c.kind, alg));
    Sim s(c.P, sets);
    for (int me = 0; me < c.P; me++) {
        std::vector<uint64_t> cnt = c.counts.empty() ? std::vector<uint64_t>{} : c.counts[me];
        s.prog[me] = {coll(1, c.kind, c.member_bytes(me), c.root, cnt), wait({1})};
    }
    s.run();
    std::string what = std::string(ms_coll_kind_name(c.kind)) + "/" + ms_coll_algorithm_name(c.kind, alg) +
                       " P=" + std::to_string(c.P) + " B=" + std::to_string(c.bytes);
    ASSERT_FALSE(s.deadlock) << what;
    for (int me = 0; me < c.P; me++) {
        EXPECT_EQ(s.state[me], 2) << what << " rank " << me;
        EXPECT_EQ(s.done[me].count(1), 1u) << what << " rank " << me;
        ms_rank_stats st;
        ms_model_rank_stats(s.m, me, &st);
        EXPECT_EQ(st.coll_calls, 1u);
    }
    auto v = plans_of(c, alg);
    EXPECT_EQ(s.total_sent(), count_sends(v)) << what;
    EXPECT_EQ(s.total_recv(), count_sends(v)) << what;
    for (auto &p : v) ms_coll_plan_free(&p);
    EXPECT_EQ(ms_model_next_time(s.m), NM_TIME_NEVER);
}

TEST(CollRun, EveryAlgorithmCompletes)
{
    for (int k = 0; k < MS_COLL_COUNT; k++) {
        ms_coll_kind kind = (ms_coll_kind)k;
        for (int alg = 0; alg < ms_coll_algorithm_count(kind); alg++)
            for (int P : SIZES)
                for (uint64_t B : {8ull, 40000ull}) run_case(make_case(kind, P, B, P > 2 ? 2 : 0), alg);
    }
}

TEST(CollRun, BarrierExact)
{
    for (int P : {2, 4, 8}) {
        Sim s(P);
        for (int r = 0; r < P; r++) s.prog[r] = {coll(1, MS_COLL_BARRIER, 0), wait({1})};
        s.run();
        for (int r = 0; r < P; r++) EXPECT_EQ(s.clock[r], ceil_log2(P) * (OS + lat(0) + OR)) << P;
    }
}

TEST(CollRun, BinomialBcastExact)
{
    const uint64_t B = 8;
    Sim s(4);
    for (int r = 0; r < 4; r++) s.prog[r] = {coll(1, MS_COLL_BCAST, B, 0), wait({1})};
    s.run();
    int64_t hop = OS + lat(B) + OR;
    EXPECT_EQ(s.clock[0], 2 * OS);              // two eager sends, one after the other
    EXPECT_EQ(s.clock[2], hop + OS);            // receives from 0, then sends to 3
    EXPECT_EQ(s.clock[1], OS + hop);            // second send of the root
    EXPECT_EQ(s.clock[3], 2 * hop);
}

// mpi.barrier_overhead / bcast_overhead / allreduce_overhead: the library's own path, once per
// call on each member before the first step; other collectives and COMM_SELF-sized ones not.
TEST(CollRun, CallOverheadOncePerCall)
{
    const int64_t OWN = 70000;
    for (int P : {2, 4}) {
        Sim s(P, {"mpi.barrier_overhead=70ns", "mpi.bcast_overhead=1us"});
        for (int r = 0; r < P; r++) s.prog[r] = {coll(1, MS_COLL_BARRIER, 0), wait({1}), coll(2, MS_COLL_BARRIER, 0), wait({2})};
        s.run();
        for (int r = 0; r < P; r++) EXPECT_EQ(s.clock[r], 2 * (OWN + ceil_log2(P) * (OS + lat(0) + OR))) << P;
    }
    // a reduce is not charged the others' keys
    Sim s(2, {"mpi.barrier_overhead=70ns", "mpi.bcast_overhead=1us", "mpi.allreduce_overhead=2us"});
    for (int r = 0; r < 2; r++) s.prog[r] = {coll(1, MS_COLL_REDUCE, 8, 0), wait({1})};
    s.run();
    EXPECT_EQ(s.clock[0], OS + lat(8) + OR);
    // the root's bcast starts after its own path, the receiver's path overlaps the message
    Sim b(2, {"mpi.bcast_overhead=1us"});
    for (int r = 0; r < 2; r++) b.prog[r] = {coll(1, MS_COLL_BCAST, 8, 0), wait({1})};
    b.run();
    EXPECT_EQ(b.clock[0], 1000000 + OS);
    EXPECT_EQ(b.clock[1], 1000000 + OS + lat(8) + OR);
    // one member (COMM_SELF's size): the library's shortcut, not charged
    Sim one(1, {"mpi.allreduce_overhead=2us"});
    one.prog[0] = {coll(1, MS_COLL_ALLREDUCE, 64), wait({1})};
    one.run();
    EXPECT_LT(one.clock[0], 2000000);
}

TEST(CollRun, ReduceCostPerByte)
{
    const uint64_t B = 1000;
    Sim s(2, {"mpi.reduce_cost_per_byte=100"});
    for (int r = 0; r < 2; r++) s.prog[r] = {coll(1, MS_COLL_REDUCE, B, 0), wait({1})};
    s.run();
    EXPECT_EQ(s.clock[0], OS + lat(B) + OR + 100 * (int64_t)B);
    EXPECT_EQ(s.clock[1], OS);
}

TEST(CollRun, SeparateMatchingSpaceAndSequence)
{
    // user messages with the same tags/peers never match collective steps; back-to-back collectives
    Sim s(4);
    for (int r = 0; r < 4; r++) {
        s.prog[r] = {irecv(10, MS_ANY_SOURCE, MS_ANY_TAG), coll(1, MS_COLL_BCAST, 100, 0), wait({1}),
                     coll(2, MS_COLL_ALLREDUCE, 64), coll(3, MS_COLL_BARRIER, 0), wait({2, 3}),
                     isend(11, (r + 1) % 4, 0, 4), wait({10, 11})};
    }
    s.run();
    ASSERT_FALSE(s.deadlock);
    for (int r = 0; r < 4; r++) {
        EXPECT_EQ(s.result(r, 10).source, (r + 3) % 4);
        EXPECT_EQ(s.result(r, 10).bytes, 4u);
    }
}

TEST(CollRun, SubCommunicator)
{
    Sim s(6);
    char err[256];
    int members[3] = {5, 1, 3};
    for (int i = 0; i < 3; i++) ASSERT_EQ(ms_model_comm_add(s.m, 9, 3, members, err, sizeof err), 0) << err;
    for (int w : {5, 1, 3}) s.prog[w] = {coll(1, MS_COLL_ALLREDUCE, 8, 0, {}, 9), wait({1})};
    for (int w : {0, 2, 4}) s.prog[w] = {coll(1, MS_COLL_BARRIER, 0, 0, {}, MS_COMM_SELF), wait({1})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    for (int w : {0, 2, 4}) EXPECT_EQ(s.clock[w], 0);
    for (int w : {5, 1, 3}) EXPECT_GT(s.clock[w], 0);
}

TEST(CollRun, DescribeCollectiveWait)
{
    Sim s(3);
    s.prog[0] = {coll(1, MS_COLL_BARRIER, 0), wait({1})};
    s.prog[1] = {coll(1, MS_COLL_BARRIER, 0), wait({1})};
    s.prog[2] = {irecv(1, 0, 0), wait({1})};   // never enters the barrier
    s.run();
    EXPECT_TRUE(s.deadlock);
    char buf[256];
    ASSERT_EQ(ms_model_describe_wait(s.m, 0, buf, sizeof buf), 0);
    EXPECT_NE(std::string(buf).find("MPI_Barrier on comm 0"), std::string::npos) << buf;
}

TEST(CollRun, ScaleManyMessages)
{
    // 256 ranks, 8 alltoalls of 64 B blocks forced to the scattered algorithm (P*P messages
    // each: 524288 messages) plus 8 allreduces: completes, counts add up, in reasonable time.
    const int P = 256, N = 8;
    Sim s(P, {"mpi.coll.alltoall.algorithm=scattered"});
    for (int r = 0; r < P; r++)
        for (int i = 0; i < N; i++) {
            s.prog[r].push_back(coll(2 * i + 1, MS_COLL_ALLTOALL, 64));
            s.prog[r].push_back(coll(2 * i + 2, MS_COLL_ALLREDUCE, 8));
            s.prog[r].push_back(wait({(uint64_t)(2 * i + 1), (uint64_t)(2 * i + 2)}));
        }
    s.run();
    ASSERT_FALSE(s.deadlock);
    uint64_t expect = (uint64_t)N * (P * P + P * 8);
    EXPECT_EQ(s.total_sent(), expect);
    EXPECT_EQ(s.total_recv(), expect);
}

TEST(CollRun, DriverInterleavingDoesNotMatter)
{
    // the same mix of collectives and wildcard point-to-point, driven greedily and one call at a
    // time (the strictest conservative interleaving), gives identical completion times
    std::vector<std::vector<int64_t>> t[2];
    for (int mode = 0; mode < 2; mode++) {
        const int P = 7;
        Sim s(P);
        for (int r = 0; r < P; r++) {
            s.prog[r] = {compute(1000 * r), coll(1, MS_COLL_ALLREDUCE, 4096), irecv(2, MS_ANY_SOURCE, MS_ANY_TAG),
                         isend(3, (r + 2) % P, r, 20000), coll(4, MS_COLL_BCAST, 100000, 3), wait({1, 2, 3, 4}),
                         coll(5, MS_COLL_ALLTOALL, 300), compute(5000), coll(6, MS_COLL_BARRIER, 0), wait({5, 6})};
        }
        s.run(mode == 1);
        ASSERT_FALSE(s.deadlock);
        for (int r = 0; r < P; r++) {
            std::vector<int64_t> v;
            for (auto &kv : s.done[r]) v.push_back(kv.second.complete_time);
            v.push_back(s.clock[r]);
            t[mode].push_back(v);
        }
    }
    EXPECT_EQ(t[0], t[1]);
}

// MPI_Neighbor_*: every receive and send posted at once. On a 3-rank ring (receive from both
// sides, send to both), a member's two eager sends take the CPU one after the other, so the
// later of the two messages it receives left its sender at 2 o_s.
TEST(CollRun, NeighborExact)
{
    const uint64_t B = 100;
    Sim s(3, {}, "crossbar:3");
    for (int r = 0; r < 3; r++) {
        uint64_t l = (uint64_t)((r + 2) % 3), rt = (uint64_t)((r + 1) % 3);
        s.prog[r] = {coll(1, MS_COLL_NEIGHBOR, 2 * B, 0, {2, 2, l, rt, B, B, rt, l, B, B}), wait({1})};
    }
    s.run();
    ASSERT_FALSE(s.deadlock);
    // every member sends to the right first (out-list order); its second message, ready at 2 OS,
    // waits for the first to leave the host link (B + h + 6 characters: route, type, CRC, GAP),
    // so the later arrival is OS + (B + 7) TAU + lat(B); each receive then costs OR
    for (int r = 0; r < 3; r++) EXPECT_NEAR((double)s.clock[r], (double)(OS + (int64_t)(B + 7) * TAU + lat(B) + OR), 1.0) << r;
    // a short list is refused with the call named
    Sim t(2);
    std::vector<uint64_t> bad = {1, 1, 1};
    ms_coll_args a{MS_COLL_NEIGHBOR, 0, 8, bad.data(), bad.size(), 0};
    char err[256];
    EXPECT_NE(ms_model_icoll(t.m, 0, 0, 1, MS_COMM_WORLD, &a, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("MPI_Neighbor_*"), std::string::npos) << err;
}

// Local copies of the algorithms (the send buffer into the result first: allreduce; a member's own
// block: pairwise alltoall) and the allgather phase of reduce_scatter_allgather receiving into the
// blocks the member gave away (COPY_SHARED_PB).
TEST(CollPlans, LocalCopiesAndReceivesIntoWhatWasSent)
{
    const uint64_t B = 1 << 20;
    ms_coll_plan p;
    memset(&p, 0, sizeof p);
    ASSERT_EQ(ms_coll_generate(&p, MS_COLL_ALLREDUCE, ms_coll_algorithm_lookup(MS_COLL_ALLREDUCE, "reduce_scatter_allgather"),
                               4, 1, 0, B, nullptr), 0);
    ASSERT_GE(p.nsteps, 4u);
    EXPECT_EQ(p.steps[0].copy_bytes, B);
    for (size_t s = 1; s < p.nsteps; s++) EXPECT_EQ(p.steps[s].copy_bytes, 0u);
    int into = 0, recvs = 0;
    for (size_t s = 0; s < p.nsteps; s++)
        for (size_t i = 0; i < p.steps[s].nops; i++) {
            const ms_coll_op &o = p.ops[p.steps[s].first_op + i];
            if (o.is_send) continue;
            recvs++;
            if (o.into_sent) {
                into++;
                EXPECT_GE(s, p.nsteps / 2) << "only the allgather half";
            }
        }
    EXPECT_EQ(into, 2);
    EXPECT_EQ(recvs, 4);
    ASSERT_EQ(ms_coll_generate(&p, MS_COLL_ALLTOALL, ms_coll_algorithm_lookup(MS_COLL_ALLTOALL, "pairwise"), 2, 0, 0, B,
                               nullptr), 0);
    EXPECT_EQ(p.steps[0].copy_bytes, B);
    ASSERT_EQ(ms_coll_generate(&p, MS_COLL_BCAST, 0, 2, 0, 0, B, nullptr), 0);
    for (size_t s = 0; s < p.nsteps; s++) EXPECT_EQ(p.steps[s].copy_bytes, 0u);
    ms_coll_plan_free(&p);
}

// Played: the copy takes the member's CPU at the segment's copy rate before the step; the received
// half of the allgather pays COPY_SHARED_PB, exactly.
TEST(CollRun, LocalCopyAndSharedLinesCosts)
{
    const uint64_t B = 64000;
    auto run = [&](const char *segs) {
        Sim s(2, {"host.ranks_per_node=2", "host.shm_latency=100ns", "mpi.send_overhead=0", "mpi.recv_overhead=0",
                  "mpi.eager_threshold=1000", std::string("mpi.size_segments=") + segs,
                  "mpi.coll.allreduce.algorithm=reduce_scatter_allgather"});
        for (int r = 0; r < 2; r++) s.prog[r] = {coll(1, MS_COLL_ALLREDUCE, B), wait({1})};
        s.run();
        EXPECT_FALSE(s.deadlock);
        EXPECT_EQ(ms_model_last_error(s.m, nullptr), nullptr);
        return s.clock[0];
    };
    int64_t base = run("1000:0:0:0:0:0"), copy = run("1000:0:0:0:0:2"), shared = run("1000:0:0:0:0:2:5");
    // the first copy (B at 2 ps/B) and the two halves' rendezvous copies (B/2 each at 2 ps/B)
    EXPECT_EQ(copy - base, 2 * (int64_t)B + 2 * (int64_t)(B / 2) * 2);
    // the allgather's half at 5 ps/B instead of 2
    EXPECT_EQ(shared - copy, (int64_t)(B / 2) * 3);
}
