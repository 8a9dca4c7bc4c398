/* Small containers for the MPI layer model: an open-addressing hash map keyed by two 64-bit
 * words, a 4-ary heap of events keyed by (time, order), and a chunked object pool whose
 * objects have stable 32-bit indices (packet cookies name messages by index). Internal. */
#ifndef MS_UTIL_H
#define MS_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* ---- hash map (k1, k2) -> void* -------------------------------------------------------------- */
typedef struct ms_hslot {
    uint64_t k1, k2;
    void *v;          /* NULL = empty slot */
    uint64_t h;       /* hash of (k1, k2): probes compare it first, deletion and growth reuse it */
} ms_hslot;
typedef struct ms_hmap {
    ms_hslot *s;
    size_t cap, n;    /* cap is a power of two */
} ms_hmap;

void *ms_hmap_get(const ms_hmap *h, uint64_t k1, uint64_t k2);
int ms_hmap_put(ms_hmap *h, uint64_t k1, uint64_t k2, void *v);    /* replaces; 0 or -1 (memory) */
void *ms_hmap_del(ms_hmap *h, uint64_t k1, uint64_t k2);           /* returns the removed value */
void ms_hmap_free(ms_hmap *h);
/* A lookup that also remembers where an absent key would go; ms_hmap_put_hint inserts there when
 * the map has not changed since (else it is ms_hmap_put). */
typedef struct ms_hhint {
    uint64_t h;
    size_t i, cap, n;
} ms_hhint;
void *ms_hmap_get_hint(const ms_hmap *h, uint64_t k1, uint64_t k2, ms_hhint *hint);
int ms_hmap_put_hint(ms_hmap *h, uint64_t k1, uint64_t k2, void *v, const ms_hhint *hint);

/* ---- event heap ------------------------------------------------------------------------------ */
typedef struct ms_event {   /* 32 bytes: the heap moves fewer bytes */
    int64_t t;
    uint64_t order;   /* tie-break within one time: class in the top 2 bits, then a sequence */
    void *p;
    uint64_t a;       /* the user's: ms_model packs its argument and the event type in it */
} ms_event;
/* e[i]'s children are e[MS_HEAP_ARITY * i + 1 ..  MS_HEAP_ARITY * i + MS_HEAP_ARITY], none earlier than e[i] */
#define MS_HEAP_ARITY 4
typedef struct ms_heap {
    ms_event *e;
    size_t n, cap;
} ms_heap;

int ms_heap_push(ms_heap *h, const ms_event *ev);
void ms_heap_pop(ms_heap *h, ms_event *out);
static inline const ms_event *ms_heap_top(const ms_heap *h) { return h->n ? &h->e[0] : NULL; }
void ms_heap_free(ms_heap *h);

/* ---- pool with indices ----------------------------------------------------------------------- */
#define MS_POOL_CHUNK_BITS 10
typedef struct ms_pool {
    size_t objsize;
    char **chunks;
    size_t nchunks, capchunks;
    uint32_t *free_idx;
    size_t nfree, capfree;
    uint32_t next;      /* next never-used index */
} ms_pool;

void ms_pool_init(ms_pool *p, size_t objsize);
void *ms_pool_alloc(ms_pool *p, uint32_t *idx);     /* zeroed object */
void ms_pool_release(ms_pool *p, uint32_t idx);
void *ms_pool_at(const ms_pool *p, uint32_t idx);
void ms_pool_free(ms_pool *p);

#endif
