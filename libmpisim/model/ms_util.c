#include "ms_util.h"

#include <stdlib.h>
#include <string.h>

/* ---- hash map -------------------------------------------------------------------------------- */

static inline uint64_t mix(uint64_t k1, uint64_t k2)
{
    uint64_t x = k1 * 0x9E3779B97F4A7C15ULL + k2;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ULL;
    x ^= x >> 32;
    return x;
}

void *ms_hmap_get(const ms_hmap *h, uint64_t k1, uint64_t k2)
{
    if (!h->cap) return NULL;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    for (;;) {
        const ms_hslot *s = &h->s[i];
        if (!s->v) return NULL;
        if (s->h == hv && s->k1 == k1 && s->k2 == k2) return s->v;
        i = (i + 1) & m;
    }
}

void *ms_hmap_get_hint(const ms_hmap *h, uint64_t k1, uint64_t k2, ms_hhint *hint)
{
    hint->cap = h->cap;
    hint->n = h->n;
    if (!h->cap) return NULL;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    hint->h = hv;
    for (;;) {
        const ms_hslot *s = &h->s[i];
        if (!s->v) {
            hint->i = i;
            return NULL;
        }
        if (s->h == hv && s->k1 == k1 && s->k2 == k2) {
            hint->cap = 0;   /* present: no insertion slot */
            return s->v;
        }
        i = (i + 1) & m;
    }
}

int ms_hmap_put_hint(ms_hmap *h, uint64_t k1, uint64_t k2, void *v, const ms_hhint *hint)
{
    /* same map as at the lookup (same size and count: nothing inserted or deleted since) and no
     * growth due: the slot found then is the one ms_hmap_put would take */
    if (!v || !hint->cap || hint->cap != h->cap || hint->n != h->n || (h->n + 1) * 2 > h->cap ||
        h->s[hint->i].v)
        return ms_hmap_put(h, k1, k2, v);
    ms_hslot *s = &h->s[hint->i];
    s->k1 = k1;
    s->k2 = k2;
    s->v = v;
    s->h = hint->h;
    h->n++;
    return 0;
}

static int grow(ms_hmap *h)
{
    size_t nc = h->cap ? h->cap * 2 : 64;
    ms_hslot *ns = calloc(nc, sizeof *ns);
    if (!ns) return -1;
    for (size_t j = 0; j < h->cap; j++) {
        ms_hslot *s = &h->s[j];
        if (!s->v) continue;
        size_t i = (size_t)s->h & (nc - 1);
        while (ns[i].v) i = (i + 1) & (nc - 1);
        ns[i] = *s;
    }
    free(h->s);
    h->s = ns;
    h->cap = nc;
    return 0;
}

int ms_hmap_put(ms_hmap *h, uint64_t k1, uint64_t k2, void *v)
{
    if (!v) return -1;
    if ((h->n + 1) * 2 > h->cap && grow(h) != 0) return -1;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    for (;;) {
        ms_hslot *s = &h->s[i];
        if (!s->v) {
            s->k1 = k1;
            s->k2 = k2;
            s->v = v;
            s->h = hv;
            h->n++;
            return 0;
        }
        if (s->h == hv && s->k1 == k1 && s->k2 == k2) {
            s->v = v;
            return 0;
        }
        i = (i + 1) & m;
    }
}

void *ms_hmap_del(ms_hmap *h, uint64_t k1, uint64_t k2)
{
    if (!h->cap) return NULL;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    for (;;) {
        ms_hslot *s = &h->s[i];
        if (!s->v) return NULL;
        if (s->h == hv && s->k1 == k1 && s->k2 == k2) break;
        i = (i + 1) & m;
    }
    void *v = h->s[i].v;
    /* backward-shift deletion keeps probe chains intact without tombstones */
    size_t j = i;
    for (;;) {
        h->s[i].v = NULL;
        for (;;) {
            j = (j + 1) & m;
            if (!h->s[j].v) {
                h->n--;
                return v;
            }
            size_t home = (size_t)h->s[j].h & m;
            /* can slot j move to i? only if home is not cyclically in (i, j] */
            int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
            if (!in_range) break;
        }
        h->s[i] = h->s[j];
        i = j;
    }
}

void ms_hmap_free(ms_hmap *h)
{
    free(h->s);
    memset(h, 0, sizeof *h);
}

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
            if (p->nchunks == p->capchunks) {
                size_t nc = p->capchunks ? p->capchunks * 2 : 16;
                char **n = realloc(p->chunks, nc * sizeof *n);
                if (!n) return NULL;
                p->chunks = n;
                p->capchunks = nc;
            }
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
    if (p->nfree == p->capfree) {
        size_t nc = p->capfree ? p->capfree * 2 : 256;
        uint32_t *n = realloc(p->free_idx, nc * sizeof *n);
        if (!n) return;   /* leak the slot rather than fail */
        p->free_idx = n;
        p->capfree = nc;
    }
    p->free_idx[p->nfree++] = idx;
}

void ms_pool_free(ms_pool *p)
{
    for (size_t i = 0; i < p->nchunks; i++) free(p->chunks[i]);
    free(p->chunks);
    free(p->free_idx);
    memset(p, 0, sizeof *p);
}
