// The shared-memory transport without mpirun: byte rings (wrap-around, full, empty, a producer
// and a consumer on two threads), doorbells (timeout, wake), the server's dirty-slot bitmap, and
// the shim's transport attached to a real segment (messages both ways, refusal, a segment other
// users could open is never trusted, a slot claimed twice).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "ms_shm.h"
#include "protocol.h"
#include "transport.h"
}

namespace {

// A segment for n ranks in ordinary memory (rings and bells do not care where it lives).
struct Segment {
    std::vector<uint64_t> mem;
    void *base;
    explicit Segment(int n) : mem(ms_shm_bytes(n) / 8 + 1, 0), base(mem.data()) { ms_shm_init(base, n); }
};

// A named POSIX segment, as the server creates it.
struct Named {
    std::string name;
    void *base = nullptr;
    size_t bytes = 0;
    Named(int n, mode_t mode)
    {
        name = "/mpisim-test-" + std::to_string(getpid()) + "-" + std::to_string(rand());
        int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, mode);
        EXPECT_GE(fd, 0);
        fchmod(fd, mode);
        bytes = ms_shm_bytes(n);
        EXPECT_EQ(ftruncate(fd, (off_t)bytes), 0);
        base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        ms_shm_init(base, n);
        ((ms_shm_header *)base)->server_pid = getpid();
    }
    ~Named()
    {
        shm_unlink(name.c_str());
        munmap(base, bytes);
    }
};

}  // namespace

TEST(Ring, WrapsAroundAndStopsWhenFullOrEmpty)
{
    Segment seg(2);
    ms_ring *r = &ms_shm_slot_at(seg.base, 1)->down;
    std::vector<char> in(MS_SHM_DOWN_BYTES + 100), out(MS_SHM_DOWN_BYTES + 100);
    for (size_t i = 0; i < in.size(); i++) in[i] = (char)(i * 7 + 3);
    EXPECT_EQ(ms_ring_read(seg.base, r, out.data(), 10), 0u);
    // fill it: only its size goes in
    EXPECT_EQ(ms_ring_write(seg.base, r, in.data(), in.size()), (size_t)MS_SHM_DOWN_BYTES);
    EXPECT_EQ(ms_ring_writable(r), 0u);
    EXPECT_EQ(ms_ring_write(seg.base, r, in.data(), 1), 0u);
    EXPECT_EQ(ms_ring_read(seg.base, r, out.data(), 1000), 1000u);
    EXPECT_EQ(memcmp(in.data(), out.data(), 1000), 0);
    // the next write wraps around the end of the data area
    EXPECT_EQ(ms_ring_write(seg.base, r, in.data() + 5000, 900), 900u);
    EXPECT_EQ(ms_ring_read(seg.base, r, out.data(), MS_SHM_DOWN_BYTES - 1000), (size_t)MS_SHM_DOWN_BYTES - 1000);
    EXPECT_EQ(memcmp(in.data() + 1000, out.data(), MS_SHM_DOWN_BYTES - 1000), 0);
    EXPECT_EQ(ms_ring_read(seg.base, r, out.data(), 5000), 900u);
    EXPECT_EQ(memcmp(in.data() + 5000, out.data(), 900), 0);
    EXPECT_EQ(ms_ring_readable(r), 0u);
}

TEST(Ring, RandomChunksKeepTheStream)
{
    // property: whatever the chunking on each side, the bytes come out as they went in
    Segment seg(1);
    ms_ring *r = &ms_shm_slot_at(seg.base, 0)->up;
    std::mt19937 rng(42);
    std::vector<char> buf(MS_SHM_UP_BYTES);
    uint64_t wrote = 0, read = 0;
    for (int step = 0; step < 20000; step++) {
        size_t n = rng() % 70000;
        if (rng() & 1) {
            for (size_t i = 0; i < n; i++) buf[i] = (char)((wrote + i) % 251);
            wrote += ms_ring_write(seg.base, r, buf.data(), n);
        } else {
            size_t got = ms_ring_read(seg.base, r, buf.data(), n);
            for (size_t i = 0; i < got; i++) ASSERT_EQ(buf[i], (char)((read + i) % 251)) << "byte " << read + i;
            read += got;
        }
        ASSERT_EQ(ms_ring_readable(r), wrote - read);
    }
    EXPECT_GT(read, 100u * MS_SHM_UP_BYTES);   // wrapped many times
}

