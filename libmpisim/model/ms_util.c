#include "ms_util.h"
#include "cm_grow.h"

#include <stdlib.h>
#include <string.h>

/* ---- pool ------------------------------------------------------------------------------------ */

#define CHUNK ((size_t)1 << MS_POOL_CHUNK_BITS)

void ms_pool_init(ms_pool *p, size_t objsize)
{
    memset(p, 0, sizeof *p);
    p->objsize = (objsize + 15) & ~(size_t)15;
}

void *ms_pool_at(const ms_pool *p, uint32_t idx)
{
    size_t c = idx >> MS_POOL_CHUNK_BITS;
    if (c >= p->nchunks) return NULL;
    return p->chunks[c] + (idx & (CHUNK - 1)) * p->objsize;
}

void *ms_pool_alloc(ms_pool *p, uint32_t *idx)
{
    uint32_t i;
    if (p->nfree) {
        i = p->free_idx[--p->nfree];
    } else {
        if (p->next == UINT32_MAX) return NULL;
        i = p->next;
        size_t c = i >> MS_POOL_CHUNK_BITS;
        if (c >= p->nchunks) {
            if (cm_grow((void **)&p->chunks, &p->capchunks, p->nchunks + 1, sizeof *p->chunks, 16) < 0) return NULL;
            p->chunks[p->nchunks] = malloc(CHUNK * p->objsize);
            if (!p->chunks[p->nchunks]) return NULL;
            p->nchunks++;
        }
        p->next++;
    }
    void *o = ms_pool_at(p, i);
    memset(o, 0, p->objsize);
    if (idx) *idx = i;
    return o;
}

void ms_pool_release(ms_pool *p, uint32_t idx)
{
    if (cm_grow((void **)&p->free_idx, &p->capfree, p->nfree + 1, sizeof *p->free_idx, 256) < 0)
        return;   /* leak the slot rather than fail */
    p->free_idx[p->nfree++] = idx;
}

void ms_pool_free(ms_pool *p)
{
    for (size_t i = 0; i < p->nchunks; i++) free(p->chunks[i]);
    free(p->chunks);
    free(p->free_idx);
    memset(p, 0, sizeof *p);
}
