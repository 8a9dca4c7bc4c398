/* The growable array: one implementation for every layer (common/, below netmodel).
 *
 *     if (cm_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v, 64) < 0) return -1;
 *     a->v[a->n++] = x;
 *
 * The capacity doubles (from `first` elements when the array is empty) until it holds `need`
 * elements, so that n pushes cost O(n) copies. */
#ifndef CM_GROW_H
#define CM_GROW_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The growth itself, out of line: it runs once per doubling. */
int cm_grow_slow(void **p, size_t *cap, size_t need, size_t elem, size_t first);

/* Make *p (an array of *cap elements of `elem` bytes, NULL when *cap is 0) hold at least `need`
 * elements: realloc'd to the capacity doubled from *cap (from `first`, at least 1, when *cap is 0)
 * as often as it takes. 0; or -1 when out of memory or the size would overflow, *p and *cap then
 * unchanged (the caller still owns and frees *p). Inline, so that a push that fits costs one
 * comparison: the model's events and the engines' trains grow on their hot paths. */
static inline int cm_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    return need <= *cap ? 0 : cm_grow_slow(p, cap, need, elem, first);
}

#ifdef __cplusplus
}
#endif

#endif
