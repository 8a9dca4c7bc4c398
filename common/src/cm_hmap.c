/* The hash map (cm_hmap.h): open addressing, linear probing, keyed by two 64-bit words. */
#include "cm_hmap.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t mix(uint64_t k1, uint64_t k2)
{
    uint64_t x = k1 * 0x9E3779B97F4A7C15ULL + k2;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ULL;
    x ^= x >> 32;
    return x;
}

void *cm_hmap_get(const cm_hmap *h, uint64_t k1, uint64_t k2)
{
    if (!h->cap) return NULL;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    for (;;) {
        const cm_hslot *s = &h->s[i];
        if (!s->v) return NULL;
        if (s->h == hv && s->k1 == k1 && s->k2 == k2) return s->v;
        i = (i + 1) & m;
    }
}

void *cm_hmap_get_hint(const cm_hmap *h, uint64_t k1, uint64_t k2, cm_hhint *hint)
{
    hint->cap = h->cap;
    hint->n = h->n;
    if (!h->cap) return NULL;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    hint->h = hv;
    for (;;) {
        const cm_hslot *s = &h->s[i];
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

int cm_hmap_put_hint(cm_hmap *h, uint64_t k1, uint64_t k2, void *v, const cm_hhint *hint)
{
    /* same map as at the lookup (same size and count: nothing inserted or deleted since) and no
     * growth due: the slot found then is the one cm_hmap_put would take */
    if (!v || !hint->cap || hint->cap != h->cap || hint->n != h->n || (h->n + 1) * 2 > h->cap ||
        h->s[hint->i].v)
        return cm_hmap_put(h, k1, k2, v);
    cm_hslot *s = &h->s[hint->i];
    s->k1 = k1;
    s->k2 = k2;
    s->v = v;
    s->h = hint->h;
    h->n++;
    return 0;
}

static int grow(cm_hmap *h)
{
    size_t nc = h->cap ? h->cap * 2 : 64;
    cm_hslot *ns = calloc(nc, sizeof *ns);
    if (!ns) return -1;
    for (size_t j = 0; j < h->cap; j++) {
        cm_hslot *s = &h->s[j];
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

int cm_hmap_put(cm_hmap *h, uint64_t k1, uint64_t k2, void *v)
{
    if (!v) return -1;
    if ((h->n + 1) * 2 > h->cap && grow(h) != 0) return -1;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    for (;;) {
        cm_hslot *s = &h->s[i];
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

void *cm_hmap_del(cm_hmap *h, uint64_t k1, uint64_t k2)
{
    if (!h->cap) return NULL;
    uint64_t hv = mix(k1, k2);
    size_t m = h->cap - 1, i = (size_t)hv & m;
    for (;;) {
        cm_hslot *s = &h->s[i];
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

void cm_hmap_free(cm_hmap *h)
{
    free(h->s);
    memset(h, 0, sizeof *h);
}
