/* What the parts of the HDF5 trace share (schema: replay/README.md). The parts are
 *   trace_h5.c          HDF5 types, writing (schemas 1 and 2), the raw -> HDF5 conversion
 *   trace_h5_read.c     reading a whole trace (attributes, datasets, variable-length strings read
 *                       without HDF5's conversion, the schema 2 layout)
 *   trace_h5_stretch.c  reading stretches of records (the guarded stream's child)
 * Functions shared between the parts carry the prefix th5_; everything else is static in its file. */
#ifndef TRACE_H5_INTERNAL_H
#define TRACE_H5_INTERNAL_H

#include "ms_trace.h"
#include "ms_trace_internal.h"

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

/* HDF5 prints its error stack by default; a library must not print. Silence it for one call. */
typedef struct h5_quiet {
    H5E_auto2_t func;
    void *data;
} h5_quiet;
static inline void quiet_on(h5_quiet *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}
static inline void quiet_off(const h5_quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

/* trace_h5.c */
hid_t th5_event_type(void);
hid_t th5_result_type(void);
hid_t th5_comm_type(void);
hid_t th5_str_type(void);
hid_t th5_head_type(void);

/* trace_h5_read.c */
ms_trace *th5_read_meta(const char *path, hid_t ct, hid_t *fp, int *version, char *what, size_t wlen);
int th5_read_v2_layout(const char *path, hid_t f, int nranks, ms_trace_v2 *v, char *what, size_t wlen);
void th5_head_to_rank(const ms_trace_v2_head *h, ms_trace_rank *r);
void th5_read_rank_head(hid_t gr, ms_trace_rank *r);

#endif
