/* A hash map from a pair of 64-bit keys to a non-NULL pointer: open addressing with linear
 * probing, a power-of-two capacity (from 64) that doubles before it is half full. The model keys its messages and
 * requests by it, the driver the requests a lenient wait leaves out. A zeroed cm_hmap is empty. */
#ifndef CM_HMAP_H
#define CM_HMAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cm_hslot {
    uint64_t k1, k2;
    void *v;          /* NULL = empty slot */
    uint64_t h;       /* hash of (k1, k2): probes compare it first, deletion and growth reuse it */
} cm_hslot;
typedef struct cm_hmap {
    cm_hslot *s;
    size_t cap, n;    /* cap is a power of two */
} cm_hmap;

void *cm_hmap_get(const cm_hmap *h, uint64_t k1, uint64_t k2);
int cm_hmap_put(cm_hmap *h, uint64_t k1, uint64_t k2, void *v);    /* replaces; 0 or -1 (memory) */
void *cm_hmap_del(cm_hmap *h, uint64_t k1, uint64_t k2);           /* returns the removed value */
void cm_hmap_free(cm_hmap *h);
/* A lookup that also remembers where an absent key would go; cm_hmap_put_hint inserts there when
 * the map has not changed since (else it is cm_hmap_put). */
typedef struct cm_hhint {
    uint64_t h;
    size_t i, cap, n;
} cm_hhint;
void *cm_hmap_get_hint(const cm_hmap *h, uint64_t k1, uint64_t k2, cm_hhint *hint);
int cm_hmap_put_hint(cm_hmap *h, uint64_t k1, uint64_t k2, void *v, const cm_hhint *hint);

#ifdef __cplusplus
}
#endif

#endif
