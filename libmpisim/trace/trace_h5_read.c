/* Reading a whole HDF5 trace (schemas 1 and 2). */
#define _GNU_SOURCE
#include "trace_h5_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- reading -------------------------------------------------------------------------------- */

static char *get_str_attr(hid_t loc, const char *name, int *bad)
{
    if (H5Aexists(loc, name) <= 0) return NULL;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) {
        *bad = 1;
        return NULL;
    }
    hid_t ft = H5Aget_type(a);
    char *out = NULL;
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING) {
        if (H5Tis_variable_str(ft) > 0) {
            hid_t st = th5_str_type();
            char *p = NULL;
            if (H5Aread(a, st, &p) >= 0 && p) {
                out = strdup(p);
                H5free_memory(p);
            } else {
                *bad = 1;
            }
            H5Tclose(st);
        } else {
            size_t n = H5Tget_size(ft);
            out = calloc(n + 1, 1);
            if (out && H5Aread(a, ft, out) < 0) *bad = 1;
        }
    } else {
        *bad = 1;
    }
    if (ft >= 0) H5Tclose(ft);
    H5Aclose(a);
    return out;
}

static int get_int_attr(hid_t loc, const char *name, hid_t type, void *out)
{
    if (H5Aexists(loc, name) <= 0) return -1;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return -1;
    int rc = H5Aread(a, type, out) < 0 ? -1 : 0;
    H5Aclose(a);
    return rc;
}

/* Read a whole 1-D dataset into a new array (NULL with *n = 0 when empty). */
static int get_dataset(hid_t loc, const char *name, hid_t type, void **out, size_t *n, size_t max_elems)
{
    *out = NULL;
    *n = 0;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t sp = H5Dget_space(d);
    int rc = -1;
    hsize_t dims[1];
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) == 1 &&
        dims[0] <= max_elems) {
        size_t elem = H5Tget_size(type);
        if (dims[0] == 0) {
            rc = 0;
        } else {
            void *buf = calloc((size_t)dims[0], elem);
            if (buf && H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
                *out = buf;
                *n = (size_t)dims[0];
                rc = 0;
            } else {
                free(buf);
            }
        }
    }
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(d);
    return rc;
}

/* ---- variable-length string datasets, read without HDF5's conversion ----------------------- */

/* HDF5 1.10 reads a variable-length string by copying its global heap object, of the size the
 * heap says, into a buffer of the size the string's descriptor says (H5HG_read ignores the
 * latter): a damaged heap or descriptor overflows that buffer. The string datasets (/program,
 * /fn_names) are therefore read here from the file itself: the descriptors from the dataset's
 * contiguous storage, each string from its heap collection, every length checked against the
 * collection and the descriptor. (String attributes have no such access; the guarded reader's
 * child process contains what HDF5 does with them.) Layout: HDF5 file format spec, "Global Heap"
 * and "Variable-length data" (descriptor: length u32, collection address, object index u32). */

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

typedef struct heap_cache {
    uint64_t addr;
    unsigned char *data;
    uint64_t size;
} heap_cache;

static int load_collection(int fd, uint64_t file_size, uint64_t at, heap_cache *hc)
{
    if (hc->data && hc->addr == at) return 0;
    free(hc->data);
    hc->data = NULL;
    unsigned char h[16];
    if (at > file_size || file_size - at < 16 || pread(fd, h, 16, (off_t)at) != 16) return -1;
    uint64_t size = le(h + 8, 8);
    if (memcmp(h, "GCOL", 4) || h[4] != 1 || size < 32 || size > file_size - at || size > (1u << 30)) return -1;
    hc->data = malloc(size);
    if (!hc->data || pread(fd, hc->data, size, (off_t)at) != (ssize_t)size) return -1;
    hc->addr = at;
    hc->size = size;
    return 0;
}

