// One-sided communication (ms_model_rma), empty collectives and intercommunicator collectives
// in the MPI layer model, on the analytic network (README.md "One-sided communication").
#include "model_test_util.h"

#include <set>

using namespace mt;

static const int64_t OS = 400000, OR = 400000;   // mpi.send_overhead, mpi.recv_overhead (defaults)

static int64_t done_at(Sim &s, int rank, uint64_t req) { return s.result(rank, req).complete_time; }

// ---- RDMA operations ------------------------------------------------------------------------------

// A put is the origin's send overhead, the data on the wire, the target NIC's acknowledgement
// back (a control packet) and the origin's taking of the completion: the one-way latency of an
// eager message plus the acknowledgement's wire time, no target CPU.
TEST(ModelRma, PutIsOneWayPlusAcknowledgement)
{
    Sim s(2);
    s.prog[0] = {rma(1, MS_RMA_PUT, 1, 8), wait({1})};
    s.run();
    int64_t one_way = OS + lat(8) + OR;
    EXPECT_EQ(done_at(s, 0, 1), one_way + lat(0));
    EXPECT_EQ(s.log[0].back().t, one_way + lat(0));
    EXPECT_EQ(s.total_sent(), 0u) << "not a message of the program";
    ms_rank_stats st;
    ms_model_rank_stats(s.m, 0, &st);
    EXPECT_EQ(st.rma_ops, 1u);
    EXPECT_EQ(st.rma_bytes, 8u);
}

// With a NIC of its own costs (seed 003's E-card: LANai work per packet sent and received, DMA
// setups over the bus), the put's acknowledgement is the one the target's NIC generates for every
// packet (GM's reliable delivery): it adds its wire time and the DMA write of the completion into
// the origin's memory to the one-way latency, not a second message's NIC work (before: 1.86 x the
// one-way latency under configs/seed003-ecard.ini).
TEST(ModelRma, NicAcknowledgementAddsWireAndCompletionOnly)
{
    const std::vector<std::string> nic = {"host.nic_send_cost=2300000", "host.nic_recv_cost=1060000",
                                          "host.dma_setup=813000"};
    Sim p2p(2, nic);
    p2p.prog[0] = {isend(1, 1, 0, 8), wait({1})};
    p2p.prog[1] = {irecv(1, 0, 0, 8), wait({1})};
    p2p.run();
    int64_t one_way = done_at(p2p, 1, 1);
    Sim s(2, nic);
    s.prog[0] = {rma(1, MS_RMA_PUT, 1, 8), wait({1}), rma(2, MS_RMA_ACCUMULATE, 1, 8), wait({2})};
    s.run();
    EXPECT_EQ(done_at(s, 0, 1), one_way + lat(0) + 813000);
    EXPECT_EQ(done_at(s, 0, 2) - done_at(s, 0, 1), one_way + lat(0) + 813000);
    // a get's data come back as a message of the target's NIC: its processor and DMA read too
    Sim g(2, nic);
    g.prog[0] = {rma(1, MS_RMA_GET, 1, 0, 8), wait({1})};
    g.run();
    EXPECT_GT(done_at(g, 0, 1), done_at(s, 0, 1) + 2300000 + 1060000);
}

// A get: a request (control packet) to the target, its NIC sends the data back.
TEST(ModelRma, GetIsARequestAndTheDataBack)
{
    Sim s(2);
    s.prog[0] = {rma(1, MS_RMA_GET, 1, 0, 4096), wait({1})};
    s.run();
    EXPECT_EQ(done_at(s, 0, 1), OS + lat(0) + lat(4096) + OR);
}

// Bandwidth: a 4 MiB put streams at the link's rate (packet headers aside).
TEST(ModelRma, LargePutGetsTheLinkRate)
{
    Sim s(2);
    const uint64_t B = 4u << 20;
    s.prog[0] = {rma(1, MS_RMA_PUT, 1, B), wait({1})};
    s.run();
    int64_t t = done_at(s, 0, 1);
    EXPECT_EQ(t, OS + msg_lat(B) + lat(0) + OR);
    double rate = (double)B * 8 / ((double)t * 1e-12), link = 1.28e9;
    EXPECT_GT(rate / link, 0.95);
    EXPECT_LE(rate / link, 1.0);
}

