// mpi.size_segments (libmpisim/model/README.md "Piecewise costs by size"): the overheads, the
// intra-node copy and the ':ack' completion of the size range a message falls in.
#include "model_test_util.h"

using namespace mt;

// Two ranks on one node: L = 100 ns; below 1000 B the scalar keys (o_s 50 ns, o_r 60 ns), from
// 1000 B o_s = 70 ns + 0.5 ps/B, o_r = 80 ns + 0.25 ps/B, copy 2 ps/B; from 8000 B rendezvous
// (threshold) with o_s 90 ns, o_r 30 ns + 1 ps/B, copy 4 ps/B.
static const std::vector<std::string> node2 = {
    "host.ranks_per_node=2", "host.shm_latency=100ns", "mpi.send_overhead=50ns", "mpi.recv_overhead=60ns",
    "mpi.eager_threshold=8000", "mpi.size_segments=1000:70000:0.5:80000:0.25:2 8000:90000:0:30000:1:4"};

// the receive's completion of one message sent at 0 to a receive posted at 0
static int64_t one_way(uint64_t B, std::vector<std::string> sets, ms_send_mode mode = MS_SEND_STANDARD,
                       int64_t *send_done = nullptr)
{
    Sim s(2, sets);
    s.prog[0] = {isend(1, 1, 0, B, mode), wait({1})};
    s.prog[1] = {irecv(1, 0, 0, B), wait({1})};
    s.run();
    EXPECT_FALSE(s.deadlock);
    EXPECT_EQ(ms_model_last_error(s.m, nullptr), nullptr);
    if (send_done) *send_done = s.clock[0];
    return s.clock[1];
}

TEST(ModelSegments, CostsOfTheSegmentOfTheSize)
{
    // below the first segment: o_s + L + o_r (no copy rate: free)
    EXPECT_EQ(one_way(500, node2), 50000 + 100000 + 60000);
    // eager segment: o_s(B) + copy + L + o_r(B), exact to the picosecond
    const int64_t B = 4000;
    EXPECT_EQ(one_way(B, node2), (70000 + 2000) + 8000 + 100000 + (80000 + 1000));
    // rendezvous segment: o_s(B) + L (RTS) + o_r(0) + L (CTS) + copy + L + o_r(B); o_r(0) is the scalar key's
    const int64_t R = 10000;
    EXPECT_EQ(one_way(R, node2), 90000 + 100000 + 60000 + 100000 + 40000 + 100000 + (30000 + 10000));
}

TEST(ModelSegments, AckSegmentCompletesTheSendWhenTheReceiverHasTheMessage)
{
    std::vector<std::string> ack = node2;
    ack.back() = "mpi.size_segments=1000:70000:0.5:80000:0.25:2:ack 8000:90000:0:30000:1:4";
    int64_t plain_done = 0, ack_done = 0;
    const int64_t B = 4000;
    int64_t recv_plain = one_way(B, node2, MS_SEND_STANDARD, &plain_done);
    int64_t recv_ack = one_way(B, ack, MS_SEND_STANDARD, &ack_done);
    EXPECT_EQ(recv_plain, recv_ack);   // the receiver sees the same message
    EXPECT_EQ(plain_done, 72000 + 8000);   // the call: o_s(B) and the copy
    // the receive completes at 261000; the fragment's return takes L
    EXPECT_EQ(ack_done, recv_ack + 100000);
    // a buffered send returns after its copy whatever the segment says
    int64_t b_done = 0;
    one_way(B, ack, MS_SEND_BUFFERED, &b_done);
    EXPECT_EQ(b_done, plain_done);
    // below the segment nothing changes
    int64_t small_done = 0;
    one_way(500, ack, MS_SEND_STANDARD, &small_done);
    EXPECT_EQ(small_done, 50000);
}

TEST(ModelSegments, BadSegmentsAreRefusedWithTheReason)
{
    const char *bad[] = {"1000:1:2:3", "1000:1:2:3:4:5:nak", "x:1:2:3:4:5", "2000:1:0:1:0:-1 1000:1:0:1:0:-1",
                         "1000:-5000:1:0:0:-1", "1000:0:-1:0:0:-1", "1000:0:0:0:0:-2", "1.5:0:0:0:0:-1",
                         "1000:0:0:0:0:1:-3", "1000:0:0:0:0:1:2:3", "1000:0:0:0:0:1:2:ack:x"};
    for (const char *b : bad) {
        nm_config *cfg = nm_config_create();
        char err[512];
        ASSERT_EQ(ms_model_register_keys(cfg, err, sizeof err), 0);
        ASSERT_EQ(nm_config_set(cfg, (std::string("mpi.size_segments=") + b).c_str(), "t", err, sizeof err), 0) << err;
        nm_topology *t = nm_topology_load("crossbar:2", cfg, err, sizeof err);
        nm_network *n = nm_network_create(cfg, t, err, sizeof err);
        err[0] = 0;
        ms_model *m = ms_model_create(cfg, n, 2, nullptr, err, sizeof err);
        EXPECT_EQ(m, nullptr) << b;
        EXPECT_NE(std::string(err).find("mpi.size_segments"), std::string::npos) << b << ": " << err;
        ms_model_destroy(m);
        nm_network_destroy(n);
        nm_topology_destroy(t);
        nm_config_destroy(cfg);
    }
    // a negative constant is fine where the slope keeps the cost above 0 from FROM on
    Sim s(2, {"mpi.size_segments=1000:-500:1:0:0:-1"});
    EXPECT_NE(s.m, nullptr);
}