/* The string of object `idx`, which must be `len` bytes long; NULL if the collection says other. */
static char *heap_string(const heap_cache *hc, uint32_t idx, uint32_t len)
{
    uint64_t p = 16;
    while (hc->size - p >= 16) {
        const unsigned char *o = hc->data + p;
        uint64_t oidx = le(o, 2), size = le(o + 8, 8);
        if (oidx == 0 || size > hc->size - p - 16) return NULL;   /* free space, or damaged */
        if (oidx == idx) {
            if (size != len) return NULL;
            char *s = malloc((size_t)len + 1);
            if (!s) return NULL;
            memcpy(s, o + 16, len);
            s[len] = 0;
            return s;
        }
        uint64_t step = 16 + ((size + 7) & ~(uint64_t)7);
        if (step > hc->size - p) return NULL;
        p += step;
    }
    return NULL;
}

static int get_str_dataset(const char *path, hid_t f, const char *name, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return 0;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t sp = H5Dget_space(d), ft = H5Dget_type(d), fcpl = H5Fget_create_plist(f);
    hsize_t dims[1];
    hsize_t ub = 0;
    size_t sa = 0, ss = 0;
    haddr_t at = H5Dget_offset(d);
    int rc = -1, fd = -1;
    heap_cache hc = {0, NULL, 0};
    char **v = NULL;
    unsigned char *desc = NULL;
    if (sp < 0 || ft < 0 || fcpl < 0 || H5Sget_simple_extent_ndims(sp) != 1 ||
        H5Sget_simple_extent_dims(sp, dims, NULL) != 1 || dims[0] >= (1u << 24) ||
        H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) <= 0 || H5Pget_userblock(fcpl, &ub) < 0 ||
        H5Pget_sizes(fcpl, &sa, &ss) < 0 || sa != 8 || ss != 8)
        goto out;
    v = calloc((size_t)dims[0] + 1, sizeof *v);
    if (!v) goto out;
    if (dims[0] == 0) {
        rc = 0;
        goto out;
    }
    struct stat st;
    if (at == HADDR_UNDEF || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) goto out;
    uint64_t fsize = (uint64_t)st.st_size, nbytes = (uint64_t)dims[0] * 16;
    if (ub + at > fsize || fsize - ub - at < nbytes || H5Dget_storage_size(d) < nbytes) goto out;
    desc = malloc((size_t)nbytes);
    if (!desc || pread(fd, desc, (size_t)nbytes, (off_t)(ub + at)) != (ssize_t)nbytes) goto out;
    for (size_t i = 0; i < (size_t)dims[0]; i++) {
        const unsigned char *e = desc + 16 * i;
        uint32_t len = (uint32_t)le(e, 4), idx = (uint32_t)le(e + 12, 4);
        uint64_t haddr = le(e + 4, 8);
        if (len == 0) v[i] = strdup("");
        else if (haddr > UINT64_MAX - ub || load_collection(fd, fsize, ub + haddr, &hc) < 0) goto out;
        else v[i] = heap_string(&hc, idx, len);
        if (!v[i]) goto out;
    }
    rc = 0;
out:
    if (rc == 0) {
        *out = v;
        *n = (size_t)dims[0];
    } else if (v) {
        for (size_t i = 0; i < (size_t)dims[0]; i++) free(v[i]);
        free(v);
    }
    free(desc);
    free(hc.data);
    if (fd >= 0) close(fd);
    if (fcpl >= 0) H5Pclose(fcpl);
    if (ft >= 0) H5Tclose(ft);
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(d);
    return rc;
}

/* What is not records: the file's metadata and /comms into a new trace with nranks ranks and no
 * records; the open file in *fp. NULL with `what` set on failure. */