// Operations in a row from one origin: the NIC sends them back to back; a wait for all ends
// with the last acknowledgement.
TEST(ModelRma, OperationsPipeline)
{
    Sim s(2);
    s.prog[0] = {rma(1, MS_RMA_PUT, 1, 40000), rma(2, MS_RMA_PUT, 1, 40000), rma(3, MS_RMA_PUT, 1, 40000),
                 wait({1, 2, 3})};
    s.run();
    EXPECT_LT(done_at(s, 0, 1), done_at(s, 0, 2));
    EXPECT_LT(done_at(s, 0, 2), done_at(s, 0, 3));
    // the three together take about three times one (the wire is the bottleneck), not more
    int64_t one = OS + msg_lat(40000) + lat(0) + OR;
    EXPECT_LT(done_at(s, 0, 3), 3 * one);
}

// Accumulates and atomics combine at the target (mpi.reduce_cost_per_byte); a compare-and-swap
// carries the value and the comparand, a fetch-and-op returns the old value.
TEST(ModelRma, AtomicsAndReductions)
{
    Sim s(2, {"mpi.reduce_cost_per_byte=1000"});
    s.prog[0] = {rma(1, MS_RMA_ACCUMULATE, 1, 800), wait({1}), rma(2, MS_RMA_FETCH_AND_OP, 1, 8, 8), wait({2}),
                 rma(3, MS_RMA_COMPARE_AND_SWAP, 1, 16, 8), wait({3})};
    s.run();
    EXPECT_EQ(done_at(s, 0, 1), OS + lat(800) + 800 * 1000 + lat(0) + OR);
    int64_t t1 = s.log[0][0].t, t2 = s.log[0][1].t;
    EXPECT_EQ(done_at(s, 0, 2), t1 + OS + lat(8) + 8 * 1000 + lat(8) + OR);
    EXPECT_EQ(done_at(s, 0, 3), t2 + OS + lat(16) + 16 * 1000 + lat(8) + OR);
}

// Exclusive locks of one target are granted one at a time, in the order the requests reach it:
// the second waits for the first's unlock; shared locks are held together.
TEST(ModelRma, ExclusiveLocksSerialise)
{
    Sim s(3);
    s.prog[1] = {rma(1, MS_RMA_LOCK_EXCLUSIVE, 0, 0), wait({1}), compute(50000000), rma(2, MS_RMA_UNLOCK, 0, 0),
                 wait({2})};
    s.prog[2] = {compute(1000000), rma(1, MS_RMA_LOCK_EXCLUSIVE, 0, 0), wait({1}), rma(2, MS_RMA_UNLOCK, 0, 0),
                 wait({2})};
    s.run();
    int64_t grant1 = done_at(s, 1, 1), unlock1 = s.log[1][0].t + 50000000;
    EXPECT_EQ(grant1, OS + lat(0) + lat(0) + OR);
    // rank 2's grant leaves the target when rank 1's unlock arrives there, right behind the
    // unlock's own acknowledgement on the target's link (one header-only packet: 7 characters)
    EXPECT_EQ(done_at(s, 2, 1), unlock1 + OS + lat(0) + 7 * TAU + lat(0) + OR);
    EXPECT_GT(done_at(s, 2, 1), done_at(s, 1, 2) - OR) << "granted after the first unlock";

    Sim sh(3);
    sh.prog[1] = {rma(1, MS_RMA_LOCK_SHARED, 0, 0), wait({1}), compute(50000000), rma(2, MS_RMA_UNLOCK, 0, 0),
                  wait({2})};
    sh.prog[2] = {compute(1000000), rma(1, MS_RMA_LOCK_SHARED, 0, 0), wait({1}), rma(2, MS_RMA_UNLOCK, 0, 0),
                  wait({2})};
    sh.run();
    EXPECT_EQ(done_at(sh, 2, 1), 1000000 + OS + lat(0) + lat(0) + OR) << "shared: at once";
    // an exclusive request queued behind a shared holder waits; a shared one behind it waits too
    Sim q(4);
    q.prog[1] = {rma(1, MS_RMA_LOCK_SHARED, 0, 0), wait({1}), compute(20000000), rma(2, MS_RMA_UNLOCK, 0, 0),
                 wait({2})};
    q.prog[2] = {compute(1000000), rma(1, MS_RMA_LOCK_EXCLUSIVE, 0, 0), wait({1}), compute(5000000),
                 rma(2, MS_RMA_UNLOCK, 0, 0), wait({2})};
    q.prog[3] = {compute(2000000), rma(1, MS_RMA_LOCK_SHARED, 0, 0), wait({1}), rma(2, MS_RMA_UNLOCK, 0, 0),
                 wait({2})};
    q.run();
    EXPECT_GT(done_at(q, 2, 1), 20000000) << "the exclusive request waits for the shared holder";
    EXPECT_GT(done_at(q, 3, 1), done_at(q, 2, 1) + 5000000) << "no overtaking of a waiting exclusive request";
}

