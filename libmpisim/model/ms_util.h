/* Small containers for the MPI layer model: an open-addressing hash map keyed by two 64-bit
 * words, the event heap (cm_heap.h) of events keyed by (time, order), and a chunked object pool whose
 * objects have stable 32-bit indices (packet cookies name messages by index). Internal. */
#ifndef MS_UTIL_H
#define MS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "cm_heap.h"

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

/* ---- event heap (common/cm_heap.h) ----------------------------------------------------------- */
typedef struct ms_event {   /* 32 bytes: the heap moves fewer bytes */
    int64_t t;
    uint64_t k;       /* tie-break within one time: class in the top 2 bits, then a sequence */
    void *p;
    uint64_t a;       /* the user's: ms_model packs its argument and the event type in it */
} ms_event;
CM_HEAP_DEFINE(ms_evq, ms_event, 4, CM_HEAP_NO_HOOK)   /* 4-ary: hundreds of events of 32 bytes */
typedef ms_evq_heap ms_heap;

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
