/* Small containers for the MPI layer model: the event heap (cm_heap.h) of events keyed by (time, order), and a chunked object pool whose
 * objects have stable 32-bit indices (packet cookies name messages by index). Internal. */
#ifndef MS_UTIL_H
#define MS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "cm_heap.h"
#include "cm_hmap.h"   /* the hash map the model keys messages and requests by */

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