// host.rma_progress = in_call: the target's CPU handles an operation only inside an MPI call;
// while it computes the put waits. With nic, the put does not notice the target computing.
TEST(ModelRma, TargetCpuWaitsForItsNextCall)
{
    for (const char *mode : {"nic", "in_call"}) {
        Sim s(2, {std::string("host.rma_progress=") + mode});
        s.prog[0] = {rma(1, MS_RMA_PUT, 1, 64), wait({1})};
        s.prog[1] = {compute(100000000), irecv(7, 0, 99), cancel(7), wait({7})};
        s.run();
        int64_t t = done_at(s, 0, 1);
        if (!strcmp(mode, "nic")) {
            EXPECT_EQ(t, OS + lat(64) + lat(0) + OR);
        } else {
            // at the target's next MPI call (its receive's post at 100 us): a receive overhead,
            // the acknowledgement's send overhead, then the wire back
            EXPECT_EQ(t, 100000000 + OR + OS + lat(0) + OR);
        }
    }
}

// Between ranks of one node the origin's CPU does it through shared memory.
TEST(ModelRma, OnOneNodeTheOriginCopies)
{
    Sim s(2, {"host.ranks_per_node=2", "host.shm_copy_rate=8Gb/s"});
    s.prog[0] = {rma(1, MS_RMA_PUT, 1, 10000), wait({1}), rma(2, MS_RMA_GET, 1, 0, 10000), wait({2})};
    s.run();
    EXPECT_EQ(done_at(s, 0, 1), OS + 10000000);   // 10000 B at 1 B/ns
    EXPECT_EQ(done_at(s, 0, 2), s.log[0][0].t + OS + 10000000);
}

TEST(ModelRma, ProcNullAndBadArguments)
{
    Sim s(2);
    char err[256];
    EXPECT_NE(ms_model_rma(s.m, 0, 0, 2, MS_COMM_WORLD, 5, MS_RMA_PUT, 8, 0, err, sizeof err), 0);
    EXPECT_NE(strstr(err, "rank 5"), nullptr) << err;
    EXPECT_NE(ms_model_rma(s.m, 0, 0, 3, MS_COMM_WORLD, 1, (ms_rma_kind)99, 8, 0, err, sizeof err), 0);
    EXPECT_NE(ms_model_rma(s.m, 0, 0, 4, 12345, 1, MS_RMA_PUT, 8, 0, err, sizeof err), 0) << "unknown window";
    s.prog[0] = {rma(1, MS_RMA_PUT, MS_PROC_NULL, 8), wait({1})};
    s.run();
    EXPECT_EQ(done_at(s, 0, 1), 0) << "MPI_PROC_NULL completes at once";
}

// ---- empty collectives ----------------------------------------------------------------------------

// Count 0: nothing but the call, no message (MPICH returns at once); a barrier still synchronises.
TEST(ModelEmptyCollectives, CostNothing)
{
    for (ms_coll_kind k : {MS_COLL_ALLREDUCE, MS_COLL_ALLTOALL, MS_COLL_BCAST, MS_COLL_REDUCE, MS_COLL_ALLGATHER,
                           MS_COLL_GATHER, MS_COLL_SCATTER, MS_COLL_SCAN, MS_COLL_EXSCAN}) {
        Sim s(4);
        for (int r = 0; r < 4; r++) s.prog[r] = {compute(1000 * r), coll(1, k, 0), wait({1})};
        s.run();
        for (int r = 0; r < 4; r++) EXPECT_EQ(s.log[r].back().t, 1000 * r) << ms_coll_kind_name(k);
        EXPECT_EQ(s.total_sent(), 0u) << ms_coll_kind_name(k);
    }
    // v-variants whose counts are all 0; alltoallv with send and receive counts
    Sim v(3);
    for (int r = 0; r < 3; r++)
        v.prog[r] = {coll(1, MS_COLL_ALLGATHERV, 0, 0, {0, 0, 0}), wait({1}),
                     coll(2, MS_COLL_ALLTOALLV, 0, 0, {0, 0, 0, 0, 0, 0}), wait({2}),
                     coll(3, MS_COLL_REDUCE_SCATTER, 0, 0, {0, 0, 0}), wait({3})};
    v.run();
    EXPECT_EQ(v.total_sent(), 0u);
    for (int r = 0; r < 3; r++) EXPECT_EQ(v.log[r].back().t, 0);
    Sim b(4);
    for (int r = 0; r < 4; r++) b.prog[r] = {coll(1, MS_COLL_BARRIER, 0), wait({1})};
    b.run();
    EXPECT_GT(b.total_sent(), 0u) << "a barrier is never empty";
}

