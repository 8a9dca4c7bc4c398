// common/cm_heap.h: the event heap pops in (t, k) order whatever the pushes' order, with ties on t
// broken by k; random pushes, pops, key changes and removals by handle agree with a sorted
// reference; it grows from empty; an indexed heap's places stay right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "cm_heap.h"

namespace {

struct Ev {
    int64_t t;
    uint64_t k;
    int id;
};
CM_HEAP_DEFINE(evq, Ev, 4, CM_HEAP_NO_HOOK)
CM_HEAP_DEFINE(bq, Ev, 2, CM_HEAP_NO_HOOK)   // binary

// An indexed heap: pos[id] = the element's index, as engines keep it for removal by handle.
#define POS_HOOK(ctx, elem, i) ((ctx)[(elem).id] = (int)(i))
CM_HEAP_DEFINE_CTX(idq, Ev, 4, int, POS_HOOK)
CM_HEAP_DEFINE_CTX(idbq, Ev, 2, int, POS_HOOK)

bool heap_ordered(const Ev *e, size_t n, size_t arity) {
    for (size_t i = 1; i < n; i++)
        if (evq_less(&e[i], &e[(i - 1) / arity])) return false;
    return true;
}

}  // namespace

TEST(CmHeap, PopsInTimeOrder) {
    evq_heap h = {};
    const int64_t ts[] = {50, 10, 40, 30, 20, 60, 0, -5};
    uint64_t seq = 0;
    for (int64_t t : ts) ASSERT_EQ(evq_push(&h, Ev{t, seq++, 0}), 0);
    std::vector<int64_t> got;
    while (h.n) {
        Ev e;
        evq_pop(&h, &e);
        got.push_back(e.t);
    }
    EXPECT_EQ(got, (std::vector<int64_t>{-5, 0, 10, 20, 30, 40, 50, 60}));
    EXPECT_EQ(evq_top(&h), nullptr);
    free(h.e);
}

TEST(CmHeap, EqualTimesPopInTieBreakOrder) {
    evq_heap h = {};
    // k is unsigned: its top bit orders after every smaller k (a class in the high bits)
    const uint64_t ks[] = {7, UINT64_C(1) << 63, 3, 0, 5, (UINT64_C(1) << 63) | 1, 1};
    int id = 0;
    for (uint64_t k : ks) ASSERT_EQ(evq_push(&h, Ev{100, k, id++}), 0);
    ASSERT_EQ(evq_push(&h, Ev{99, UINT64_MAX, id++}), 0);
    std::vector<uint64_t> got;
    Ev e;
    evq_pop(&h, &e);
    EXPECT_EQ(e.t, 99);
    while (h.n) {
        evq_pop(&h, &e);
        EXPECT_EQ(e.t, 100);
        got.push_back(e.k);
    }
    EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 3, 5, 7, UINT64_C(1) << 63, (UINT64_C(1) << 63) | 1}));
    free(h.e);
}

TEST(CmHeap, NegativeAndExtremeTimesOrderAsSigned) {
    evq_heap h = {};
    ASSERT_EQ(evq_push(&h, Ev{INT64_MAX, 0, 0}), 0);
    ASSERT_EQ(evq_push(&h, Ev{INT64_MIN, 5, 1}), 0);
    ASSERT_EQ(evq_push(&h, Ev{-1, 0, 2}), 0);
    ASSERT_EQ(evq_push(&h, Ev{0, 0, 3}), 0);
    std::vector<int> got;
    while (h.n) {
        Ev e;
        evq_pop(&h, &e);
        got.push_back(e.id);
    }
    EXPECT_EQ(got, (std::vector<int>{1, 2, 3, 0}));
    free(h.e);
}

TEST(CmHeap, GrowsFromEmptyAndKeepsEverything) {
    evq_heap h = {};
    const int N = 100000;
    for (int i = 0; i < N; i++) ASSERT_EQ(evq_push(&h, Ev{(int64_t)((i * 7919) % N), (uint64_t)i, i}), 0);
    EXPECT_EQ(h.n, (size_t)N);
    EXPECT_GE(h.cap, (size_t)N);
    EXPECT_TRUE(heap_ordered(h.e, h.n, evq_arity));
    int64_t prev = -1;
    for (int i = 0; i < N; i++) {
        Ev e;
        evq_pop(&h, &e);
        ASSERT_GT(e.t, prev);   // 7919 is prime to N: every time once
        prev = e.t;
    }
    free(h.e);
}

TEST(CmHeap, ReplaceTopIsPopThenPush) {
    evq_heap a = {}, b = {};
    std::mt19937_64 rng(7);
    for (int i = 0; i < 500; i++) {
        Ev x{(int64_t)(rng() % 100), (uint64_t)i, i};
        evq_push(&a, x);
        evq_push(&b, x);
    }
    for (int i = 500; i < 3000; i++) {
        Ev x{a.e[0].t + (int64_t)(rng() % 50), (uint64_t)i, i};
        evq_replace_top(&a, x);
        evq_pop(&b, nullptr);
        evq_push(&b, x);
        ASSERT_EQ(a.e[0].k, b.e[0].k);
    }
    while (a.n) {
        Ev x, y;
        evq_pop(&a, &x);
        evq_pop(&b, &y);
        ASSERT_EQ(x.k, y.k);
    }
    free(a.e);
    free(b.e);
}

