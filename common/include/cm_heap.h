/* The event heap: one implementation for every layer's priority queue (common/, below netmodel).
 *
 * A binary or 4-ary min-heap of the caller's own element type, ordered by two members every element has
 * first: `int64_t t` (a time, or any signed key) and `uint64_t k` (the tie-break: a sequence
 * number, a class and a sequence, an index), compared as one 128-bit number (t signed, then k
 * unsigned). Whatever else the element holds is its payload, moved with it. Keep (t, k) unique
 * and the order of pops does not depend on the heap's shape: the same as any other heap's.
 *
 *     typedef struct ev { int64_t t; uint64_t k; int pkt; } ev;
 *     CM_HEAP_DEFINE(evq, ev, 4, CM_HEAP_NO_HOOK)       // static inline evq_push, evq_pop, ...
 *     cm_heap_of(ev) q = {0};
 *     if (evq_push(&q, (ev){t, seq++, i}) < 0) return -1;
 *     ev e; evq_pop(&q, &e);
 *     free(q.e);
 *
 * Removal by handle and changing a key need the elements' places: HOOK(ctx, elem, i) is called
 * wherever an element comes to rest at index i (an indexed heap keeps pos[elem.payload] = i there).
 * The functions are generated for the element type (static inline, the key compare and the moves
 * of its size inlined): a heap of events costs what a hand-written one does. The arity, 2 or 4:
 * four children halve the levels (a large heap, elements of 32 bytes: the model's), two suit a
 * heap whose replaced top stays near the top (an engine's). Layout, for walks over the heap:
 * e[i]'s children are e[A * i + 1 .. A * i + A] (A = NAME##_arity), none earlier than e[i].
 * Storage grows by cm_grow. */
#ifndef CM_HEAP_H
#define CM_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "cm_grow.h"

/* A heap's storage: e[0 .. n-1], room for cap. Zero-initialised is empty. */
#define cm_heap_of(T) struct { T *e; size_t n, cap; }

/* (t, k) as one 128-bit number: one compare-and-borrow instead of two compares and a branch. */
__extension__ typedef __int128 cm_heap_key;
#define cm_heap_key_of(x) \
    ((cm_heap_key)((__extension__(unsigned __int128)(uint64_t)(x)->t << 64) | (x)->k))

/* The hook of a heap that needs no places. */
#define CM_HEAP_NO_HOOK(ctx, elem, i) ((void)(ctx), (void)(i))

/* NAME##_push(h, x)               add x: 0, or -1 out of memory (h unchanged)
 * NAME##_top(h)                   the least element, NULL when empty
 * NAME##_pop(h, out)              remove the least (h->n > 0) into *out (out may be NULL)
 * NAME##_replace_top(h, x)        pop and push x in one sift (h->n > 0)
 * NAME##_remove_at(h, i)          remove e[i] (its handle, kept by the hook)
 * NAME##_update_at(h, i, x)       e[i] becomes x: its key may be earlier or later
 * NAME##_heapify(h)               restore the order after keys were changed in place
 * the *_ctx forms take the hook's context; the plain ones pass NULL. */
#define CM_HEAP_DEFINE(NAME, T, ARITY, HOOK) CM_HEAP_DEFINE_CTX(NAME, T, ARITY, void, HOOK)