TEST(Ring, ProducerAndConsumerThreadsWithDoorbells)
{
    Segment seg(1);
    ms_shm_slot *sl = ms_shm_slot_at(seg.base, 0);
    const uint64_t total = 64ull << 20;
    std::thread producer([&] {
        std::vector<char> chunk(5000);
        uint64_t sent = 0;
        while (sent < total) {
            size_t n = std::min<uint64_t>(chunk.size(), total - sent);
            for (size_t i = 0; i < n; i++) chunk[i] = (char)((sent + i) % 253);
            size_t off = 0;
            while (off < n) {
                uint32_t seen = ms_bell_seq(&sl->up.space);
                size_t w = ms_ring_write(seg.base, &sl->up, chunk.data() + off, n - off);
                if (w) {
                    off += w;
                    ms_bell_ring(&sl->rank_bell);
                } else {
                    ms_bell_wait(&sl->up.space, seen, 100000000, nullptr, nullptr);
                }
            }
            sent += n;
        }
    });
    std::vector<char> buf(7000);
    uint64_t got = 0;
    bool ok = true;
    while (got < total && ok) {
        uint32_t seen = ms_bell_seq(&sl->rank_bell);
        size_t n = ms_ring_read(seg.base, &sl->up, buf.data(), buf.size());
        for (size_t i = 0; i < n && ok; i++) ok = buf[i] == (char)((got + i) % 253);
        got += n;
        if (!n) ms_bell_wait(&sl->rank_bell, seen, 100000000, nullptr, nullptr);
    }
    producer.join();
    EXPECT_TRUE(ok) << "a byte changed on its way at " << got;
    EXPECT_EQ(got, total);
}

TEST(Doorbell, TimesOutAndWakes)
{
    Segment seg(1);
    ms_doorbell *b = &ms_shm_slot_at(seg.base, 0)->rank_bell;
    uint32_t seen = ms_bell_seq(b);
    EXPECT_EQ(ms_bell_wait(b, seen, 2000000, nullptr, nullptr), 0);   // 2 ms, nobody rings
    ms_bell_ring(b);
    EXPECT_EQ(ms_bell_wait(b, seen, 2000000, nullptr, nullptr), 1);   // rang before the wait
    seen = ms_bell_seq(b);
    std::atomic<bool> woke{false};
    std::thread waiter([&] { woke = ms_bell_wait(b, seen, 10000000000LL, nullptr, nullptr) == 1; });
    while (!__atomic_load_n(&b->sleeping, __ATOMIC_SEQ_CST)) std::this_thread::yield();
    ms_bell_ring(b);
    waiter.join();
    EXPECT_TRUE(woke);
}

TEST(Segment, DirtyBitsNameTheWrittenSlots)
{
    Segment seg(130);
    EXPECT_EQ(ms_shm_dirty_words(130), 3);
    ms_shm_notify_server(seg.base, 3);
    ms_shm_notify_server(seg.base, 70);
    ms_shm_notify_server(seg.base, 129);
    EXPECT_EQ(ms_shm_take_dirty(seg.base, 0), 1ull << 3);
    EXPECT_EQ(ms_shm_take_dirty(seg.base, 1), 1ull << 6);
    EXPECT_EQ(ms_shm_take_dirty(seg.base, 2), 1ull << 1);
    EXPECT_EQ(ms_shm_take_dirty(seg.base, 0), 0u);
    EXPECT_EQ(ms_shm_check(seg.base, ms_shm_bytes(130)), 0);
    EXPECT_EQ(ms_shm_check(seg.base, ms_shm_bytes(130) - 1), -1);   // too short
    ((ms_shm_header *)seg.base)->version++;
    EXPECT_EQ(ms_shm_check(seg.base, ms_shm_bytes(130)), -1);
}