// Random operations on an indexed heap against std::set of (t, k, id): every pop is the set's
// least, the places stay right.
template <class H>
struct IdOps {
    size_t arity;
    int (*push)(H *, Ev, int *);
    void (*update)(H *, size_t, Ev, int *);
    void (*remove)(H *, size_t, int *);
    void (*pop)(H *, Ev *, int *);
};

template <class H>
void random_against_reference(const IdOps<H> &op) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
        std::mt19937_64 rng(seed);
        const int ids = 300;
        std::vector<int> pos(ids, -1);
        H h = {};
        std::set<std::tuple<int64_t, uint64_t, int>> ref;
        std::vector<std::tuple<int64_t, uint64_t>> key(ids);
        uint64_t seq = 0;
        int64_t tspan = 1 + (int64_t)(rng() % 40);   // small: many equal times
        for (int step = 0; step < 20000; step++) {
            int what = (int)(rng() % 10), id = (int)(rng() % ids);
            Ev x{(int64_t)(rng() % tspan) - tspan / 2, seq++, id};
            if (what < 4) {   // schedule id (push, or change its key)
                if (pos[id] < 0) {
                    ASSERT_EQ(op.push(&h, x, pos.data()), 0);
                } else {
                    ref.erase({std::get<0>(key[id]), std::get<1>(key[id]), id});
                    op.update(&h, (size_t)pos[id], x, pos.data());
                }
                key[id] = {x.t, x.k};
                ref.insert({x.t, x.k, id});
            } else if (what < 6) {   // unschedule id by its handle
                if (pos[id] >= 0) {
                    size_t i = (size_t)pos[id];
                    pos[id] = -1;
                    op.remove(&h, i, pos.data());
                    ref.erase({std::get<0>(key[id]), std::get<1>(key[id]), id});
                }
            } else if (h.n) {   // pop
                Ev e;
                int top = h.e[0].id;
                pos[top] = -1;
                op.pop(&h, &e, pos.data());
                ASSERT_FALSE(ref.empty());
                auto least = *ref.begin();
                ref.erase(ref.begin());
                ASSERT_EQ(e.t, std::get<0>(least));
                ASSERT_EQ(e.k, std::get<1>(least));
                ASSERT_EQ(e.id, std::get<2>(least));
            }
            ASSERT_EQ(h.n, ref.size());
            if (step % 997 == 0) {
                ASSERT_TRUE(heap_ordered(h.e, h.n, op.arity));
                for (size_t i = 0; i < h.n; i++) ASSERT_EQ(pos[h.e[i].id], (int)i);
            }
        }
        free(h.e);
    }
}

TEST(CmHeap, RandomOperationsAgreeWithASortedReference) {
    random_against_reference<idq_heap>({idq_arity, idq_push_ctx, idq_update_at_ctx, idq_remove_at_ctx, idq_pop_ctx});
}

TEST(CmHeap, BinaryRandomOperationsAgreeWithASortedReference) {
    random_against_reference<idbq_heap>({idbq_arity, idbq_push_ctx, idbq_update_at_ctx, idbq_remove_at_ctx, idbq_pop_ctx});
}

TEST(CmHeap, HeapifyRestoresOrderAfterKeysChangedInPlace) {
    evq_heap h = {};
    std::mt19937_64 rng(3);
    for (int i = 0; i < 1000; i++) evq_push(&h, Ev{(int64_t)(rng() % 1000), (uint64_t)i, i});
    for (size_t i = 0; i < h.n; i++)
        if (h.e[i].id % 3 == 0) h.e[i].t += 500;   // as a train's jump shifts all but one event
    evq_heapify(&h);
    EXPECT_TRUE(heap_ordered(h.e, h.n, evq_arity));
    std::vector<std::pair<int64_t, uint64_t>> want;
    for (size_t i = 0; i < h.n; i++) want.push_back({h.e[i].t, h.e[i].k});
    std::sort(want.begin(), want.end());
    for (auto &w : want) {
        Ev e;
        evq_pop(&h, &e);
        ASSERT_EQ(e.t, w.first);
        ASSERT_EQ(e.k, w.second);
    }
    free(h.e);
}

TEST(CmHeap, BinaryReplaceTopAndHeapifyKeepTheOrder) {
    bq_heap h = {};
    std::mt19937_64 rng(11);
    std::vector<std::pair<int64_t, uint64_t>> want;
    for (int i = 0; i < 2000; i++) ASSERT_EQ(bq_push(&h, Ev{(int64_t)(rng() % 300), (uint64_t)i, i}), 0);
    for (int i = 2000; i < 4000; i++) bq_replace_top(&h, Ev{h.e[0].t + (int64_t)(rng() % 100), (uint64_t)i, i});
    for (size_t i = 0; i < h.n; i++)
        if (h.e[i].id % 5 == 0) h.e[i].t -= 50;
    bq_heapify(&h);
    ASSERT_TRUE(heap_ordered(h.e, h.n, bq_arity));
    for (size_t i = 0; i < h.n; i++) want.push_back({h.e[i].t, h.e[i].k});
    std::sort(want.begin(), want.end());
    for (auto &w : want) {
        Ev e;
        bq_pop(&h, &e);
        ASSERT_EQ(e.t, w.first);
        ASSERT_EQ(e.k, w.second);
    }
    free(h.e);
}