// mpi.recv_overhead_serial: two messages that arrive at once are taken one after the other by the
// receiving rank's CPU; without it (the contract of the seeds' profiles) both complete o_r after
// their data.
TEST(ModelSegments, SerialReceiveOverheads)
{
    auto two = [](int serial) {
        Sim s(3, {"host.ranks_per_node=3", "host.shm_latency=100ns", "mpi.send_overhead=50ns", "mpi.recv_overhead=400ns",
                  "mpi.recv_overhead_serial=" + std::to_string(serial)});
        s.prog[0] = {isend(1, 2, 0, 8), wait({1})};
        s.prog[1] = {isend(1, 2, 0, 8), wait({1})};
        s.prog[2] = {irecv(1, 0, 0, 8), irecv(2, 1, 0, 8), wait({1, 2})};
        s.run();
        EXPECT_FALSE(s.deadlock);
        return s.clock[2];
    };
    EXPECT_EQ(two(0), 50000 + 100000 + 400000);
    EXPECT_EQ(two(1), 50000 + 100000 + 2 * 400000);
}

// The intra-node rendezvous copies a rank receives (its single-copy gets) are done one after the
// other by its CPU, with serial receives or without (then they only queue behind each other, not
// behind its receive overheads).
TEST(ModelSegments, SerialReceiverCopiesOfRendezvousData)
{
    auto two = [](int serial) {
        Sim s(3, {"host.ranks_per_node=3", "host.shm_latency=100ns", "mpi.send_overhead=50ns", "mpi.recv_overhead=0",
                  "mpi.eager_threshold=1000", "host.shm_copy_rate=1 GB/s", "mpi.recv_overhead_serial=" + std::to_string(serial)});
        s.prog[0] = {isend(1, 2, 0, 100000), wait({1})};
        s.prog[1] = {isend(1, 2, 0, 100000), wait({1})};
        s.prog[2] = {irecv(1, 0, 0, 100000), irecv(2, 1, 0, 100000), wait({1, 2})};
        s.run();
        EXPECT_FALSE(s.deadlock);
        return s.clock[2];
    };
    // RTS, CTS, the copy of 100 us, the data's latency
    EXPECT_EQ(two(0), 50000 + 100000 + 100000 + 2 * 100000000 + 100000);
    EXPECT_EQ(two(1), 50000 + 100000 + 100000 + 2 * 100000000 + 100000);
}

// COPY_SHARED_PB: a rendezvous received into a buffer its receiver itself sent from, in one of its
// last rendezvous sends on the node (a token ring, a forwarding ping-pong), is copied into lines the
// other core holds, at that rate; into another buffer, or into one whose address is unknown, at
// COPY_PB. Only the overlapping bytes pay the shared rate.
TEST(ModelSegments, RendezvousIntoLinesTheOtherCoreHolds)
{
    const std::vector<std::string> sets = {
        "host.ranks_per_node=2", "host.shm_latency=100ns", "mpi.send_overhead=50ns", "mpi.recv_overhead=0",
        "mpi.eager_threshold=1000", "mpi.size_segments=1000:0:0:0:0:4:10"};
    const uint64_t B = 10000, A = 0x10000, OTHER = 0x90000;
    // rank 1 first sends from buffer A (rank 0 receives it), then receives into `into`
    auto second = [&](uint64_t into, uint64_t bytes_back) {
        Sim s(2, sets);
        Op s1 = isend(1, 0, 0, B), r1 = irecv(2, 0, 1, bytes_back);
        s1.buf = A;
        r1.buf = into;
        Op r0 = irecv(1, 1, 0, B), s0 = isend(2, 1, 1, bytes_back);
        r0.buf = OTHER + 0x100000;
        s0.buf = OTHER + 0x200000;
        s.prog[1] = {s1, wait({1}), r1, wait({2})};
        s.prog[0] = {r0, wait({1}), s0, wait({2})};
        s.run();
        EXPECT_FALSE(s.deadlock);
        EXPECT_EQ(ms_model_last_error(s.m, nullptr), nullptr);
        return s.clock[1];
    };
    const int64_t into_other = second(OTHER, B), into_sent = second(A, B), unknown = second(0, B);
    EXPECT_EQ(into_sent - into_other, (int64_t)B * (10 - 4));   // every byte at the shared rate
    EXPECT_EQ(unknown, into_other);
    // half of the receive buffer overlaps what was sent: half of the bytes pay
    EXPECT_EQ(second(A + B / 2, B) - into_other, (int64_t)(B / 2) * (10 - 4));
    // without the field the segment's copy rate holds for every receive
    std::vector<std::string> plain = sets;
    plain.back() = "mpi.size_segments=1000:0:0:0:0:4";
    Sim s(2, plain);
    EXPECT_NE(s.m, nullptr);
}