// Alltoallv with receive counts: peers with nothing to exchange exchange no message.
TEST(ModelEmptyCollectives, AlltoallvSkipsEmptyPairs)
{
    Sim s(3);
    // rank 0 sends 100 B to rank 1 only; everyone else sends nothing
    s.prog[0] = {coll(1, MS_COLL_ALLTOALLV, 0, 0, {0, 100, 0, 0, 0, 0}), wait({1})};
    s.prog[1] = {coll(1, MS_COLL_ALLTOALLV, 0, 0, {0, 0, 0, 100, 0, 0}), wait({1})};
    s.prog[2] = {coll(1, MS_COLL_ALLTOALLV, 0, 0, {0, 0, 0, 0, 0, 0}), wait({1})};
    s.run();
    EXPECT_EQ(s.total_sent(), 1u);
    EXPECT_EQ(s.log[2].back().t, 0);
    EXPECT_EQ(s.log[1].back().t, OS + lat(100) + OR);
}

// ---- intercommunicator collectives ------------------------------------------------------------------

namespace {

struct InterCase {
    ms_coll_kind kind;
    int nlow, nhigh;
    int root_u;       // the root's union rank (rooted kinds)
    uint64_t bytes;
};

// What member me says (as the shim says it): root, bytes, counts.
ms_coll_spec member_spec(const InterCase &c, int me, std::vector<uint64_t> &counts)
{
    int P = c.nlow + c.nhigh, lo = me < c.nlow;
    int loff = lo ? 0 : c.nlow, lsize = lo ? c.nlow : c.nhigh, roff = lo ? c.nlow : 0, rsize = P - lsize;
    int rooted = c.kind == MS_COLL_BCAST || c.kind == MS_COLL_REDUCE || c.kind == MS_COLL_GATHER ||
                 c.kind == MS_COLL_SCATTER || c.kind == MS_COLL_GATHERV || c.kind == MS_COLL_SCATTERV;
    int root_lo = c.root_u < c.nlow;
    int root = 0;
    if (rooted) root = (root_lo == lo) ? (me == c.root_u ? me : MS_COLL_ROOT_NONE) : c.root_u;
    auto f = [&](int from, int to) { return (uint64_t)(((from * 3 + to * 5) % 4) * (c.bytes / 2 + 1)); };
    uint64_t bytes = c.bytes;
    counts.clear();
    switch (c.kind) {
    case MS_COLL_GATHERV: case MS_COLL_SCATTERV:
        if (me == c.root_u)
            for (int i = 0; i < rsize; i++) counts.push_back(f(roff + i, me));
        else bytes = f(me, c.root_u);
        break;
    case MS_COLL_ALLGATHERV:
        bytes = f(me, 0);
        for (int i = 0; i < rsize; i++) counts.push_back(f(roff + i, 0));
        break;
    case MS_COLL_ALLTOALLV:
        for (int i = 0; i < rsize; i++) counts.push_back(f(me, roff + i));
        for (int i = 0; i < rsize; i++) counts.push_back(f(roff + i, me));
        break;
    case MS_COLL_REDUCE_SCATTER: {
        // both groups reduce vectors of one length: split 12 x bytes over the group
        uint64_t total = 12 * c.bytes, left = total;
        for (int i = 0; i < lsize; i++) {
            uint64_t k = i + 1 < lsize ? total / (uint64_t)lsize : left;
            counts.push_back(k);
            left -= k;
        }
        bytes = total;
        break;
    }
    default: break;
    }
    (void)loff;
    ms_coll_spec s{c.kind, 0, P, me, root, bytes, counts.empty() ? nullptr : counts.data(), counts.size(), c.nlow};
    return s;
}

}  // namespace