ms_trace *th5_read_meta(const char *path, hid_t ct, hid_t *fp, int *version, char *what, size_t wlen)
{
    *fp = -1;
    *version = 0;
    ms_trace *t = calloc(1, sizeof *t);
    hid_t f = -1;
    if (!t) {
        snprintf(what, wlen, "out of memory");
        goto fail;
    }
    if (H5Fis_hdf5(path) <= 0) {
        FILE *probe = fopen(path, "rb");
        if (!probe) snprintf(what, wlen, "cannot open it");
        else {
            fclose(probe);
            snprintf(what, wlen, "not an HDF5 file (or its superblock is damaged)");
        }
        goto fail;
    }
    /* an object's metadata leaves HDF5's cache when the object is closed: a reader that opens each
     * rank's group and datasets again for each stretch held ~45 KB per rank in the cache otherwise */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0) H5Pset_evict_on_close(fapl, 1);
    f = H5Fopen(path, H5F_ACC_RDONLY, fapl >= 0 ? fapl : H5P_DEFAULT);
    if (fapl >= 0) H5Pclose(fapl);
    if (f < 0) {
        snprintf(what, wlen, "HDF5 cannot open it (truncated or damaged?)");
        goto fail;
    }
    int bad = 0;
    char *schema = get_str_attr(f, "schema", &bad);
    *version = !schema ? 0 : !strcmp(schema, MS_TRACE_SCHEMA) ? 2 : !strcmp(schema, MS_TRACE_SCHEMA_V1) ? 1 : 0;
    if (!*version) {
        for (char *c = schema; c && *c; c++)   /* the message must stay text whatever the file holds */
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
        if (schema && !strncmp(schema, "mpisim-trace/", 13))
            snprintf(what, wlen, "a trace of schema %.40s, which this mpisim (reading %s and %s) does not know: written "
                     "by a newer mpisim?", schema, MS_TRACE_SCHEMA_V1, MS_TRACE_SCHEMA);
        else
            snprintf(what, wlen, "not an mpisim trace (attribute schema is %.40s, expected %s)",
                     schema ? schema : "missing", MS_TRACE_SCHEMA);
        free(schema);
        goto fail;
    }
    free(schema);
    int32_t nr = 0;
    if (get_int_attr(f, "nranks", H5T_NATIVE_INT32, &nr) < 0 || nr < 1 || nr > 10000000) {
        snprintf(what, wlen, "attribute nranks missing or out of range");
        goto fail;
    }
    t->mpisim_version = get_str_attr(f, "mpisim_version", &bad);
    t->config_json = get_str_attr(f, "config", &bad);
    t->machine = get_str_attr(f, "machine", &bad);
    t->bindings_json = get_str_attr(f, "bindings", &bad);
    size_t np = 0;
    int prc = bad ? -1 : get_str_dataset(path, f, "program", &t->program, &np);
    t->nprogram = (int)np;   /* set before anything else can fail: ms_trace_free frees them */
    if (prc < 0 || get_str_dataset(path, f, "fn_names", &t->fn_names, &t->nfn) < 0) {
        snprintf(what, wlen, "unreadable metadata (program, fn_names or attributes)");
        goto fail;
    }
    if (get_dataset(f, "comms/index", ct, (void **)&t->comms, &t->ncomms, 1u << 26) < 0 ||
        get_dataset(f, "comms/members", H5T_NATIVE_INT32, (void **)&t->members, &t->nmembers, 1u << 30) < 0) {
        snprintf(what, wlen, "cannot read /comms");
        goto fail;
    }
    t->ranks = calloc((size_t)nr, sizeof *t->ranks);
    if (!t->ranks) {
        snprintf(what, wlen, "out of memory");
        goto fail;
    }
    t->nranks = nr;
    *fp = f;
    return t;
fail:
    if (f >= 0) H5Fclose(f);
    ms_trace_free(t);
    return NULL;
}

/* Where a contiguous 1-D dataset of `elem`-byte elements lies in the file: its byte offset (the
 * userblock included) and length; an empty one has length 0. -1 if it is not one. */
static int locate(hid_t f, const char *name, size_t elem, uint64_t *at, uint64_t *len)
{
    *at = *len = 0;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t sp = H5Dget_space(d), pl = H5Dget_create_plist(d), ty = H5Dget_type(d), fcpl = H5Fget_create_plist(f);
    hsize_t dims[1], ub = 0;
    int rc = -1;
    if (sp >= 0 && pl >= 0 && ty >= 0 && fcpl >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
        H5Sget_simple_extent_dims(sp, dims, NULL) == 1 && H5Pget_layout(pl) == H5D_CONTIGUOUS &&
        H5Tget_size(ty) == elem && H5Tget_order(ty) != H5T_ORDER_BE && H5Pget_userblock(fcpl, &ub) >= 0 &&
        dims[0] <= ((hsize_t)1 << 40)) {
        haddr_t a = H5Dget_offset(d);
        *len = (uint64_t)dims[0] * elem;
        if (*len == 0) rc = 0;
        else if (a != HADDR_UNDEF && H5Dget_storage_size(d) >= *len) {
            *at = (uint64_t)a + (uint64_t)ub;
            rc = 0;
        }
    }
    if (fcpl >= 0) H5Pclose(fcpl);
    if (ty >= 0) H5Tclose(ty);
    if (pl >= 0) H5Pclose(pl);
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(d);
    return rc;
}