#define CM_HEAP_DEFINE_CTX(NAME, T, ARITY, CTX, HOOK)                                                    \
    typedef cm_heap_of(T) NAME##_heap;                                                                 \
    enum { NAME##_arity = (ARITY) };                                                                   \
    typedef char NAME##_arity_is_2_or_4[(ARITY) == 2 || (ARITY) == 4 ? 1 : -1];                       \
    static inline int NAME##_less(const T *a, const T *b) { return cm_heap_key_of(a) < cm_heap_key_of(b); } \
    /* x rises from the hole at i */                                                                   \
    static inline void NAME##_up(NAME##_heap *h, size_t i, T x, CTX *ctx)                              \
    {                                                                                                  \
        T *e = h->e;                                                                                   \
        cm_heap_key kx = cm_heap_key_of(&x);                                                           \
        while (i > 0) {                                                                                \
            size_t p = (i - 1) / NAME##_arity;                                                        \
            if (!(kx < cm_heap_key_of(&e[p]))) break;                                                  \
            e[i] = e[p];                                                                               \
            HOOK(ctx, e[i], i);                                                                        \
            i = p;                                                                                     \
        }                                                                                              \
        e[i] = x;                                                                                      \
        HOOK(ctx, e[i], i);                                                                            \
    }                                                                                                  \
    /* The least of e[c .. c + ARITY - 1] (all present), without branches. */                        \
    static inline size_t NAME##_least4(const T *e, size_t c)                                          \
    {                                                                                                  \
        size_t a = c + (size_t)NAME##_less(&e[c + 1], &e[c]);                                          \
        size_t b = c + 2 + (size_t)NAME##_less(&e[c + 3], &e[c + 2]);                                  \
        return NAME##_less(&e[b], &e[a]) ? b : a;                                                      \
    }                                                                                                  \
    /* The least child of i, or 0 when i has none. */                                                  \
    static inline size_t NAME##_least_child(const T *e, size_t n, size_t i)                           \
    {                                                                                                  \
        size_t c = NAME##_arity * i + 1;                                                               \
        if (c + NAME##_arity <= n)                                                                     \
            return NAME##_arity == 4 ? NAME##_least4(e, c) : c + (size_t)NAME##_less(&e[c + 1], &e[c]); \
        if (c >= n) return 0;                                                                          \
        size_t best = c;                                                                               \
        for (size_t j = c + 1; j < n; j++)   /* the last node's children, fewer than ARITY */         \
            if (NAME##_less(&e[j], &e[best])) best = j;                                                \
        return best;                                                                                   \
    }                                                                                                  \
    /* x sinks from the hole at i (n = h->n elements, the hole included) */                            \
    static inline void NAME##_down(NAME##_heap *h, size_t i, T x, CTX *ctx)                            \
    {                                                                                                  \
        T *e = h->e;                                                                                   \
        size_t c;                                                                                      \
        while ((c = NAME##_least_child(e, h->n, i)) != 0 && NAME##_less(&e[c], &x)) {                  \
            e[i] = e[c];                                                                               \
            HOOK(ctx, e[i], i);                                                                        \
            i = c;                                                                                     \
        }                                                                                              \
        e[i] = x;                                                                                      \
        HOOK(ctx, e[i], i);                                                                            \
    }                                                                                                  \
    static inline int NAME##_push_ctx(NAME##_heap *h, T x, CTX *ctx)                                   \
    {                                                                                                  \
        if (h->n == h->cap && cm_grow((void **)&h->e, &h->cap, h->n + 1, sizeof(T), 256) < 0) return -1; \
        NAME##_up(h, h->n++, x, ctx);                                                                  \
        return 0;                                                                                      \
    }                                                                                                  \
    static inline T *NAME##_top(const NAME##_heap *h) { return h->n ? &h->e[0] : NULL; }              \
    /* Floyd's variant: the root's hole goes down the path of least children to a leaf, then x    \
     * rises from there (the last element usually belongs near the bottom: fewer compares). */       \
    static inline void NAME##_refill_root(NAME##_heap *h, T x, CTX *ctx)                              \
    {                                                                                                  \
        T *e = h->e;                                                                                   \
        size_t i = 0, c;                                                                               \
        while ((c = NAME##_least_child(e, h->n, i)) != 0) {                                            \
            e[i] = e[c];                                                                               \
            HOOK(ctx, e[i], i);                                                                        \
            i = c;                                                                                     \
        }                                                                                              \
        NAME##_up(h, i, x, ctx);                                                                       \
    }                                                                                                  \
    static inline void NAME##_pop_ctx(NAME##_heap *h, T *out, CTX *ctx)                               \
    {                                                                                                  \
        if (out) *out = h->e[0];                                                                       \
        T last = h->e[--h->n];                                                                         \
        if (h->n) NAME##_refill_root(h, last, ctx);                                                    \
    }                                                                                                  \
    /* x sifts down from the root: a replacement usually belongs near the top (an engine's next event \
     * of the packet just processed), where Floyd's way down to a leaf would cost more. */           \
    static inline void NAME##_replace_top_ctx(NAME##_heap *h, T x, CTX *ctx) { NAME##_down(h, 0, x, ctx); } \
    static inline void NAME##_update_at_ctx(NAME##_heap *h, size_t i, T x, CTX *ctx)                  \
    {                                                                                                  \
        if (i > 0 && NAME##_less(&x, &h->e[(i - 1) / NAME##_arity])) NAME##_up(h, i, x, ctx);         \
        else NAME##_down(h, i, x, ctx);                                                                \
    }                                                                                                  \
    static inline void NAME##_remove_at_ctx(NAME##_heap *h, size_t i, CTX *ctx)                       \
    {                                                                                                  \
        T last = h->e[--h->n];                                                                         \
        if (i < h->n) NAME##_update_at_ctx(h, i, last, ctx);                                           \
    }                                                                                                  \
    static inline void NAME##_heapify_ctx(NAME##_heap *h, CTX *ctx)                                   \
    {                                                                                                  \
        for (size_t i = h->n / NAME##_arity + 1; i-- > 0;)                                            \
            if (i < h->n) NAME##_down(h, i, h->e[i], ctx);                                             \
    }                                                                                                  \
    static inline int NAME##_push(NAME##_heap *h, T x) { return NAME##_push_ctx(h, x, NULL); }         \
    static inline void NAME##_pop(NAME##_heap *h, T *out) { NAME##_pop_ctx(h, out, NULL); }           \
    static inline void NAME##_replace_top(NAME##_heap *h, T x) { NAME##_replace_top_ctx(h, x, NULL); } \
    static inline void NAME##_update_at(NAME##_heap *h, size_t i, T x) { NAME##_update_at_ctx(h, i, x, NULL); } \
    static inline void NAME##_remove_at(NAME##_heap *h, size_t i) { NAME##_remove_at_ctx(h, i, NULL); } \
    static inline void NAME##_heapify(NAME##_heap *h) { NAME##_heapify_ctx(h, NULL); }

#endif