TEST(Transport, MessagesBothWaysThroughTheSegment)
{
    Named seg(2, 0600);
    ms_transport t;
    ms_tp_init(&t);
    char err[256] = "";
    ASSERT_EQ(ms_tp_attach_shm(&t, seg.name.c_str(), 1, err, sizeof err), 0) << err;
    ms_shm_slot *sl = ms_shm_slot_at(seg.base, 1);
    EXPECT_EQ(sl->state, (uint32_t)MS_SLOT_CLAIMED);
    // up: more than the ring holds in one flush (the writer waits for the reader)
    std::vector<char> payload(300000);
    for (size_t i = 0; i < payload.size(); i++) payload[i] = (char)(i % 241);
    ASSERT_EQ(ms_tp_put(&t, 77, payload.data(), payload.size(), nullptr, 0), 0);
    std::vector<char> got;
    std::thread server([&] {
        std::vector<char> buf(65536);
        while (got.size() < sizeof(ms_msg_header) + payload.size()) {
            size_t n = ms_ring_read(seg.base, &sl->up, buf.data(), buf.size());
            got.insert(got.end(), buf.begin(), buf.begin() + (long)n);
            if (!n) std::this_thread::yield();
        }
    });
    ASSERT_EQ(ms_tp_flush(&t), 0);
    server.join();
    ms_msg_header h;
    memcpy(&h, got.data(), sizeof h);
    EXPECT_EQ(h.type, 77u);
    EXPECT_EQ(h.length, payload.size());
    EXPECT_EQ(memcmp(got.data() + sizeof h, payload.data(), payload.size()), 0);
    EXPECT_EQ(ms_shm_take_dirty(seg.base, 0), 1ull << 1);
    // down: nothing yet (a short wait times out), then two messages in one write
    EXPECT_EQ(ms_tp_read(&t, 1), 0);
    EXPECT_EQ(ms_tp_next(&t), 0u);
    char two[2 * sizeof(ms_msg_header) + 8];
    ms_msg_header a = {5, 8}, b = {6, 0};
    memcpy(two, &a, sizeof a);
    memcpy(two + sizeof a, "abcdefgh", 8);
    memcpy(two + sizeof a + 8, &b, sizeof b);
    ASSERT_EQ(ms_ring_write(seg.base, &sl->down, two, sizeof two), sizeof two);
    ms_bell_ring(&sl->rank_bell);
    EXPECT_EQ(ms_tp_read(&t, 100), (long)sizeof two);
    EXPECT_EQ(ms_tp_next(&t), sizeof a + 8);
    ms_tp_consume(&t, sizeof a + 8);
    EXPECT_EQ(ms_tp_next(&t), sizeof b);
    ms_tp_consume(&t, sizeof b);
    // refused: every read and flush says so
    __atomic_store_n(&sl->state, (uint32_t)MS_SLOT_REFUSED, __ATOMIC_RELEASE);
    EXPECT_EQ(ms_tp_read(&t, 1), -1);
    __atomic_store_n(&sl->state, (uint32_t)MS_SLOT_CLAIMED, __ATOMIC_RELEASE);
    ms_tp_close(&t);
    EXPECT_EQ(sl->state, (uint32_t)MS_SLOT_CLOSED);   // what a socket's close would say
}

// A rank that waits in its real MPI for a peer wakes the peer from its sleep on the server's
// doorbell (a kick: no data), so that the peer drives its own real MPI (shim.c ms_real_wait_step).
TEST(Transport, AKickWakesASleepingRankWithoutData)
{
    Named seg(3, 0600);
    ms_transport a, b;
    ms_tp_init(&a);
    ms_tp_init(&b);
    char err[256] = "";
    ASSERT_EQ(ms_tp_attach_shm(&a, seg.name.c_str(), 0, err, sizeof err), 0) << err;
    ASSERT_EQ(ms_tp_attach_shm(&b, seg.name.c_str(), 1, err, sizeof err), 0) << err;
    // nothing to wake: a short wait in microseconds times out, and kicks of no sleeper, of itself,
    // of a rank outside the segment change nothing
    EXPECT_EQ(ms_tp_read_us(&b, 200), 0);
    uint32_t seq = ms_bell_seq(&ms_shm_slot_at(seg.base, 1)->rank_bell);
    ms_tp_kick(&a, 1);
    ms_tp_kick(&a, 0);
    ms_tp_kick(&a, 3);
    ms_tp_kick(&a, -1);
    EXPECT_EQ(ms_bell_seq(&ms_shm_slot_at(seg.base, 1)->rank_bell), seq);
    // a sleeper (a wait far longer than the test) returns with nothing read once kicked
    std::atomic<int> back{0};
    long got = -2;
    std::thread sleeper([&] {
        got = ms_tp_read_us(&b, 600 * 1000000LL);
        back = 1;
    });
    while (!back) {
        ms_tp_kick(&a, 1);
        std::this_thread::yield();
    }
    sleeper.join();
    EXPECT_EQ(got, 0);
    EXPECT_EQ(b.quiet_waits, 0u);   // woken, not timed out
    EXPECT_EQ(ms_tp_next(&b), 0u);
    ms_tp_close(&b);
    ms_tp_close(&a);
}

TEST(Transport, NeverTrustsASegmentOthersCouldOpenOrASlotTakenTwice)
{
    char err[256] = "";
    {
        Named open_to_all(2, 0644);
        ms_transport t;
        ms_tp_init(&t);
        EXPECT_EQ(ms_tp_attach_shm(&t, open_to_all.name.c_str(), 0, err, sizeof err), -1);
        EXPECT_NE(std::string(err).find("private"), std::string::npos) << err;
    }
    Named seg(2, 0600);
    ms_transport a, b;
    ms_tp_init(&a);
    ms_tp_init(&b);
    ASSERT_EQ(ms_tp_attach_shm(&a, seg.name.c_str(), 0, err, sizeof err), 0) << err;
    EXPECT_EQ(ms_tp_attach_shm(&b, seg.name.c_str(), 0, err, sizeof err), -1);
    EXPECT_EQ(ms_tp_attach_shm(&b, seg.name.c_str(), 2, err, sizeof err), -1);   // no such rank
    EXPECT_EQ(ms_tp_attach_shm(&b, "/mpisim-test-no-such-segment", 1, err, sizeof err), -1);
    ms_tp_close(&a);
}