/* Schema 2's layout (the records are read from the file with pread, trace_v2.c), checked against
 * the file's size. 0, or -1 with `what`. */
int th5_read_v2_layout(const char *path, hid_t f, int nranks, ms_trace_v2 *v, char *what, size_t wlen)
{
    memset(v, 0, sizeof *v);
    int32_t stretch = 0;
    if (get_int_attr(f, "stretch_records", H5T_NATIVE_INT32, &stretch) < 0 || stretch < 1) {
        snprintf(what, wlen, "attribute stretch_records missing or out of range");
        return -1;
    }
    v->stretch = (uint64_t)stretch;
    hid_t ht = th5_head_type();
    int rc = get_dataset(f, "rank_heads", ht, (void **)&v->heads, &v->nheads, (size_t)nranks);
    H5Tclose(ht);
    if (rc < 0) {
        snprintf(what, wlen, "cannot read /rank_heads (truncated or damaged file?)");
        return -1;
    }
    for (size_t i = 0; i < v->nheads; i++) v->heads[i].hostname[sizeof v->heads[i].hostname - 1] = 0;
    static const char *const names[4] = {"records", "lists", "results", "text"};
    static const size_t elem[4] = {1, sizeof(uint64_t), 1, 1};
    for (int k = 0; k < 4; k++)
        if (locate(f, names[k], elem[k], &v->at[k], &v->len[k]) < 0) {
            snprintf(what, wlen, "/%s is not a contiguous dataset of %zu-byte elements (damaged file?)", names[k],
                     elem[k]);
            return -1;
        }
    uint64_t sat, slen;
    if (locate(f, "stretches", sizeof(uint64_t), &sat, &slen) < 0 || slen / 8 > ((uint64_t)1 << 34) || !slen) {
        snprintf(what, wlen, "/stretches is not a contiguous dataset of offsets (damaged file?)");
        return -1;
    }
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || sat > (uint64_t)st.st_size || slen > (uint64_t)st.st_size - sat) {
        if (fd >= 0) close(fd);
        snprintf(what, wlen, "/stretches lies outside the file (truncated?)");
        return -1;
    }
    v->nsoff = (size_t)(slen / 8);
    v->soff = malloc(v->nsoff * sizeof *v->soff);
    ssize_t got = v->soff ? pread(fd, v->soff, (size_t)slen, (off_t)sat) : -1;
    close(fd);
    if (got != (ssize_t)slen) {
        snprintf(what, wlen, "cannot read /stretches (truncated file?)");
        return -1;
    }
    return ms_trace_v2_check(v, nranks, (uint64_t)st.st_size, what, wlen);
}

void th5_head_to_rank(const ms_trace_v2_head *h, ms_trace_rank *r)
{
    r->rank = h->rank;
    r->pid = h->pid;
    r->cosim = h->cosim;
    r->truncated = h->truncated;
    r->missing = h->missing;
    r->start_real_ns = h->start_real_ns;
    memcpy(r->hostname, h->hostname, sizeof r->hostname);
    r->hostname[sizeof r->hostname - 1] = 0;
}

/* A rank's attributes (its records are not read). */
void th5_read_rank_head(hid_t gr, ms_trace_rank *r)
{
    int bad = 0;
    if (get_int_attr(gr, "rank", H5T_NATIVE_INT32, &r->rank) < 0) r->rank = -1;
    get_int_attr(gr, "pid", H5T_NATIVE_INT32, &r->pid);
    get_int_attr(gr, "cosim", H5T_NATIVE_INT32, &r->cosim);
    get_int_attr(gr, "truncated", H5T_NATIVE_INT32, &r->truncated);
    get_int_attr(gr, "missing", H5T_NATIVE_INT32, &r->missing);   /* absent in older traces */
    get_int_attr(gr, "start_real_ns", H5T_NATIVE_INT64, &r->start_real_ns);
    char *host = get_str_attr(gr, "hostname", &bad);
    if (host) {
        snprintf(r->hostname, sizeof r->hostname, "%s", host);
        free(host);
    }
}