// Every send of every member has its receive at the peer, in order, with the same size; for the
// rooted kinds, the root's group's other members do nothing.
TEST(InterCollPlans, PairUp)
{
    const ms_coll_kind kinds[] = {MS_COLL_BARRIER, MS_COLL_BCAST, MS_COLL_REDUCE, MS_COLL_ALLREDUCE, MS_COLL_GATHER,
                                  MS_COLL_SCATTER, MS_COLL_ALLGATHER, MS_COLL_ALLTOALL, MS_COLL_GATHERV,
                                  MS_COLL_SCATTERV, MS_COLL_ALLGATHERV, MS_COLL_ALLTOALLV, MS_COLL_REDUCE_SCATTER};
    for (ms_coll_kind k : kinds)
        for (auto g : std::vector<std::pair<int, int>>{{1, 1}, {1, 3}, {3, 1}, {2, 2}, {4, 3}, {5, 8}})
            for (uint64_t B : {8, 3000})
                for (int root : {0, g.first - 1, g.first, g.first + g.second - 1}) {
                    InterCase c{k, g.first, g.second, root, B};
                    int P = g.first + g.second;
                    std::map<std::pair<int, int>, std::vector<uint64_t>> sends, recvs;
                    std::string what = std::string(ms_coll_kind_name(k)) + " " + std::to_string(g.first) + "+" +
                                       std::to_string(g.second) + " B=" + std::to_string(B) + " root=" +
                                       std::to_string(root);
                    for (int me = 0; me < P; me++) {
                        std::vector<uint64_t> counts;
                        ms_coll_spec sp = member_spec(c, me, counts);
                        ms_coll_plan p{};
                        ASSERT_EQ(ms_coll_generate_spec(&p, &sp), 0) << what << " me=" << me;
                        for (size_t i = 0; i < p.nops; i++) {
                            const ms_coll_op &op = p.ops[i];
                            ASSERT_GE(op.peer, 0) << what;
                            ASSERT_LT(op.peer, P) << what;
                            if (op.is_send) sends[{me, op.peer}].push_back(op.bytes);
                            else recvs[{op.peer, me}].push_back(op.bytes);
                        }
                        if (sp.root == MS_COLL_ROOT_NONE) {
                            EXPECT_EQ(p.nops, 0u) << what << " me=" << me;
                        }
                        ms_coll_plan_free(&p);
                    }
                    EXPECT_EQ(sends, recvs) << what;
                    if (k != MS_COLL_BARRIER) {
                        EXPECT_FALSE(sends.empty()) << what;
                    }
                }
}

// Played by the model: an intercommunicator bcast of {0, 1, 2} and {3, 4} from rank 3 reaches the
// low group through its rank 0 (one message from the root, then the low group's own bcast);
// every member of the union completes; a barrier and an allreduce complete everywhere too.
TEST(InterColl, ModelPlaysThem)
{
    Sim s(5);
    const uint64_t U = 77;
    const int members[5] = {0, 1, 2, 3, 4};
    ASSERT_EQ(ms_model_comm_add(s.m, U, 5, members, s.err, sizeof s.err), 0) << s.err;
    for (int r = 0; r < 5; r++) {
        Op b = coll(1, MS_COLL_BCAST, 64, r == 3 ? 3 : r == 4 ? MS_COLL_ROOT_NONE : 3, {}, U);
        b.cargs.inter_low = 3;
        Op a = coll(2, MS_COLL_ALLREDUCE, 64, 0, {}, U);
        a.cargs.inter_low = 3;
        Op c = coll(3, MS_COLL_BARRIER, 0, 0, {}, U);
        c.cargs.inter_low = 3;
        s.prog[r] = {b, wait({1}), a, wait({2}), c, wait({3})};
    }
    s.run();
    ASSERT_FALSE(s.deadlock);
    for (int r = 0; r < 5; r++) EXPECT_EQ(s.log[r].size(), 3u) << "rank " << r;
    // the bcast: root -> low rank 0, then rank 0 -> 2 and 1 (binomial), two sends of its own
    EXPECT_EQ(s.result(0, 1).complete_time, OS + lat(64) + OR + 2 * OS);
    EXPECT_EQ(s.result(4, 1).complete_time, 0) << "MPI_PROC_NULL: nothing to do";
    EXPECT_GT(s.result(1, 1).complete_time, s.result(0, 1).complete_time);
}

TEST(InterColl, BadArgumentsAreRefused)
{
    Sim s(4);
    ms_coll_args a{MS_COLL_ALLREDUCE, 0, 8, nullptr, 0, 4};   // the low group is the whole communicator
    EXPECT_NE(ms_model_icoll(s.m, 0, 0, 1, MS_COMM_WORLD, &a, s.err, sizeof s.err), 0);
    ms_coll_args sc{MS_COLL_SCAN, 0, 8, nullptr, 0, 2};   // no intercommunicator form
    EXPECT_NE(ms_model_icoll(s.m, 0, 0, 2, MS_COMM_WORLD, &sc, s.err, sizeof s.err), 0);
    ms_coll_args g{MS_COLL_GATHERV, 0, 8, nullptr, 0, 2};   // the root without its counts
    EXPECT_NE(ms_model_icoll(s.m, 0, 0, 3, MS_COMM_WORLD, &g, s.err, sizeof s.err), 0);
}
