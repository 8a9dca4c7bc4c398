// Point-to-point timing and semantics of the MPI layer model against the contract in
// libmpisim/model/README.md, on the analytic network with default parameters.
#include "model_test_util.h"

using namespace mt;

static const int64_t OS = 400000, OR = 400000, POLL = 100000;

TEST(ModelP2P, EagerSingleMessageExact)
{
    for (uint64_t B : {0ull, 1ull, 100ull, 4095ull, 4096ull, 4097ull, 10000ull, 16383ull}) {
        Sim s(2);
        s.prog[0] = {isend(1, 1, 7, B), wait({1})};
        s.prog[1] = {irecv(1, 0, 7, B), wait({1})};
        s.run();
        ASSERT_FALSE(s.deadlock);
        // sender: the standard eager send completes after its overhead
        EXPECT_EQ(s.log[0].back().t, OS) << B;
        // receiver: o_s, packets injected together, then o_r
        EXPECT_EQ(s.log[1].back().t, OS + msg_lat(B) + OR) << B;
        const auto &r = s.result(1, 1);
        EXPECT_EQ(r.source, 0);
        EXPECT_EQ(r.tag, 7);
        EXPECT_EQ(r.bytes, B);
        EXPECT_EQ(r.complete_time, OS + msg_lat(B) + OR);
    }
}

TEST(ModelP2P, RendezvousSingleMessageExact)
{
    for (uint64_t B : {16384ull, 20000ull, 100000ull}) {
        Sim s(2);
        s.prog[0] = {isend(1, 1, 3, B), wait({1})};
        s.prog[1] = {irecv(1, 0, 3, B), wait({1})};
        s.run();
        ASSERT_FALSE(s.deadlock);
        int64_t rts = OS + lat(0);            // RTS delivered; receive already posted: match
        int64_t cts = rts + OR + lat(0);      // CTS sent after o_r(0), delivered
        int64_t data = cts + msg_lat(B);      // data injected at CTS delivery
        EXPECT_EQ(s.log[0].back().t, data) << B;
        EXPECT_EQ(s.log[1].back().t, data + OR) << B;
    }
}

TEST(ModelP2P, RendezvousLateReceive)
{
    const uint64_t B = 50000;
    const int64_t T = 1000000000;   // receiver posts at 1 ms
    Sim s(2);
    s.prog[0] = {isend(1, 1, 0, B), wait({1})};
    s.prog[1] = {compute(T), irecv(1, 0, 0, B), wait({1})};
    s.run();
    int64_t data = T + OR + lat(0) + msg_lat(B);
    EXPECT_EQ(s.log[0].back().t, data);
    EXPECT_EQ(s.log[1].back().t, data + OR);
}

