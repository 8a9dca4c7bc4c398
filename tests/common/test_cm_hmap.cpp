// cm_hmap: a (k1, k2) -> pointer map checked against std::map under random puts, gets, deletes
// and hinted inserts, through growth.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>

#include "cm_hmap.h"

namespace {
void *ptr(uint64_t v) { return reinterpret_cast<void *>(static_cast<uintptr_t>(v * 8 + 8)); }
}  // namespace

TEST(CmHmap, EmptyPutGetDel)
{
    cm_hmap h = {};
    EXPECT_EQ(cm_hmap_get(&h, 1, 2), nullptr);
    EXPECT_EQ(cm_hmap_del(&h, 1, 2), nullptr);
    ASSERT_EQ(cm_hmap_put(&h, 1, 2, ptr(1)), 0);
    EXPECT_EQ(cm_hmap_get(&h, 1, 2), ptr(1));
    EXPECT_EQ(cm_hmap_get(&h, 2, 1), nullptr);   // the pair is ordered
    ASSERT_EQ(cm_hmap_put(&h, 1, 2, ptr(2)), 0);  // replaces
    EXPECT_EQ(cm_hmap_get(&h, 1, 2), ptr(2));
    EXPECT_EQ(h.n, 1u);
    EXPECT_EQ(cm_hmap_del(&h, 1, 2), ptr(2));
    EXPECT_EQ(cm_hmap_get(&h, 1, 2), nullptr);
    EXPECT_EQ(h.n, 0u);
    cm_hmap_free(&h);
    EXPECT_EQ(h.s, nullptr);
}

TEST(CmHmap, RandomAgainstStdMap)
{
    std::mt19937_64 rng(27);
    cm_hmap h = {};
    std::map<std::pair<uint64_t, uint64_t>, void *> ref;
    for (int step = 0; step < 200000; step++) {
        // few distinct keys: many collisions, deletes in probe runs, reuse of freed slots
        uint64_t k1 = rng() % 64, k2 = rng() % 512;
        auto key = std::make_pair(k1, k2);
        switch (rng() % 4) {
        case 0: {
            void *v = ptr(rng() % 1000000);
            ASSERT_EQ(cm_hmap_put(&h, k1, k2, v), 0);
            ref[key] = v;
            break;
        }
        case 1: {
            cm_hhint hint;
            void *got = cm_hmap_get_hint(&h, k1, k2, &hint);
            auto it = ref.find(key);
            ASSERT_EQ(got, it == ref.end() ? nullptr : it->second);
            if (!got) {
                void *v = ptr(rng() % 1000000);
                ASSERT_EQ(cm_hmap_put_hint(&h, k1, k2, v, &hint), 0);
                ref[key] = v;
            }
            break;
        }
        case 2: {
            auto it = ref.find(key);
            ASSERT_EQ(cm_hmap_del(&h, k1, k2), it == ref.end() ? nullptr : it->second);
            if (it != ref.end()) ref.erase(it);
            break;
        }
        default: {
            auto it = ref.find(key);
            ASSERT_EQ(cm_hmap_get(&h, k1, k2), it == ref.end() ? nullptr : it->second);
        }
        }
        ASSERT_EQ(h.n, ref.size());
    }
    for (auto &kv : ref) EXPECT_EQ(cm_hmap_get(&h, kv.first.first, kv.first.second), kv.second);
    cm_hmap_free(&h);
}
