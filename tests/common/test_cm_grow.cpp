// common/cm_grow.h: the growable array keeps what it holds, doubles from its first capacity,
// and refuses a size that would overflow without touching the array.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "cm_grow.h"

TEST(CmGrow, PushesKeepTheirValuesAndCapacityDoubles) {
    int *v = nullptr;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 1000; i++) {
        ASSERT_EQ(cm_grow((void **)&v, &cap, n + 1, sizeof *v, 16), 0);
        ASSERT_GE(cap, n + 1);
        v[n++] = i * 3;
    }
    EXPECT_EQ(cap, 1024u);   // 16, 32, ..., 1024
    for (int i = 0; i < 1000; i++) ASSERT_EQ(v[i], i * 3);
    free(v);
}

TEST(CmGrow, EnoughRoomIsLeftAsItIs) {
    char *v = static_cast<char *>(malloc(8));
    size_t cap = 8;
    char *before = v;
    EXPECT_EQ(cm_grow((void **)&v, &cap, 8, 1, 4), 0);
    EXPECT_EQ(v, before);
    EXPECT_EQ(cap, 8u);
    free(v);
}

TEST(CmGrow, ABigNeedIsReachedInOneCall) {
    double *v = nullptr;
    size_t cap = 0;
    ASSERT_EQ(cm_grow((void **)&v, &cap, 5000, sizeof *v, 64), 0);
    EXPECT_EQ(cap, 8192u);   // 64 doubled until it holds 5000
    v[4999] = 1.5;
    free(v);
    size_t cap1 = 0;
    int *w = nullptr;
    ASSERT_EQ(cm_grow((void **)&w, &cap1, 1, sizeof *w, 0), 0);   // first 0: one element
    EXPECT_EQ(cap1, 1u);
    free(w);
}

TEST(CmGrow, OverflowIsRefusedAndTheArrayUntouched) {
    int *v = static_cast<int *>(malloc(4 * sizeof(int)));
    size_t cap = 4;
    int *before = v;
    EXPECT_EQ(cm_grow((void **)&v, &cap, SIZE_MAX / 2, sizeof *v, 4), -1);
    EXPECT_EQ(v, before);
    EXPECT_EQ(cap, 4u);
    free(v);
}