ms_trace *ms_trace_read_h5_each(const char *path, ms_trace_each_fn each, void *user, char *err, size_t errlen)
{
    h5_quiet q;
    quiet_on(&q);
    hid_t et = th5_event_type(), rt = th5_result_type(), ct = th5_comm_type();
    hid_t f = -1, g = -1, gr = -1;
    char what[320] = "";
    int version, fd = -1, err_set = 0;
    ms_trace_v2 v2;
    memset(&v2, 0, sizeof v2);
    ms_trace *t = th5_read_meta(path, ct, &f, &version, what, sizeof what);
    if (!t) goto fail;
    int nr = t->nranks;
    if (each && each(user, t, -1) < 0) {
        snprintf(what, sizeof what, "cannot pass its metadata on");
        goto fail;
    }
    if (version == 2) {   /* the heads and layout from HDF5, the records by pread */
        if (th5_read_v2_layout(path, f, nr, &v2, what, sizeof what) < 0) goto fail;
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            snprintf(what, sizeof what, "cannot open it again");
            goto fail;
        }
        for (int i = 0; i < nr; i++) {
            th5_head_to_rank(&v2.heads[i], &t->ranks[i]);
            if (ms_trace_v2_rank(fd, &v2, i, &t->ranks[i], path, err, errlen) < 0) {
                err_set = 1;
                goto fail;
            }
            if (each) {
                if (each(user, t, i) < 0) {
                    snprintf(what, sizeof what, "cannot pass rank %d on", i);
                    goto fail;
                }
                ms_trace_rank_free(&t->ranks[i]);
            }
        }
        close(fd);
        fd = -1;
        ms_trace_v2_free(&v2);
        goto done;
    }
    g = H5Gopen2(f, "ranks", H5P_DEFAULT);
    if (g < 0) {
        snprintf(what, sizeof what, "no group /ranks");
        goto fail;
    }
    for (int i = 0; i < nr; i++) {
        ms_trace_rank *r = &t->ranks[i];
        char name[32];
        snprintf(name, sizeof name, "%d", i);
        gr = H5Gopen2(g, name, H5P_DEFAULT);
        if (gr < 0) {
            snprintf(what, sizeof what, "no group /ranks/%d", i);
            goto fail;
        }
        th5_read_rank_head(gr, r);
        const char *ds = "events";
        if (get_dataset(gr, ds, et, (void **)&r->ev, &r->nev, (size_t)1 << 34) < 0 ||
            get_dataset(gr, ds = "lists", H5T_NATIVE_UINT64, (void **)&r->lists, &r->nlists, (size_t)1 << 34) < 0 ||
            get_dataset(gr, ds = "results", rt, (void **)&r->results, &r->nresults, (size_t)1 << 34) < 0 ||
            get_dataset(gr, ds = "text", H5T_NATIVE_CHAR, (void **)&r->text, &r->ntext, (size_t)1 << 30) < 0) {
            snprintf(what, sizeof what, "cannot read /ranks/%d/%s (truncated or damaged file?)", i, ds);
            goto fail;
        }
        H5Gclose(gr);
        gr = -1;
        if (each) {   /* passed on and forgotten: the caller keeps one rank at a time */
            if (each(user, t, i) < 0) {
                snprintf(what, sizeof what, "cannot pass /ranks/%d on", i);
                goto fail;
            }
            ms_trace_rank_free(r);
        }
    }
    H5Gclose(g);
    g = -1;
done:
    H5Fclose(f);
    f = -1;
    H5Tclose(et);
    H5Tclose(rt);
    H5Tclose(ct);
    quiet_off(&q);
    if (!each && ms_trace_validate(t, path, err, errlen) < 0) {   /* else the caller validates what it keeps */
        ms_trace_free(t);
        return NULL;
    }
    return t;
fail:
    if (fd >= 0) close(fd);
    ms_trace_v2_free(&v2);
    if (gr >= 0) H5Gclose(gr);
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    H5Tclose(et);
    H5Tclose(rt);
    H5Tclose(ct);
    quiet_off(&q);
    if (!err_set) ms_trace_fail(err, errlen, "%s: %s", path, what);
    ms_trace_free(t);
    return NULL;
}
