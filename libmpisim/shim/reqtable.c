/* The shim's request table: see reqtable.h. */
#include "reqtable.h"

#include <stdlib.h>

static size_t hash_handle(MPI_Request h)
{
    uint64_t x = 0;
    /* MPI_Request is a pointer in Open MPI and an int in MPICH: hash its bytes either way */
    for (size_t i = 0; i < sizeof h && i < sizeof x; i++) x |= (uint64_t)((const unsigned char *)&h)[i] << (8 * i);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

#define TOMBSTONE ((ms_rq *)1)

static int grow(ms_rq_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    ms_rq **n = calloc(cap, sizeof *n);
    if (!n) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        ms_rq *r = t->slots[i];
        if (r && r != TOMBSTONE) {
            size_t j = hash_handle(r->user) & (cap - 1);
            while (n[j]) j = (j + 1) & (cap - 1);
            n[j] = r;
        }
    }
    free(t->slots);
    t->slots = n;
    t->cap = cap;
    return 0;
}

int ms_rqt_index(ms_rq_table *t, ms_rq *r)
{
    if ((t->used + 1) * 2 > t->cap && grow(t) < 0) return -1;
    size_t j = hash_handle(r->user) & (t->cap - 1);
    while (t->slots[j] && t->slots[j] != TOMBSTONE) j = (j + 1) & (t->cap - 1);
    t->slots[j] = r;
    t->used++;
    return 0;
}

ms_rq *ms_rqt_find(const ms_rq_table *t, MPI_Request user)
{
    if (!t->cap) return NULL;
    size_t j = hash_handle(user) & (t->cap - 1);
    for (size_t k = 0; k < t->cap && t->slots[j]; k++, j = (j + 1) & (t->cap - 1))
        if (t->slots[j] != TOMBSTONE && t->slots[j]->user == user) return t->slots[j];
    return NULL;
}

void ms_rqt_unindex(ms_rq_table *t, ms_rq *r)
{
    if (!t->cap) return;
    size_t j = hash_handle(r->user) & (t->cap - 1);
    for (size_t k = 0; k < t->cap && t->slots[j]; k++, j = (j + 1) & (t->cap - 1))
        if (t->slots[j] == r) {
            t->slots[j] = TOMBSTONE;
            t->used--; /* tombstones are cleared at the next growth */
            return;
        }
}

ms_rq *ms_rqt_at(const ms_rq_table *t, size_t i)
{
    return t->slots[i] == TOMBSTONE ? NULL : t->slots[i];
}

ms_rq *ms_rqt_find_id(const ms_rq_table *t, uint64_t id)
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i] && t->slots[i] != TOMBSTONE && t->slots[i]->id == id) return t->slots[i];
    return NULL;
}

void ms_rqt_destroy(ms_rq_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
}
