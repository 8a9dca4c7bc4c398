// The shim's request table without mpirun: every indexed request is found by its handle and by
// its id until it is unindexed, through growth and tombstones (a property test against a map).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#define OMPI_SKIP_MPICXX 1   // the C API only
#include <mpi.h>
#include <cstring>

extern "C" {
#include "reqtable.h"
}

namespace {
MPI_Request handle(uint64_t k)
{
    MPI_Request h;
    memset(&h, 0, sizeof h);
    memcpy(&h, &k, sizeof h < sizeof k ? sizeof h : sizeof k);
    return h;
}
}  // namespace

TEST(RequestTable, EmptyFindsNothing)
{
    ms_rq_table t{};
    EXPECT_EQ(ms_rqt_find(&t, handle(16)), nullptr);
    EXPECT_EQ(ms_rqt_find_id(&t, 1), nullptr);
    ms_rq r{};
    r.user = handle(16);
    ms_rqt_unindex(&t, &r);   // harmless
    ms_rqt_destroy(&t);
}

TEST(RequestTable, MatchesAMapThroughGrowthAndTombstones)
{
    ms_rq_table t{};
    std::vector<ms_rq> pool(20000);
    std::map<uint64_t, ms_rq *> live;   // handle value -> request
    std::mt19937_64 rng(7);
    size_t next = 0;
    for (int step = 0; step < 200000; step++) {
        if ((rng() % 3 != 0 || live.empty()) && next < pool.size()) {
            ms_rq *r = &pool[next++];
            uint64_t h;
            do h = (rng() % 1000000) * 16 + 16;   // aligned like pointers, clustered
            while (live.count(h));
            r->user = handle(h);
            r->id = next;
            ASSERT_EQ(ms_rqt_index(&t, r), 0);
            live[h] = r;
        } else if (!live.empty()) {
            auto it = live.begin();
            std::advance(it, (long)(rng() % live.size()));
            ms_rqt_unindex(&t, it->second);
            EXPECT_EQ(ms_rqt_find(&t, it->second->user), nullptr);
            live.erase(it);
        }
        if (step % 997 == 0) {
            // find_id scans the whole table (only RESOLVE needs it): every live id at one
            // checkpoint in ten, every 61st at the others. Every id at every checkpoint took
            // 20 s of CPU under ASan, 43 s of a 60 s limit on a loaded machine.
            bool all_ids = step % (997 * 10) == 0;
            size_t k = 0;
            for (auto &kv : live) {
                ASSERT_EQ(ms_rqt_find(&t, handle(kv.first)), kv.second);
                if (all_ids || k++ % 61 == 0) {
                    ASSERT_EQ(ms_rqt_find_id(&t, kv.second->id), kv.second);
                }
            }
        }
        ASSERT_EQ(t.used, live.size());
    }
    size_t seen = 0;
    for (size_t i = 0; i < t.cap; i++) seen += ms_rqt_at(&t, i) != nullptr;
    EXPECT_EQ(seen, live.size());
    EXPECT_EQ(ms_rqt_find(&t, handle(8)), nullptr);   // never indexed
    ms_rqt_destroy(&t);
}