// MPI_Bsend is local: above the eager threshold it returns after its copy, whether or not the
// receive is posted; the data follows by rendezvous once the receiver posts.
TEST(ModelP2P, BufferedRendezvousIsLocal)
{
    const uint64_t B = 50000;
    const int64_t T = 1000000000;   // receiver posts at 1 ms
    Sim s(2);
    s.prog[0] = {isend(1, 1, 0, B, MS_SEND_BUFFERED), wait({1})};
    s.prog[1] = {compute(T), irecv(1, 0, 0, B), wait({1})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    EXPECT_EQ(s.log[0].back().t, OS);
    EXPECT_EQ(s.log[1].back().t, T + OR + lat(0) + msg_lat(B) + OR);
    // a head-on exchange that only buffering lets through: rank 0 Bsends, rank 1 Sends (both
    // rendezvous), each then receives; a Bsend that waited for its receive deadlocked here
    Sim h(2);
    h.prog[0] = {isend(1, 1, 0, B, MS_SEND_BUFFERED), wait({1}), irecv(2, 1, 0, B), wait({2})};
    h.prog[1] = {isend(1, 0, 0, B), wait({1}), irecv(2, 0, 0, B), wait({2})};
    h.run();
    EXPECT_FALSE(h.deadlock);
}

TEST(ModelP2P, PingPongExact)
{
    const int N = 10;
    for (uint64_t B : {1ull, 1024ull, 8192ull, 32768ull}) {
        Sim s(2);
        for (int i = 0; i < N; i++) {
            s.prog[0].push_back(isend(2 * i + 1, 1, 0, B));
            s.prog[0].push_back(wait({(uint64_t)(2 * i + 1)}));
            s.prog[0].push_back(irecv(2 * i + 2, 1, 0, B));
            s.prog[0].push_back(wait({(uint64_t)(2 * i + 2)}));
            s.prog[1].push_back(irecv(2 * i + 1, 0, 0, B));
            s.prog[1].push_back(wait({(uint64_t)(2 * i + 1)}));
            s.prog[1].push_back(isend(2 * i + 2, 0, 0, B));
            s.prog[1].push_back(wait({(uint64_t)(2 * i + 2)}));
        }
        s.run();
        ASSERT_FALSE(s.deadlock);
        // one-way time of the contract: eager o_s + L + o_r; rendezvous (receive always posted
        // first) o_s + L(0) + o_r + L(0) + L_msg(B) + o_r
        int64_t one_way = B < 16384 ? OS + msg_lat(B) + OR : OS + lat(0) + OR + lat(0) + msg_lat(B) + OR;
        EXPECT_EQ(s.clock[0], 2 * N * one_way) << B;
    }
}

TEST(ModelP2P, PingPongConservativeDriverSame)
{
    // The same program driven one call at a time gives the same times.
    for (int mode = 0; mode < 2; mode++) {
        Sim s(2);
        for (int i = 0; i < 5; i++) {
            s.prog[0].push_back(isend(2 * i + 1, 1, 0, 2000));
            s.prog[0].push_back(irecv(2 * i + 2, 1, 0, 2000));
            s.prog[0].push_back(wait({(uint64_t)(2 * i + 1), (uint64_t)(2 * i + 2)}));
            s.prog[1].push_back(irecv(2 * i + 1, 0, 0, 2000));
            s.prog[1].push_back(wait({(uint64_t)(2 * i + 1)}));
            s.prog[1].push_back(isend(2 * i + 2, 0, 0, 2000));
            s.prog[1].push_back(wait({(uint64_t)(2 * i + 2)}));
        }
        s.run(mode == 1);
        EXPECT_EQ(s.clock[0], 10 * (OS + msg_lat(2000) + OR));
    }
}

TEST(ModelP2P, AnySourceMatchesByVirtualTime)
{
    // Rank 1 posts its send first in call order but late in virtual time; rank 2's send arrives
    // first and must win the wildcard receive.
    Sim s(3);
    s.prog[0] = {irecv(1, MS_ANY_SOURCE, MS_ANY_TAG, 8), irecv(2, MS_ANY_SOURCE, MS_ANY_TAG, 8), wait({1}), wait({2})};
    s.prog[1] = {compute(50000000), isend(1, 0, 11, 8), wait({1})};
    s.prog[2] = {compute(10000000), isend(1, 0, 22, 8), wait({1})};
    s.run();   // greedy: rank 1 reports before rank 2
    ASSERT_FALSE(s.deadlock);
    EXPECT_EQ(s.result(0, 1).source, 2);
    EXPECT_EQ(s.result(0, 1).tag, 22);
    EXPECT_EQ(s.result(0, 2).source, 1);
    EXPECT_EQ(s.result(0, 2).tag, 11);
    ASSERT_EQ(s.resol[0].size(), 2u);
    EXPECT_EQ(s.resol[0][0].req, 1u);
    EXPECT_EQ(s.resol[0][0].source, 2);
    EXPECT_EQ(s.resol[0][1].req, 2u);
    EXPECT_EQ(s.resol[0][1].source, 1);
    EXPECT_EQ(s.result(0, 1).complete_time, 10000000 + OS + lat(8) + OR);
}

// A receive the shim holds back behind an undecided wildcard asks to be told when it matches
// (ms_model_irecv_notify): resolutions come in match order, the wildcard's first.
TEST(ModelP2P, NotifiedReceiveGetsAResolution)
{
    Sim s(2);
    Op held = irecv(2, 1, 5, 20000);
    held.notify = 1;
    s.prog[0] = {irecv(1, MS_ANY_SOURCE, MS_ANY_TAG, 20000), held, wait({2}), wait({1}), irecv(3, 1, 5, 8), wait({3})};
    s.prog[1] = {isend(1, 0, 5, 20000), isend(2, 0, 5, 20000), isend(3, 0, 5, 8), wait({1, 2, 3})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    ASSERT_EQ(s.resol[0].size(), 2u);   // not for the third receive: nobody asked
    EXPECT_EQ(s.resol[0][0].req, 1u);
    EXPECT_EQ(s.resol[0][1].req, 2u);
    EXPECT_EQ(s.resol[0][1].source, 1);
    EXPECT_EQ(s.resol[0][1].tag, 5);
    EXPECT_LE(s.result(0, 1).complete_time, s.result(0, 2).complete_time);
    EXPECT_NE(ms_model_irecv_notify(s.m, 0, 99), 0);   // no such receive
}

TEST(ModelP2P, AnySourceReceivesPostedInOrder)
{
    // Two messages arrive before the receives: the earliest-arrived matches the first receive.
    Sim s(3);
    s.prog[0] = {compute(100000000), irecv(1, MS_ANY_SOURCE, 5), irecv(2, MS_ANY_SOURCE, 5), wait({1, 2})};
    s.prog[1] = {compute(2000000), isend(1, 0, 5, 100), wait({1})};
    s.prog[2] = {compute(1000000), isend(1, 0, 5, 100), wait({1})};
    s.run();
    EXPECT_EQ(s.result(0, 1).source, 2);
    EXPECT_EQ(s.result(0, 2).source, 1);
    // unexpected messages: completion at post + o_r
    EXPECT_EQ(s.result(0, 1).complete_time, 100000000 + OR);
}

TEST(ModelP2P, SpecificBeforeWildcardByPostingOrder)
{
    // A specific receive posted before a wildcard receive gets the message from its source.
    Sim s(2);
    s.prog[0] = {irecv(1, 1, 0), irecv(2, MS_ANY_SOURCE, 0), compute(100000000), wait({1, 2})};
    s.prog[1] = {isend(1, 0, 0, 4), isend(2, 0, 0, 4), wait({1, 2})};
    s.run();
    EXPECT_EQ(s.result(0, 1).source, 1);
    EXPECT_EQ(s.result(0, 2).source, 1);
    // first message to req 1 (specific), second to req 2
    EXPECT_LT(s.result(0, 1).complete_time, s.result(0, 2).complete_time);
}

TEST(ModelP2P, NonOvertaking)
{
    // Same source, same tag: a large (rendezvous) message then a small (eager) one; the
    // receives, posted in order, get them in send order; also with a later posted receive.
    for (int late = 0; late < 2; late++) {
        Sim s(2);
        s.prog[0] = {isend(1, 1, 9, 40000), isend(2, 1, 9, 10), isend(3, 1, 9, 5000), wait({1, 2, 3})};
        if (late) s.prog[1].push_back(compute(500000000));
        s.prog[1].push_back(irecv(1, 0, 9));
        s.prog[1].push_back(irecv(2, MS_ANY_SOURCE, MS_ANY_TAG));
        s.prog[1].push_back(irecv(3, 0, 9));
        s.prog[1].push_back(wait({1, 2, 3}));
        s.run();
        ASSERT_FALSE(s.deadlock);
        EXPECT_EQ(s.result(1, 1).bytes, 40000u);
        EXPECT_EQ(s.result(1, 2).bytes, 10u);
        EXPECT_EQ(s.result(1, 3).bytes, 5000u);
    }
}

TEST(ModelP2P, TagsSelect)
{
    Sim s(2);
    s.prog[0] = {isend(1, 1, 1, 10), isend(2, 1, 2, 20), wait({1, 2})};
    s.prog[1] = {compute(100000000), irecv(1, 0, 2), irecv(2, 0, 1), wait({1, 2})};
    s.run();
    EXPECT_EQ(s.result(1, 1).bytes, 20u);
    EXPECT_EQ(s.result(1, 2).bytes, 10u);
}

TEST(ModelP2P, UnexpectedEager)
{
    const int64_t T = 200000000;
    Sim s(2);
    s.prog[0] = {isend(1, 1, 0, 64), wait({1})};
    s.prog[1] = {compute(T), irecv(1, 0, 0, 64), wait({1})};
    s.run();
    EXPECT_EQ(s.log[0].back().t, OS);
    EXPECT_EQ(s.log[1].back().t, T + OR);
}

// mpi.recv_unexpected_overhead: an eager receive posted after its message arrived costs more
// (the library copies it out of its unexpected queue); one posted before costs o_r alone
TEST(ModelP2P, UnexpectedEagerExtraCost)
{
    const int64_t T = 200000000, U = 30000, UPB = 7;
    const uint64_t B = 64;
    const std::vector<std::string> keys = {"mpi.recv_unexpected_overhead=30000", "mpi.recv_unexpected_overhead_per_byte=7"};
    Sim late(2, keys);
    late.prog[0] = {isend(1, 1, 0, B), wait({1})};
    late.prog[1] = {compute(T), irecv(1, 0, 0, B), wait({1})};
    late.run();
    EXPECT_EQ(late.log[1].back().t, T + OR + U + UPB * (int64_t)B);
    Sim early(2, keys);
    early.prog[0] = {isend(1, 1, 0, B), wait({1})};
    early.prog[1] = {irecv(1, 0, 0, B), wait({1})};
    early.run();
    EXPECT_EQ(early.log[1].back().t, OS + msg_lat(B) + OR);
    // rendezvous: the handshake waits for the receive anyway; no extra
    Sim rndv(2, keys);
    rndv.prog[0] = {isend(1, 1, 0, 100000), wait({1})};
    rndv.prog[1] = {compute(T), irecv(1, 0, 0, 100000), wait({1})};
    rndv.run();
    Sim rndv0(2);
    rndv0.prog[0] = {isend(1, 1, 0, 100000), wait({1})};
    rndv0.prog[1] = {compute(T), irecv(1, 0, 0, 100000), wait({1})};
    rndv0.run();
    EXPECT_EQ(rndv.log[1].back().t, rndv0.log[1].back().t);
}

TEST(ModelP2P, SynchronousSendCompletesAfterMatch)
{
    const int64_t T = 300000000;
    Sim s(2);
    s.prog[0] = {isend(1, 1, 0, 64, MS_SEND_SYNC), wait({1})};
    s.prog[1] = {compute(T), irecv(1, 0, 0, 64), wait({1})};
    s.run();
    // ACK (control packet) sent by the receiver at match time T
    EXPECT_EQ(s.log[0].back().t, T + lat(0));
    EXPECT_EQ(s.log[1].back().t, T + OR);
    // receive posted first: ACK at delivery time
    Sim s2(2);
    s2.prog[0] = {isend(1, 1, 0, 64, MS_SEND_SYNC), wait({1})};
    s2.prog[1] = {irecv(1, 0, 0, 64), wait({1})};
    s2.run();
    EXPECT_EQ(s2.log[0].back().t, OS + lat(64) + lat(0));
}

TEST(ModelP2P, ReadyAndBufferedLikeStandard)
{
    for (ms_send_mode mode : {MS_SEND_READY, MS_SEND_BUFFERED}) {
        Sim s(2);
        s.prog[0] = {isend(1, 1, 0, 64, mode), wait({1})};
        s.prog[1] = {irecv(1, 0, 0, 64), wait({1})};
        s.run();
        EXPECT_EQ(s.log[0].back().t, OS);
        EXPECT_EQ(s.log[1].back().t, OS + lat(64) + OR);
    }
}

TEST(ModelP2P, TestSemantics)
{
    Sim s(2);
    s.prog[0] = {isend(1, 1, 0, 1000), wait({1})};
    s.prog[1] = {irecv(1, 0, 0, 1000), test_loop(1)};
    s.run();
    ASSERT_FALSE(s.deadlock);
    int64_t done = OS + lat(1000) + OR;
    // tests at 0, POLL, 2 POLL, ...; the first at k*POLL >= done succeeds, returns k*POLL + POLL
    int64_t k = (done + POLL - 1) / POLL;
    EXPECT_EQ(s.tests[1], k + 1);
    EXPECT_EQ(s.clock[1], k * POLL + POLL);
    EXPECT_EQ(s.result(1, 1).complete_time, done);
    // every unsuccessful test reported completed = 0 and the request stayed
    for (size_t i = 0; i + 1 < s.log[1].size(); i++) EXPECT_EQ(s.log[1][i].res[0].completed, 0);
}

TEST(ModelP2P, TestAllOnlyIfAll)
{
    Sim s(2);
    s.prog[0] = {isend(1, 1, 0, 8), compute(500000000), isend(2, 1, 1, 8), wait({1, 2})};
    s.prog[1] = {irecv(1, 0, 0), irecv(2, 0, 1), compute(100000000), wait({1, 2}, MS_TEST_ALL),
                 compute(100000000), wait({1, 2}, MS_TEST_SOME), wait({2})};
    s.run();
    ASSERT_GE(s.log[1].size(), 3u);
    EXPECT_EQ(s.log[1][0].t, 100000000 + POLL);
    EXPECT_EQ(s.log[1][0].res[0].completed, 0);   // req 1 done but not all
    EXPECT_EQ(s.log[1][0].res[1].completed, 0);
    EXPECT_EQ(s.log[1][1].res[0].completed, 1);   // testsome reports req 1
    EXPECT_EQ(s.log[1][1].res[1].completed, 0);
    EXPECT_EQ(s.log[1][2].res[0].completed, 1);
}

TEST(ModelP2P, WaitAnyPicksEarliest)
{
    Sim s(3);
    s.prog[0] = {irecv(1, 1, 0), irecv(2, 2, 0), wait({1, 2}, MS_WAIT_ANY), wait({1}, MS_WAIT_ANY)};
    s.prog[1] = {compute(20000000), isend(1, 0, 0, 8), wait({1})};
    s.prog[2] = {compute(10000000), isend(1, 0, 0, 8), wait({1})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    ASSERT_EQ(s.log[0].size(), 2u);
    EXPECT_EQ(s.log[0][0].res[0].completed, 0);
    EXPECT_EQ(s.log[0][0].res[1].completed, 1);
    EXPECT_EQ(s.log[0][0].t, 10000000 + OS + lat(8) + OR);
    EXPECT_EQ(s.log[0][1].t, 20000000 + OS + lat(8) + OR);
}

TEST(ModelP2P, WaitSomeReportsAllDoneByThen)
{
    Sim s(3);
    s.prog[0] = {irecv(1, 1, 0), irecv(2, 2, 0), compute(100000000), wait({1, 2}, MS_WAIT_SOME)};
    s.prog[1] = {isend(1, 0, 0, 8), wait({1})};
    s.prog[2] = {isend(1, 0, 0, 8), wait({1})};
    s.run();
    ASSERT_EQ(s.log[0].size(), 1u);
    EXPECT_EQ(s.log[0][0].t, 100000000);
    EXPECT_EQ(s.log[0][0].res[0].completed, 1);
    EXPECT_EQ(s.log[0][0].res[1].completed, 1);
}

TEST(ModelP2P, ProbeAndIprobe)
{
    Sim s(2);
    // Iprobe at 0 finds nothing; blocking probe waits for the arrival; then receive it.
    s.prog[0] = {probe(MS_ANY_SOURCE, MS_ANY_TAG, 0), probe(MS_ANY_SOURCE, MS_ANY_TAG, 1), irecv(1, 1, 4), wait({1})};
    s.prog[1] = {compute(5000000), isend(1, 0, 4, 300), wait({1})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    ASSERT_EQ(s.log[0].size(), 3u);
    EXPECT_EQ(s.log[0][0].t, POLL);
    EXPECT_EQ(s.log[0][0].res[0].completed, 0);
    int64_t arr = 5000000 + OS + lat(300);
    EXPECT_EQ(s.log[0][1].t, arr);
    EXPECT_EQ(s.log[0][1].res[0].completed, 1);
    EXPECT_EQ(s.log[0][1].res[0].source, 1);
    EXPECT_EQ(s.log[0][1].res[0].tag, 4);
    EXPECT_EQ(s.log[0][1].res[0].bytes, 300u);
    EXPECT_EQ(s.log[0][2].t, arr + OR);
    ASSERT_EQ(s.resol[0].size(), 1u);
    EXPECT_EQ(s.resol[0][0].req, MS_RESOLUTION_PROBE);
}

TEST(ModelP2P, IprobeFindsArrived)
{
    Sim s(2);
    s.prog[0] = {compute(50000000), probe(1, 4, 0), irecv(1, 1, 4), wait({1})};
    s.prog[1] = {isend(1, 0, 4, 300), wait({1})};
    s.run();
    EXPECT_EQ(s.log[0][0].t, 50000000 + POLL);
    EXPECT_EQ(s.log[0][0].res[0].completed, 1);
    EXPECT_TRUE(s.resol[0].empty());   // not a wildcard
}

TEST(ModelP2P, ProcNull)
{
    Sim s(2);
    s.prog[0] = {isend(1, MS_PROC_NULL, 0, 100), irecv(2, MS_PROC_NULL, 0, 100), wait({1, 2})};
    s.run();
    EXPECT_EQ(s.log[0].back().t, OS);   // the isend's own cost only
    EXPECT_EQ(s.result(0, 2).source, MS_PROC_NULL);
    EXPECT_EQ(s.total_sent(), 0u);
}

TEST(ModelP2P, SelfMessage)
{
    Sim s(2);
    s.prog[0] = {irecv(1, 0, 0), isend(2, 0, 0, 100), wait({1, 2})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    EXPECT_EQ(s.result(0, 1).complete_time, OS + OR);   // no network for a message to self
    Sim s2(1);
    s2.prog[0] = {irecv(1, 0, 0, 0, MS_COMM_SELF), isend(2, 0, 0, 50000, MS_SEND_STANDARD, MS_COMM_SELF), wait({1, 2})};
    s2.run();
    ASSERT_FALSE(s2.deadlock);
    EXPECT_EQ(s2.result(0, 1).bytes, 50000u);
}

TEST(ModelP2P, Deadlock)
{
    Sim s(2);
    s.prog[0] = {irecv(1, 1, 7, 8), wait({1}), isend(2, 1, 7, 8), wait({2})};
    s.prog[1] = {compute(12500000), irecv(1, 0, 7, 8), wait({1}), isend(2, 0, 7, 8), wait({2})};
    s.run();
    EXPECT_TRUE(s.deadlock);
    EXPECT_EQ(ms_model_next_time(s.m), NM_TIME_NEVER);
    EXPECT_TRUE(ms_model_rank_blocked(s.m, 0));
    EXPECT_TRUE(ms_model_rank_blocked(s.m, 1));
    char buf[256];
    ASSERT_EQ(ms_model_describe_wait(s.m, 0, buf, sizeof buf), 0);
    EXPECT_EQ(std::string(buf), "MPI_Wait on recv from rank 1 tag 7 comm 0 (posted at 0.000 us)");
    ASSERT_EQ(ms_model_describe_wait(s.m, 1, buf, sizeof buf), 0);
    EXPECT_EQ(std::string(buf), "MPI_Wait on recv from rank 0 tag 7 comm 0 (posted at 12.500 us)");
}

TEST(ModelP2P, Communicators)
{
    Sim s(4);
    char err[256];
    int members[2] = {3, 1};
    int other[2] = {1, 3};
    ASSERT_EQ(ms_model_comm_add(s.m, 5, 2, members, err, sizeof err), 0) << err;
    ASSERT_EQ(ms_model_comm_add(s.m, 5, 2, members, err, sizeof err), 0) << err;   // idempotent
    EXPECT_NE(ms_model_comm_add(s.m, 5, 2, other, err, sizeof err), 0);
    EXPECT_NE(ms_model_comm_add(s.m, MS_COMM_WORLD, 2, members, err, sizeof err), 0);
    // comm 5: rank 0 = world 3, rank 1 = world 1
    s.prog[3] = {isend(1, 1, 0, 10, MS_SEND_STANDARD, 5), irecv(2, 1, 0, 0, 5), wait({1, 2})};
    s.prog[1] = {irecv(1, MS_ANY_SOURCE, 0, 0, 5), wait({1}), isend(2, 0, 0, 20, MS_SEND_STANDARD, 5), wait({2})};
    // a world message with the same tag must not match comm 5 receives
    s.prog[0] = {isend(1, 1, 0, 99), wait({1})};
    s.prog[2] = {};
    s.prog[1].push_back(irecv(3, 0, 0));
    s.prog[1].push_back(wait({3}));
    // not a member
    EXPECT_NE(ms_model_isend(s.m, 0, 0, 77, 5, 0, 0, 1, MS_SEND_STANDARD, err, sizeof err), 0);
    s.run();
    ASSERT_FALSE(s.deadlock);
    EXPECT_EQ(s.result(1, 1).source, 0);
    EXPECT_EQ(s.result(1, 1).bytes, 10u);
    EXPECT_EQ(s.result(3, 2).bytes, 20u);
    EXPECT_EQ(s.result(1, 3).bytes, 99u);
}

TEST(ModelP2P, Errors)
{
    Sim s(2);
    char err[256];
    EXPECT_NE(ms_model_isend(s.m, 0, 0, 1, MS_COMM_WORLD, 5, 0, 1, MS_SEND_STANDARD, err, sizeof err), 0);
    EXPECT_NE(ms_model_isend(s.m, 0, 0, 1, 42, 1, 0, 1, MS_SEND_STANDARD, err, sizeof err), 0);
    EXPECT_EQ(ms_model_isend(s.m, 0, 0, 1, MS_COMM_WORLD, 1, 0, 1, MS_SEND_STANDARD, err, sizeof err), 0);
    EXPECT_NE(ms_model_isend(s.m, 0, 0, 1, MS_COMM_WORLD, 1, 0, 1, MS_SEND_STANDARD, err, sizeof err), 0);   // dup id
    uint64_t bad = 99;
    EXPECT_NE(ms_model_wait(s.m, 0, 0, MS_WAIT_ALL, 1, &bad, err, sizeof err), 0);
    EXPECT_FALSE(ms_model_rank_blocked(s.m, 0));
}

TEST(ModelP2P, ConfigKeysRegistered)
{
    nm_config *cfg = nm_config_create();
    char err[256];
    ASSERT_EQ(ms_model_register_keys(cfg, err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(cfg, "mpi.eager_threshold"), 16384);
    EXPECT_EQ(nm_config_int(cfg, "mpi.send_overhead"), 400000);
    EXPECT_EQ(nm_config_int(cfg, "mpi.recv_overhead"), 400000);
    EXPECT_EQ(nm_config_int(cfg, "mpi.packet_payload"), 4096);
    EXPECT_EQ(nm_config_int(cfg, "mpi.poll_cost"), 100000);
    EXPECT_STREQ(nm_config_string(cfg, "mpi.coll.bcast.algorithm"), "auto");
    EXPECT_EQ(nm_config_set(cfg, "mpi.send_overhead=1.5 us", "--set", err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(cfg, "mpi.send_overhead"), 1500000);
    EXPECT_EQ(nm_config_set(cfg, "mpi.eager_threshold=32 KiB", "--set", err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(cfg, "mpi.eager_threshold"), 32768);
    EXPECT_EQ(nm_config_set(cfg, "mpi.send_overhead_per_byte=3", "--set", err, sizeof err), 0) << err;
    EXPECT_NE(nm_config_set(cfg, "mpi.coll.bcast.algorithm=nonsense", "--set", err, sizeof err), 0);
    EXPECT_EQ(nm_config_set(cfg, "mpi.coll.bcast.algorithm=scatter_ring_allgather", "--set", err, sizeof err), 0);
    EXPECT_NE(nm_config_set(cfg, "mpi.packet_payload=0", "--set", err, sizeof err), 0);
    nm_config_destroy(cfg);
}

TEST(ModelP2P, OverheadParametersApply)
{
    Sim s(2, {"mpi.send_overhead=1000000", "mpi.recv_overhead=2000000", "mpi.send_overhead_per_byte=10",
              "mpi.recv_overhead_per_byte=20", "mpi.eager_threshold=100000", "mpi.packet_payload=1024"});
    const uint64_t B = 3000;
    s.prog[0] = {isend(1, 1, 0, B), wait({1})};
    s.prog[1] = {irecv(1, 0, 0, B), wait({1})};
    s.run();
    int64_t os = 1000000 + 10 * (int64_t)B, orr = 2000000 + 20 * (int64_t)B;
    EXPECT_EQ(s.log[0].back().t, os);
    EXPECT_EQ(s.log[1].back().t, os + msg_lat(B, 1024) + orr);
}

TEST(ModelP2P, GapSpacesMessages)
{
    const int64_t G = 2300000;
    Sim s(3, {"mpi.gap=2300000"});
    s.prog[0] = {isend(1, 1, 0, 8), isend(2, 2, 0, 8), wait({1, 2})};
    s.prog[1] = {irecv(1, 0, 0), wait({1})};
    s.prog[2] = {irecv(1, 0, 0), wait({1})};
    s.run();
    EXPECT_EQ(s.log[1].back().t, OS + lat(8) + OR);
    EXPECT_EQ(s.log[2].back().t, OS + G + lat(8) + OR);   // second start waits for the gap
}

TEST(ModelP2P, Determinism)
{
    auto build = [](Sim &s) {
        // a small all-pairs exchange with wildcards and mixed sizes
        for (int r = 0; r < s.n; r++) {
            uint64_t id = 1;
            std::vector<uint64_t> ids;
            for (int k = 0; k < s.n; k++) {
                if (k == r) continue;
                s.prog[r].push_back(irecv(id, MS_ANY_SOURCE, MS_ANY_TAG));
                ids.push_back(id++);
            }
            s.prog[r].push_back(compute(1000 * (r * 7 % 5)));
            for (int k = 0; k < s.n; k++) {
                if (k == r) continue;
                s.prog[r].push_back(isend(id, k, r, (uint64_t)(100 + 9000 * ((r + k) % 3))));
                ids.push_back(id++);
            }
            s.prog[r].push_back(wait(ids));
        }
    };
    std::vector<std::vector<int64_t>> times[2];
    std::vector<std::vector<int>> srcs[2];
    for (int mode = 0; mode < 2; mode++) {
        Sim s(6);
        build(s);
        s.run(mode == 1);
        ASSERT_FALSE(s.deadlock);
        for (int r = 0; r < 6; r++) {
            std::vector<int64_t> t;
            std::vector<int> src;
            for (auto &kv : s.done[r]) {
                t.push_back(kv.second.complete_time);
                src.push_back(kv.second.source);
            }
            times[mode].push_back(t);
            srcs[mode].push_back(src);
        }
    }
    EXPECT_EQ(times[0], times[1]);
    EXPECT_EQ(srcs[0], srcs[1]);
}

TEST(ModelP2P, RanksSharingAHost)
{
    // ranks 0 and 1 on host 0, rank 2 on host 1: 0 -> 1 stays on the host (no network)
    nm_config *cfg = nm_config_create();
    char err[256];
    ASSERT_EQ(ms_model_register_keys(cfg, err, sizeof err), 0);
    nm_topology *topo = nm_topology_load("crossbar:2", cfg, err, sizeof err);
    ASSERT_NE(topo, nullptr) << err;
    nm_network *net = nm_network_create(cfg, topo, err, sizeof err);
    ASSERT_NE(net, nullptr) << err;
    int map[3] = {0, 0, 1};
    ms_model *m = ms_model_create(cfg, net, 3, map, err, sizeof err);
    ASSERT_NE(m, nullptr) << err;
    std::vector<std::pair<int, int64_t>> res;
    ms_model_set_resume(m, [](void *u, int rank, int, ms_time_t t, const ms_req_result *, size_t) {
        static_cast<std::vector<std::pair<int, int64_t>> *>(u)->push_back({rank, t});
    }, &res);
    ASSERT_EQ(ms_model_irecv(m, 1, 0, 1, MS_COMM_WORLD, 0, 0, 8, err, sizeof err), 0);
    ASSERT_EQ(ms_model_irecv(m, 2, 0, 1, MS_COMM_WORLD, 0, 0, 8, err, sizeof err), 0);
    ASSERT_EQ(ms_model_isend(m, 0, 0, 1, MS_COMM_WORLD, 1, 0, 8, MS_SEND_STANDARD, err, sizeof err), 0);
    ASSERT_EQ(ms_model_isend(m, 0, OS, 2, MS_COMM_WORLD, 2, 0, 8, MS_SEND_STANDARD, err, sizeof err), 0);
    uint64_t one = 1;
    ASSERT_EQ(ms_model_wait(m, 1, 0, MS_WAIT_ALL, 1, &one, err, sizeof err), 0);
    ASSERT_EQ(ms_model_wait(m, 2, 0, MS_WAIT_ALL, 1, &one, err, sizeof err), 0);
    while (ms_model_next_time(m) != NM_TIME_NEVER) ASSERT_EQ(ms_model_run_until(m, NM_TIME_NEVER), 0);
    ASSERT_EQ(res.size(), 2u);
    EXPECT_EQ(res[0], std::make_pair(1, OS + OR));
    EXPECT_EQ(res[1], std::make_pair(2, 2 * OS + lat(8) + OR));
    EXPECT_EQ(ms_model_last_error(m, nullptr), nullptr);
    EXPECT_EQ(ms_model_clamped_injections(m), 0u);
    ms_model_destroy(m);
    nm_network_destroy(net);
    nm_topology_destroy(topo);
    nm_config_destroy(cfg);
}

// MPI_Cancel of a receive: decided in virtual time at the cancel's time.
TEST(ModelP2P, CancelUnmatchedReceive)
{
    const int64_t T = 5000000;
    Sim s(2);
    s.prog[0] = {compute(T), irecv(1, MS_ANY_SOURCE, MS_ANY_TAG, 8), cancel(1), wait({1})};
    s.prog[1] = {};
    s.run();
    ASSERT_FALSE(s.deadlock);
    const auto &r = s.result(0, 1);
    EXPECT_EQ(r.cancelled, 1);
    EXPECT_EQ(r.source, -1);
    EXPECT_EQ(r.complete_time, T + ms_model_irecv_cost(s.m, 8));
    EXPECT_TRUE(s.resol[0].empty());   // a cancelled wildcard is never resolved
}

TEST(ModelP2P, CancelAfterMatchFails)
{
    const int64_t T = 300000000;   // the message arrived long before the cancel
    Sim s(2);
    s.prog[0] = {isend(1, 1, 4, 64), wait({1})};
    s.prog[1] = {irecv(1, 0, 4, 64), compute(T), cancel(1), wait({1})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    const auto &r = s.result(1, 1);
    EXPECT_EQ(r.cancelled, 0);
    EXPECT_EQ(r.source, 0);
    EXPECT_EQ(r.bytes, 64u);
    EXPECT_EQ(r.complete_time, OS + msg_lat(64) + OR);
}

TEST(ModelP2P, CancelledReceiveLeavesMessageForTheNext)
{
    const int64_t T = 300000000;   // the sender sends after the cancel
    Sim s(2);
    s.prog[0] = {compute(T), isend(1, 1, 4, 64), wait({1})};
    s.prog[1] = {irecv(1, 0, 4, 64), cancel(1), wait({1}), irecv(2, 0, 4, 64), wait({2})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    EXPECT_EQ(s.result(1, 1).cancelled, 1);
    const auto &r2 = s.result(1, 2);
    EXPECT_EQ(r2.cancelled, 0);
    EXPECT_EQ(r2.source, 0);
    EXPECT_EQ(r2.complete_time, T + OS + msg_lat(64) + OR);
}

TEST(ModelP2P, CancelOfSendFailsAndUnknownIsAnError)
{
    Sim s(2);
    char err[256];
    EXPECT_NE(ms_model_cancel(s.m, 0, 0, 99, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("not active"), std::string::npos) << err;
    s.prog[0] = {isend(1, 1, 4, 64), cancel(1), wait({1})};
    s.prog[1] = {irecv(1, 0, 4, 64), wait({1})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    EXPECT_EQ(s.result(0, 1).cancelled, 0);
    EXPECT_EQ(s.result(1, 1).bytes, 64u);
}

// MPI_Request_free of an active send: the message still goes; the model drops the request.
TEST(ModelP2P, RequestFreeOfSend)
{
    for (uint64_t B : {64ull, 50000ull}) {   // eager and rendezvous
        Sim s(2);
        s.prog[0] = {isend(1, 1, 4, B), request_free(1), isend(2, 1, 5, 8), wait({2}), compute(1000000000)};
        s.prog[1] = {irecv(1, 0, 4, B), irecv(2, 0, 5, 8), wait({1, 2})};
        s.run();
        ASSERT_FALSE(s.deadlock) << B;
        EXPECT_EQ(s.result(1, 1).bytes, B);
        EXPECT_EQ(ms_model_active_requests(s.m), 0u) << B;   // the freed request is gone too
        char err[256];
        EXPECT_NE(ms_model_forget(s.m, 1, 77, err, sizeof err), 0);
        EXPECT_NE(std::string(err).find("not active"), std::string::npos) << err;
    }
}

// MPI_Request_get_status (MS_TEST_PEEK): answers like MPI_Test but the request stays for a wait.
TEST(ModelP2P, PeekLeavesTheRequest)
{
    Sim s(2);
    s.prog[0] = {isend(1, 1, 4, 64), wait({1})};
    s.prog[1] = {irecv(1, 0, 4, 64), compute(300000000), wait({1}, MS_TEST_PEEK), wait({1})};
    s.run();
    ASSERT_FALSE(s.deadlock);
    ASSERT_GE(s.log[1].size(), 2u);
    const auto &peek = s.log[1][s.log[1].size() - 2];
    EXPECT_EQ(peek.res[0].completed, 1);
    EXPECT_EQ(peek.t, 300000000 + POLL);                 // a test's cost
    EXPECT_EQ(s.log[1].back().res[0].completed, 1);     // the wait still finds it
    EXPECT_EQ(s.log[1].back().t, 300000000 + POLL);
    EXPECT_EQ(ms_model_active_requests(s.m), 0u);
}

// Many requests in flight whose ids share the model's per-rank window slots (id modulo 64) and
// ids far apart: each completes with its own message, a completed id may be used again, an id
// still active is refused, and none is left at the end.
TEST(ModelP2P, ManyRequestsWithCollidingIds)
{
    const int N = 200;
    std::vector<uint64_t> ids;
    for (int i = 0; i < N; i++) ids.push_back(1 + 64 * (uint64_t)i + (i % 3 == 2 ? (uint64_t)1 << 40 : 0));
    Sim s(2);
    std::vector<uint64_t> first(ids.begin(), ids.begin() + N / 2), second(ids.begin() + N / 2, ids.end());
    for (int i = 0; i < N; i++) {
        s.prog[0].push_back(isend(ids[i], 1, i, 8));
        s.prog[1].push_back(irecv(ids[i], 0, N - 1 - i));   // tags in the other order: every one waits
    }
    s.prog[0].push_back(wait(ids));
    s.prog[1].push_back(wait(second));   // the later half first: slots freed out of order
    s.prog[1].push_back(wait(first));
    s.prog[1].push_back(irecv(ids[0], 0, 7777));   // a completed id, used again
    s.prog[0].push_back(isend(ids[0], 1, 7777, 16));
    s.prog[0].push_back(wait({ids[0]}));
    s.prog[1].push_back(wait({ids[0]}));
    s.run();
    ASSERT_FALSE(s.deadlock);
    for (int i = 1; i < N; i++) {
        const auto &r = s.result(1, ids[i]);
        EXPECT_EQ(r.tag, N - 1 - i) << i;
        EXPECT_EQ(r.source, 0);
    }
    EXPECT_EQ(s.result(1, ids[0]).tag, 7777);
    EXPECT_EQ(s.result(1, ids[0]).bytes, 16u);
    EXPECT_EQ(ms_model_active_requests(s.m), 0u);
    // an id that is active cannot be posted again, wherever the model keeps it
    Sim d(2);
    char err[256];
    for (uint64_t id : {ids[0], ids[1], ids[2]})
        ASSERT_EQ(ms_model_irecv(d.m, 1, 0, id, MS_COMM_WORLD, 0, 1, 0, err, sizeof err), 0) << err;
    for (uint64_t id : {ids[0], ids[1], ids[2]}) {
        EXPECT_LT(ms_model_irecv(d.m, 1, 0, id, MS_COMM_WORLD, 0, 1, 0, err, sizeof err), 0) << id;
        EXPECT_NE(std::string(err).find("already active"), std::string::npos) << err;
    }
    EXPECT_EQ(ms_model_active_requests(d.m), 3u);
}

// MPI_THREAD_MULTIPLE (ms_model_set_thread): a rank's thread posts while another is blocked,
// each thread pays its send overhead on its own CPU (two sends at once from two threads both
// complete after one overhead; from one thread, one after the other), and the resume names the
// thread whose wait it answers.
TEST(ModelP2P, ThreadsBlockAndPostApart)
{
    for (int two = 0; two < 2; two++) {
        nm_config *cfg = nm_config_create();
        char err[256];
        ASSERT_EQ(ms_model_register_keys(cfg, err, sizeof err), 0);
        nm_topology *topo = nm_topology_load("crossbar:2", cfg, err, sizeof err);
        ASSERT_NE(topo, nullptr) << err;
        nm_network *net = nm_network_create(cfg, topo, err, sizeof err);
        ASSERT_NE(net, nullptr) << err;
        ms_model *m = ms_model_create(cfg, net, 2, nullptr, err, sizeof err);
        ASSERT_NE(m, nullptr) << err;
        struct R {
            int rank, thread;
            int64_t t;
        };
        std::vector<R> res;
        ms_model_set_resume(m, [](void *u, int rank, int thread, ms_time_t t, const ms_req_result *, size_t) {
            static_cast<std::vector<R> *>(u)->push_back({rank, thread, t});
        }, &res);
        // rank 0 thread 1 waits for a message from rank 1
        ASSERT_EQ(ms_model_set_thread(m, 0, 1), 0);
        ASSERT_EQ(ms_model_irecv(m, 0, 0, 10, MS_COMM_WORLD, 1, 5, 8, err, sizeof err), 0);
        uint64_t ten = 10;
        ASSERT_EQ(ms_model_wait(m, 0, 0, MS_WAIT_ALL, 1, &ten, err, sizeof err), 0);
        // rank 0 sends two messages at t=0: from threads 0 and 2, or both from thread 0
        ASSERT_EQ(ms_model_set_thread(m, 0, 0), 0);
        ASSERT_EQ(ms_model_isend(m, 0, 0, 1, MS_COMM_WORLD, 1, 0, 8, MS_SEND_STANDARD, err, sizeof err), 0)
            << "thread 0 posts while thread 1 is blocked: " << err;
        ASSERT_EQ(ms_model_set_thread(m, 0, two ? 2 : 0), 0);
        ASSERT_EQ(ms_model_isend(m, 0, 0, 2, MS_COMM_WORLD, 1, 0, 8, MS_SEND_STANDARD, err, sizeof err), 0) << err;
        uint64_t two_id = 2;
        ASSERT_EQ(ms_model_wait(m, 0, 0, MS_WAIT_ALL, 1, &two_id, err, sizeof err), 0);
        // rank 1 sends rank 0's thread 1 its message at 5 us
        ASSERT_EQ(ms_model_isend(m, 1, 5000000, 3, MS_COMM_WORLD, 0, 5, 8, MS_SEND_STANDARD, err, sizeof err), 0);
        ASSERT_EQ(ms_model_finalize(m, 1, 5000000), 0);
        while (ms_model_next_time(m) != NM_TIME_NEVER) ASSERT_EQ(ms_model_run_until(m, NM_TIME_NEVER), 0);
        ASSERT_EQ(res.size(), 2u);
        EXPECT_EQ(res[0].thread, two ? 2 : 0);
        EXPECT_EQ(res[0].t, two ? OS : 2 * OS) << "the second send's overhead, on " << (two ? "its own" : "the same") << " CPU";
        EXPECT_EQ(res[1].thread, 1);
        EXPECT_EQ(res[1].t, 5000000 + OS + lat(8) + OR);
        EXPECT_EQ(ms_model_cpu_free(m, 0), -1) << "several threads: no local sends";
        ms_model_destroy(m);
        nm_network_destroy(net);
        nm_topology_destroy(topo);
        nm_config_destroy(cfg);
    }
}
