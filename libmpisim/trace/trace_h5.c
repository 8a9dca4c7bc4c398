/* The HDF5 form of a trace: writer, reader, and the raw -> HDF5 conversion. Schema: replay/README.md. */
#define _GNU_SOURCE
#include "ms_trace.h"
#include "ms_trace_internal.h"
#include "ms_outfile.h"

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

#ifdef MS_TRACE_HAVE_FN_NAMES
#include "fn_names_gen.h"
#endif

#ifndef MPISIM_VERSION
#define MPISIM_VERSION "unknown"
#endif

/* HDF5 prints its error stack by default; a library must not print. Silence it for one call. */
typedef struct h5_quiet {
    H5E_auto2_t func;
    void *data;
} h5_quiet;
static void quiet_on(h5_quiet *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}
static void quiet_off(const h5_quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

/* ---- types ---------------------------------------------------------------------------------- */

static hid_t event_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ms_trace_event));
#define F(name, type) H5Tinsert(t, #name, HOFFSET(ms_trace_event, name), type)
    F(kind, H5T_NATIVE_INT32);
    F(fn, H5T_NATIVE_INT32);
    F(t_ps, H5T_NATIVE_INT64);
    F(compute_ps, H5T_NATIVE_INT64);
    F(raw_compute_ns, H5T_NATIVE_INT64);
    F(real_entry_ns, H5T_NATIVE_INT64);
    F(real_exit_ns, H5T_NATIVE_INT64);
    F(complete_ps, H5T_NATIVE_INT64);
    F(comm, H5T_NATIVE_UINT64);
    F(bytes, H5T_NATIVE_UINT64);
    F(req, H5T_NATIVE_UINT64);
    F(callsite, H5T_NATIVE_UINT64);
    F(list_off, H5T_NATIVE_INT64);
    F(list_n, H5T_NATIVE_INT32);
    F(peer, H5T_NATIVE_INT32);
    F(tag, H5T_NATIVE_INT32);
    F(mode, H5T_NATIVE_INT32);
    F(flags, H5T_NATIVE_INT32);
    F(matched_source, H5T_NATIVE_INT32);
    F(matched_tag, H5T_NATIVE_INT32);
#undef F
    return t;
}

static hid_t result_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ms_trace_result));
#define F(name, type) H5Tinsert(t, #name, HOFFSET(ms_trace_result, name), type)
    F(req, H5T_NATIVE_UINT64);
    F(complete_time, H5T_NATIVE_INT64);
    F(bytes, H5T_NATIVE_UINT64);
    F(completed, H5T_NATIVE_INT32);
    F(source, H5T_NATIVE_INT32);
    F(tag, H5T_NATIVE_INT32);
    F(cancelled, H5T_NATIVE_INT32);
#undef F
    return t;
}

static hid_t comm_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ms_trace_comm));
    H5Tinsert(t, "id", HOFFSET(ms_trace_comm, id), H5T_NATIVE_UINT64);
    H5Tinsert(t, "size", HOFFSET(ms_trace_comm, size), H5T_NATIVE_INT32);
    H5Tinsert(t, "offset", HOFFSET(ms_trace_comm, offset), H5T_NATIVE_INT64);
    return t;
}

static hid_t str_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* 1-D dataset, chunked, shuffled and deflated (empty ones too: extent 0, unlimited). Chunks of
 * 128 KiB (1024 records): replay reads a rank's records a chunk at a time as it plays them, and
 * HDF5 inflates a chunk whole, so the chunk is what each rank holds in memory (1 MiB chunks made
 * files no smaller: deflate's window is 32 KiB). */
static int put_dataset(hid_t loc, const char *name, hid_t type, size_t n, const void *data)
{
    size_t elem = H5Tget_size(type);
    hsize_t dims[1] = {n}, maxd[1] = {H5S_UNLIMITED};
    hsize_t chunk = (hsize_t)(elem ? (1u << 17) / elem : 1024);
    if (chunk < 1) chunk = 1;
    if (n && chunk > n) chunk = n;
    hid_t sp = H5Screate_simple(1, dims, maxd);
    hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(pl, 1, &chunk);
    H5Pset_shuffle(pl);
    H5Pset_deflate(pl, 4);
    hid_t d = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    int rc = d < 0 ? -1 : 0;
    if (d >= 0 && n && H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) rc = -1;
    if (d >= 0) H5Dclose(d);
    H5Pclose(pl);
    H5Sclose(sp);
    return rc;
}

static int put_str_attr(hid_t loc, const char *name, const char *value)
{
    if (!value) return 0;
    hid_t st = str_type();
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(loc, name, st, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (a >= 0 && H5Awrite(a, st, &value) >= 0) ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(st);
    return rc;
}

static int put_int_attr(hid_t loc, const char *name, hid_t type, const void *value)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = (a >= 0 && H5Awrite(a, type, value) >= 0) ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

static int put_str_dataset(hid_t loc, const char *name, char *const *v, size_t n)
{
    hid_t st = str_type();
    hsize_t dims[1] = {n};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t d = H5Dcreate2(loc, name, st, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = d < 0 ? -1 : 0;
    if (d >= 0 && n && H5Dwrite(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) rc = -1;
    if (d >= 0) H5Dclose(d);
    H5Sclose(sp);
    H5Tclose(st);
    return rc;
}

/* Schema 1 into the file at `file` (created exclusively: never through a link); messages name
 * `path`. */
static int write_h5_v1_file(const ms_trace *t, const char *file, const char *path, char *err, size_t errlen)
{
    h5_quiet q;
    quiet_on(&q);
    int rc = -1;
    const char *what = "create the file";
    hid_t et = event_type(), rt = result_type(), ct = comm_type();
    hid_t f = H5Fcreate(file, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = -1, gr = -1;
    if (f < 0) goto out;
    what = "write the job's attributes";
    int32_t nr = t->nranks;
    if (put_str_attr(f, "schema", MS_TRACE_SCHEMA_V1) < 0 || put_str_attr(f, "writer_version", MPISIM_VERSION) < 0 ||
        put_str_attr(f, "mpisim_version", t->mpisim_version) < 0 ||
        put_int_attr(f, "nranks", H5T_NATIVE_INT32, &nr) < 0 || put_str_attr(f, "config", t->config_json) < 0 ||
        put_str_attr(f, "machine", t->machine) < 0 || put_str_attr(f, "bindings", t->bindings_json) < 0)
        goto out;
    if (t->program && put_str_dataset(f, "program", t->program, (size_t)t->nprogram) < 0) goto out;
    if (t->fn_names && put_str_dataset(f, "fn_names", t->fn_names, t->nfn) < 0) goto out;
    what = "write /comms";
    g = H5Gcreate2(f, "comms", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0 || put_dataset(g, "index", ct, t->ncomms, t->comms) < 0 ||
        put_dataset(g, "members", H5T_NATIVE_INT32, t->nmembers, t->members) < 0)
        goto out;
    H5Gclose(g);
    g = H5Gcreate2(f, "ranks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) goto out;
    for (int i = 0; i < t->nranks; i++) {
        const ms_trace_rank *r = &t->ranks[i];
        char name[32];
        snprintf(name, sizeof name, "%d", i);
        what = "write a rank's group";
        gr = H5Gcreate2(g, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (gr < 0) goto out;
        if (put_int_attr(gr, "rank", H5T_NATIVE_INT32, &r->rank) < 0 ||
            put_int_attr(gr, "pid", H5T_NATIVE_INT32, &r->pid) < 0 ||
            put_int_attr(gr, "cosim", H5T_NATIVE_INT32, &r->cosim) < 0 ||
            put_int_attr(gr, "truncated", H5T_NATIVE_INT32, &r->truncated) < 0 ||
            put_int_attr(gr, "missing", H5T_NATIVE_INT32, &r->missing) < 0 ||
            put_int_attr(gr, "start_real_ns", H5T_NATIVE_INT64, &r->start_real_ns) < 0 ||
            put_str_attr(gr, "hostname", r->hostname) < 0)
            goto out;
        what = "write a rank's datasets";
        if (put_dataset(gr, "events", et, r->nev, r->ev) < 0 ||
            put_dataset(gr, "lists", H5T_NATIVE_UINT64, r->nlists, r->lists) < 0 ||
            put_dataset(gr, "results", rt, r->nresults, r->results) < 0 ||
            put_dataset(gr, "text", H5T_NATIVE_CHAR, r->ntext, r->text) < 0)
            goto out;
        H5Gclose(gr);
        gr = -1;
    }
    rc = 0;
out:
    if (gr >= 0) H5Gclose(gr);
    if (g >= 0) H5Gclose(g);
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) {
        rc = -1;
        what = "close (flush) the file";
    }
    H5Tclose(et);
    H5Tclose(rt);
    H5Tclose(ct);
    quiet_off(&q);
    if (rc < 0) ms_trace_fail(err, errlen, "%s: cannot %s (HDF5 error; disk full or no permission?)", path, what);
    return rc;
}


/* ---- schema 2 ------------------------------------------------------------------------------- */

static hid_t head_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ms_trace_v2_head));
    hid_t host = H5Tcopy(H5T_C_S1);
    H5Tset_size(host, sizeof ((ms_trace_v2_head *)0)->hostname);
    H5Tset_strpad(host, H5T_STR_NULLTERM);
#define F(name, type) H5Tinsert(t, #name, HOFFSET(ms_trace_v2_head, name), type)
    F(rank, H5T_NATIVE_INT32);
    F(pid, H5T_NATIVE_INT32);
    F(cosim, H5T_NATIVE_INT32);
    F(truncated, H5T_NATIVE_INT32);
    F(missing, H5T_NATIVE_INT32);
    F(start_real_ns, H5T_NATIVE_INT64);
    F(hostname, host);
    F(nev, H5T_NATIVE_UINT64);
    F(nlists, H5T_NATIVE_UINT64);
    F(nresults, H5T_NATIVE_UINT64);
    F(ntext, H5T_NATIVE_UINT64);
    F(first_stretch, H5T_NATIVE_UINT64);
    F(lists_first, H5T_NATIVE_UINT64);
    F(results_first, H5T_NATIVE_UINT64);
    F(text_first, H5T_NATIVE_UINT64);
#undef F
    H5Tclose(host);
    return t;
}

/* 1-D contiguous dataset of n elements of a little-endian file type (schema 2's bulk data: read
 * back with pread at the offset HDF5 gives, so no chunks, no filters). */
static int put_contiguous(hid_t loc, const char *name, hid_t ftype, hid_t mtype, size_t n, const void *data)
{
    hsize_t dims[1] = {n};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(pl, H5D_CONTIGUOUS);
    H5Pset_alloc_time(pl, H5D_ALLOC_TIME_EARLY);
    hid_t d = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    int rc = d < 0 ? -1 : 0;
    if (d >= 0 && n && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) rc = -1;
    if (d >= 0) H5Dclose(d);
    H5Pclose(pl);
    H5Sclose(sp);
    return rc;
}

/* Schema 2: the records of every rank as compact streams, stretch by stretch, one contiguous byte
 * dataset for all (/records, the stretches' offsets in /stretches), the side arrays of all ranks
 * one after another (/lists, /results as bytes, /text), the ranks' attributes and sizes in
 * /rank_heads (no group per rank: 65536 of them took HDF5 minutes to open). */
static int write_h5_v2_file(const ms_trace *t, const char *file, const char *path, char *err, size_t errlen)
{
    if (1 != *(const unsigned char *)&(const uint16_t){1})
        return ms_trace_fail(err, errlen, "%s: cannot write schema 2 on a big-endian machine", path);
    size_t nr = (size_t)t->nranks, ns = 0, nl = 0, nres = 0, ntx = 0, nrec = 0;
    for (size_t i = 0; i < nr; i++) {
        const ms_trace_rank *r = &t->ranks[i];
        ns += (r->nev + MS_TRACE_STRETCH - 1) / MS_TRACE_STRETCH;
        nl += r->nlists;
        nres += r->nresults;
        ntx += r->ntext;
        nrec += r->nev;
    }
    ms_trace_v2_head *heads = calloc(nr ? nr : 1, sizeof *heads);
    uint64_t *soff = malloc((ns + 1) * sizeof *soff);
    uint64_t *lists = malloc((nl ? nl : 1) * sizeof *lists);
    ms_trace_result *results = malloc((nres ? nres : 1) * sizeof *results);
    char *text = malloc(ntx ? ntx : 1);
    size_t rcap = ms_compact_bound(nrec < (1u << 16) ? nrec : (1u << 16)) + 64, rlen = 0;
    unsigned char *rec = malloc(rcap);
    h5_quiet q;
    quiet_on(&q);
    int rc = -1;
    const char *what = "encode the records (out of memory)";
    hid_t ht = head_type(), ct = comm_type();
    hid_t f = -1, g = -1;
    if (!heads || !soff || !lists || !results || !text || !rec) goto out;
    size_t js = 0, al = 0, ares = 0, atx = 0;
    for (size_t i = 0; i < nr; i++) {
        const ms_trace_rank *r = &t->ranks[i];
        ms_trace_v2_head *h = &heads[i];
        h->rank = r->rank;
        h->pid = r->pid;
        h->cosim = r->cosim;
        h->truncated = r->truncated;
        h->missing = r->missing;
        h->start_real_ns = r->start_real_ns;
        memcpy(h->hostname, r->hostname, sizeof h->hostname);
        h->hostname[sizeof h->hostname - 1] = 0;
        h->nev = r->nev;
        h->nlists = r->nlists;
        h->nresults = r->nresults;
        h->ntext = r->ntext;
        h->first_stretch = js;
        h->lists_first = al;
        h->results_first = ares;
        h->text_first = atx;
        for (size_t a = 0; a < r->nev; a += MS_TRACE_STRETCH) {
            size_t n = r->nev - a < MS_TRACE_STRETCH ? r->nev - a : MS_TRACE_STRETCH;
            size_t need = rlen + ms_compact_bound(n);
            if (need > rcap) {
                size_t c = rcap;
                while (c < need) c *= 2;
                unsigned char *p = realloc(rec, c);
                if (!p) goto out;
                rec = p;
                rcap = c;
            }
            soff[js++] = rlen;
            rlen += ms_compact_encode(r->ev + a, n, rec + rlen);
        }
        if (r->nlists) memcpy(lists + al, r->lists, r->nlists * sizeof *lists);
        if (r->nresults) memcpy(results + ares, r->results, r->nresults * sizeof *results);
        if (r->ntext) memcpy(text + atx, r->text, r->ntext);
        al += r->nlists;
        ares += r->nresults;
        atx += r->ntext;
    }
    soff[js] = rlen;
    what = "create the file";
    f = H5Fcreate(file, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) goto out;
    what = "write the job's attributes";
    int32_t nri = t->nranks, stretch = MS_TRACE_STRETCH;
    if (put_str_attr(f, "schema", MS_TRACE_SCHEMA) < 0 || put_str_attr(f, "writer_version", MPISIM_VERSION) < 0 ||
        put_str_attr(f, "mpisim_version", t->mpisim_version) < 0 ||
        put_int_attr(f, "nranks", H5T_NATIVE_INT32, &nri) < 0 ||
        put_int_attr(f, "stretch_records", H5T_NATIVE_INT32, &stretch) < 0 ||
        put_str_attr(f, "config", t->config_json) < 0 || put_str_attr(f, "machine", t->machine) < 0 ||
        put_str_attr(f, "bindings", t->bindings_json) < 0)
        goto out;
    if (t->program && put_str_dataset(f, "program", t->program, (size_t)t->nprogram) < 0) goto out;
    if (t->fn_names && put_str_dataset(f, "fn_names", t->fn_names, t->nfn) < 0) goto out;
    what = "write /comms";
    g = H5Gcreate2(f, "comms", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0 || put_dataset(g, "index", ct, t->ncomms, t->comms) < 0 ||
        put_dataset(g, "members", H5T_NATIVE_INT32, t->nmembers, t->members) < 0)
        goto out;
    H5Gclose(g);
    g = -1;
    what = "write the records";
    if (put_dataset(f, "rank_heads", ht, nr, heads) < 0 ||
        put_contiguous(f, "stretches", H5T_STD_U64LE, H5T_NATIVE_UINT64, js + 1, soff) < 0 ||
        put_contiguous(f, "records", H5T_STD_U8LE, H5T_NATIVE_UINT8, rlen, rec) < 0 ||
        put_contiguous(f, "lists", H5T_STD_U64LE, H5T_NATIVE_UINT64, nl, lists) < 0 ||
        put_contiguous(f, "results", H5T_STD_U8LE, H5T_NATIVE_UINT8, nres * sizeof *results, results) < 0 ||
        put_contiguous(f, "text", H5T_STD_I8LE, H5T_NATIVE_CHAR, ntx, text) < 0)
        goto out;
    rc = 0;
out:
    if (g >= 0) H5Gclose(g);
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) {
        rc = -1;
        what = "close (flush) the file";
    }
    H5Tclose(ht);
    H5Tclose(ct);
    quiet_off(&q);
    free(heads); free(soff); free(lists); free(results); free(text); free(rec);
    if (rc < 0) ms_trace_fail(err, errlen, "%s: cannot %s (HDF5 error; disk full or no permission?)", path, what);
    return rc;
}

/* HDF5 1.10 does not recover from a failed write: a file whose close failed (a full disk) stays
 * in its tables, and its shutdown at exit then loops ("infinite loop closing library") or
 * crashes. So the file is written by a child process, which leaves by _exit whatever happened,
 * into a temporary name beside `path` (ms_outfile: never through a link) that becomes `path` only
 * when the child succeeded; on failure nothing is left. */
static int write_h5_child(const ms_trace *t, const char *path, int schema, char *err, size_t errlen)
{
    if (ms_trace_validate(t, path, err, errlen) < 0) return -1;
    ms_outfile out;
    char tmp[PATH_MAX + 512];
    if (ms_outfile_reserve(&out, path, "the trace", tmp, sizeof tmp, err, errlen) < 0) return -1;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        ms_outfile_discard(&out);
        return ms_trace_fail(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        ms_outfile_discard(&out);
        return ms_trace_fail(err, errlen, "%s: cannot fork the writer: %s", path, strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        signal(SIGPIPE, SIG_IGN);
        char cerr[1024] = "";
        int rc = schema == 1 ? write_h5_v1_file(t, tmp, path, cerr, sizeof cerr)
                             : write_h5_v2_file(t, tmp, path, cerr, sizeof cerr);
        if (rc < 0) {
            ssize_t w = write(fds[1], cerr, strlen(cerr));
            (void)w;
        }
        _exit(rc < 0 ? 1 : 0);   /* no exit handlers: HDF5's shutdown is what fails */
    }
    close(fds[1]);
    char msg[1024];
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fds[0], msg + n, sizeof msg - 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        n += (size_t)k;
        if (n == sizeof msg - 1) break;
    }
    msg[n] = 0;
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return ms_outfile_commit(&out, err, errlen);
    ms_outfile_discard(&out);
    if (n) return ms_trace_fail(err, errlen, "%s", msg);
    return ms_trace_fail(err, errlen, "%s: the HDF5 writer %s %d", path,
                         WIFSIGNALED(st) ? "was killed by signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

int ms_trace_write_h5(const ms_trace *t, const char *path, char *err, size_t errlen)
{
    return write_h5_child(t, path, 2, err, errlen);
}

int ms_trace_write_h5_v1(const ms_trace *t, const char *path, char *err, size_t errlen)
{
    return write_h5_child(t, path, 1, err, errlen);
}

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
            hid_t st = str_type();
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
static ms_trace *read_meta(const char *path, hid_t ct, hid_t *fp, int *version, char *what, size_t wlen)
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
static int read_v2_layout(const char *path, hid_t f, int nranks, ms_trace_v2 *v, char *what, size_t wlen)
{
    memset(v, 0, sizeof *v);
    int32_t stretch = 0;
    if (get_int_attr(f, "stretch_records", H5T_NATIVE_INT32, &stretch) < 0 || stretch < 1) {
        snprintf(what, wlen, "attribute stretch_records missing or out of range");
        return -1;
    }
    v->stretch = (uint64_t)stretch;
    hid_t ht = head_type();
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

static void head_to_rank(const ms_trace_v2_head *h, ms_trace_rank *r)
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
static void read_rank_head(hid_t gr, ms_trace_rank *r)
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
    hid_t et = event_type(), rt = result_type(), ct = comm_type();
    hid_t f = -1, g = -1, gr = -1;
    char what[320] = "";
    int version, fd = -1, err_set = 0;
    ms_trace_v2 v2;
    memset(&v2, 0, sizeof v2);
    ms_trace *t = read_meta(path, ct, &f, &version, what, sizeof what);
    if (!t) goto fail;
    int nr = t->nranks;
    if (each && each(user, t, -1) < 0) {
        snprintf(what, sizeof what, "cannot pass its metadata on");
        goto fail;
    }
    if (version == 2) {   /* the heads and layout from HDF5, the records by pread */
        if (read_v2_layout(path, f, nr, &v2, what, sizeof what) < 0) goto fail;
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            snprintf(what, sizeof what, "cannot open it again");
            goto fail;
        }
        for (int i = 0; i < nr; i++) {
            head_to_rank(&v2.heads[i], &t->ranks[i]);
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
        read_rank_head(gr, r);
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

/* ---- reading stretches of records (the guarded stream's child) ------------------------------ */

/* A rank's group and datasets, kept open for its next stretch: HDF5's chunk cache of an open
 * dataset then spares inflating the same chunk again (a side array's chunk holds the lists of
 * many stretches of records). */
typedef struct open_rank {
    int rank;                     /* -1: free */
    hid_t gr, d[4];               /* events, lists, results, text */
    size_t dims[4];
    unsigned long used;
} open_rank;
#define OPEN_RANKS 8

struct ms_trace_h5 {
    char *path;
    int v2;                       /* schema 2: v (its records read with pread from fd), no /ranks */
    ms_trace_v2 v;
    int fd;
    unsigned char *scratch;
    size_t scap;
    hid_t f, g, et, rt, ct;
    open_rank open[OPEN_RANKS];
    unsigned long clock;
    h5_quiet q;
};

static const char *const rank_datasets[4] = {"events", "lists", "results", "text"};

static void close_rank(open_rank *o)
{
    for (int k = 0; k < 4; k++)
        if (o->d[k] >= 0) H5Dclose(o->d[k]);
    if (o->gr >= 0) H5Gclose(o->gr);
    o->gr = o->d[0] = o->d[1] = o->d[2] = o->d[3] = -1;
    o->rank = -1;
}

/* Rank i's group and datasets, opened in place of the least recently used. */
static open_rank *open_rank_of(ms_trace_h5 *h, int i, char *what, size_t wlen)
{
    open_rank *o = &h->open[0];
    for (int s = 0; s < OPEN_RANKS; s++) {
        if (h->open[s].rank == i) {
            h->open[s].used = ++h->clock;
            return &h->open[s];
        }
        if (h->open[s].used < o->used) o = &h->open[s];
    }
    close_rank(o);
    char name[32];
    snprintf(name, sizeof name, "%d", i);
    o->gr = H5Gopen2(h->g, name, H5P_DEFAULT);
    if (o->gr < 0) {
        snprintf(what, wlen, "no group /ranks/%d", i);
        return NULL;
    }
    for (int k = 0; k < 4; k++) {
        o->d[k] = H5Dopen2(o->gr, rank_datasets[k], H5P_DEFAULT);
        hid_t sp = o->d[k] >= 0 ? H5Dget_space(o->d[k]) : -1;
        hsize_t dims[1];
        int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, dims, NULL) == 1 &&
                 dims[0] <= ((hsize_t)1 << 34);
        if (sp >= 0) H5Sclose(sp);
        if (!ok) {
            snprintf(what, wlen, "cannot read /ranks/%d/%s (truncated or damaged file?)", i, rank_datasets[k]);
            close_rank(o);
            return NULL;
        }
        o->dims[k] = (size_t)dims[0];
    }
    o->rank = i;
    o->used = ++h->clock;
    return o;
}

ms_trace_h5 *ms_trace_h5_open(const char *path, ms_trace **out, char *err, size_t errlen)
{
    *out = NULL;
    ms_trace_h5 *h = calloc(1, sizeof *h);
    char what[320] = "";
    if (!h || !(h->path = strdup(path))) {
        free(h);
        ms_trace_fail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    quiet_on(&h->q);
    h->et = event_type();
    h->rt = result_type();
    h->ct = comm_type();
    h->g = -1;
    h->fd = -1;
    for (int k = 0; k < OPEN_RANKS; k++) {
        h->open[k].gr = h->open[k].d[0] = h->open[k].d[1] = h->open[k].d[2] = h->open[k].d[3] = -1;
        h->open[k].rank = -1;
    }
    int version = 0;
    ms_trace *t = read_meta(path, h->ct, &h->f, &version, what, sizeof what);
    int ok = t != NULL;
    if (ok && version == 2) {
        h->v2 = 1;
        ok = read_v2_layout(path, h->f, t->nranks, &h->v, what, sizeof what) == 0;
        if (ok && (h->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            snprintf(what, sizeof what, "cannot open it again");
            ok = 0;
        }
    } else if (ok && (h->g = H5Gopen2(h->f, "ranks", H5P_DEFAULT)) < 0) {
        snprintf(what, sizeof what, "no group /ranks");
        ok = 0;
    }
    if (!ok) {
        ms_trace_fail(err, errlen, "%s: %s", path, what);
        ms_trace_free(t);
        ms_trace_h5_close(h);
        return NULL;
    }
    *out = t;
    return h;
}

static int read_slab(hid_t d, hid_t type, size_t from, size_t n, void *buf)
{
    if (!n) return 0;
    hsize_t start[1] = {from}, count[1] = {n};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, count, NULL);
    int rc = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
                     H5Dread(d, type, ms, fs, H5P_DEFAULT, buf) >= 0
                 ? 0
                 : -1;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

const ms_trace_v2 *ms_trace_h5_v2(const ms_trace_h5 *h) { return h->v2 ? &h->v : NULL; }

int ms_trace_h5_head(ms_trace_h5 *h, ms_trace *t, int i, ms_trace_rank_size *sz, int *text_last, char *err,
                     size_t errlen)
{
    char what[160] = "";
    if (h->v2) {
        const ms_trace_v2_head *hd = &h->v.heads[i];
        head_to_rank(hd, &t->ranks[i]);
        memset(sz, 0, sizeof *sz);
        sz->nev = (size_t)hd->nev;
        sz->nlists = (size_t)hd->nlists;
        sz->nresults = (size_t)hd->nresults;
        sz->ntext = (size_t)hd->ntext;
        sz->chunk = (size_t)h->v.stretch;
        *text_last = ms_trace_v2_text_terminated(h->fd, &h->v, i) ? 0 : 1;
        return 0;
    }
    open_rank *o = open_rank_of(h, i, what, sizeof what);
    if (!o) return ms_trace_fail(err, errlen, "%s: %s", h->path, what);
    read_rank_head(o->gr, &t->ranks[i]);
    memset(sz, 0, sizeof *sz);
    sz->nev = o->dims[0];
    sz->nlists = o->dims[1];
    sz->nresults = o->dims[2];
    sz->ntext = o->dims[3];
    hsize_t chunk[1] = {0};
    hid_t pl = H5Dget_create_plist(o->d[0]);
    if (pl >= 0 && H5Pget_layout(pl) == H5D_CHUNKED && H5Pget_chunk(pl, 1, chunk) == 1) sz->chunk = (size_t)chunk[0];
    if (pl >= 0) H5Pclose(pl);
    char last = 0;
    if (sz->ntext && read_slab(o->d[3], H5T_NATIVE_CHAR, sz->ntext - 1, 1, &last) < 0)
        return ms_trace_fail(err, errlen, "%s: cannot read /ranks/%d/text (truncated or damaged file?)", h->path, i);
    *text_last = last;
    return 0;
}

/* [lo, hi) of a side array that the records' (list_off, list_n) point into, within n */
static void hull(size_t *lo, size_t *hi, int64_t off, int64_t len, size_t n)
{
    if (off < 0 || len < 0 || (uint64_t)off >= n) return;   /* out of range: validation says so */
    uint64_t end = (uint64_t)off + (uint64_t)len;
    if (end > n) end = n;
    if ((size_t)off < *lo) *lo = (size_t)off;
    if ((size_t)end > *hi) *hi = (size_t)end;
}

static void *room(ms_trace_window *w, int k, size_t n, size_t elem)
{
    return ms_trace_window_room(w, k, n + 1, elem);
}

int ms_trace_h5_range(ms_trace_h5 *h, int i, size_t from, size_t to, ms_trace_window *w, char *err, size_t errlen)
{
    char what[160] = "";
    if (h->v2) return ms_trace_v2_window(h->fd, &h->v, i, from, to, w, &h->scratch, &h->scap, h->path, err, errlen);
    open_rank *o = open_rank_of(h, i, what, sizeof what);
    if (!o) return ms_trace_fail(err, errlen, "%s: %s", h->path, what);
    const size_t *dims = o->dims;
    if (from > to || to > dims[0])
        return ms_trace_fail(err, errlen, "%s: records [%zu, %zu) of rank %d asked for, it has %zu", h->path, from, to,
                             i, dims[0]);
    size_t n = to - from;
    ms_trace_event *ev = room(w, 0, n, sizeof *ev);
    if (!ev) return ms_trace_fail(err, errlen, "%s: out of memory", h->path);
    if (read_slab(o->d[0], h->et, from, n, ev) < 0)
        return ms_trace_fail(err, errlen,
                             "%s: cannot read records [%zu, %zu) of rank %d in /ranks/%d/events (truncated or damaged "
                             "file?)",
                             h->path, from, to, i, i);
    size_t lo[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX}, hi[3] = {0, 0, 0};
    for (size_t k = 0; k < n; k++) {
        const ms_trace_event *e = &ev[k];
        switch (e->kind) {
        case MS_TRACE_WAIT: case MS_TRACE_ICOLL: hull(&lo[0], &hi[0], e->list_off, e->list_n, dims[1]); break;
        case MS_TRACE_RESUME: hull(&lo[1], &hi[1], e->list_off, e->list_n, dims[2]); break;
        case MS_TRACE_UNMODELLED: case MS_TRACE_CALLSITE: case MS_TRACE_SITE:   /* with its terminating NUL */
            hull(&lo[2], &hi[2], e->list_off, (int64_t)e->list_n + 1, dims[3]);
            break;
        default: break;
        }
    }
    size_t elem[3] = {sizeof(uint64_t), sizeof(ms_trace_result), 1};
    hid_t type[3] = {H5T_NATIVE_UINT64, h->rt, H5T_NATIVE_CHAR};
    for (int a = 0; a < 3; a++) {
        if (lo[a] >= hi[a]) lo[a] = hi[a] = 0;
        void *p = room(w, a + 1, hi[a] - lo[a], elem[a]);
        if (!p) return ms_trace_fail(err, errlen, "%s: out of memory", h->path);
        if (read_slab(o->d[a + 1], type[a], lo[a], hi[a] - lo[a], p) < 0)
            return ms_trace_fail(err, errlen,
                                 "%s: cannot read [%zu, %zu) of /ranks/%d/%s for records [%zu, %zu) (truncated or "
                                 "damaged file?)",
                                 h->path, lo[a], hi[a], i, rank_datasets[a + 1], from, to);
    }
    w->from = from;
    w->n = n;
    w->ev = ev;
    w->lists_from = lo[0];
    w->nlists = hi[0] - lo[0];
    w->lists = w->buf[1];
    w->results_from = lo[1];
    w->nresults = hi[1] - lo[1];
    w->results = w->buf[2];
    w->text_from = lo[2];
    w->ntext = hi[2] - lo[2];
    ((char *)w->buf[3])[w->ntext] = 0;
    w->text = w->buf[3];
    return 0;
}

void ms_trace_h5_close(ms_trace_h5 *h)
{
    if (!h) return;
    ms_trace_v2_free(&h->v);
    if (h->fd >= 0) close(h->fd);
    free(h->scratch);
    for (int k = 0; k < OPEN_RANKS; k++) close_rank(&h->open[k]);
    if (h->g >= 0) H5Gclose(h->g);
    if (h->f >= 0) H5Fclose(h->f);
    H5Tclose(h->et);
    H5Tclose(h->rt);
    H5Tclose(h->ct);
    quiet_off(&h->q);
    free(h->path);
    free(h);
}

ms_trace *ms_trace_read_h5_direct(const char *path, char *err, size_t errlen)
{
    return ms_trace_read_h5_each(path, NULL, NULL, err, errlen);
}

/* ---- conversion ----------------------------------------------------------------------------- */

static void list_add(char *list, size_t len, int *n, int rank)
{
    size_t off = strlen(list);
    if (off + 16 < len) snprintf(list + off, len - off, "%s%d", *n ? ", " : "", rank);
    else if (off + 5 < len && !strstr(list, "...")) snprintf(list + off, len - off, ", ...");
    (*n)++;
}

void ms_trace_ends_of(const ms_trace *t, ms_trace_ends *e)
{
    memset(e, 0, sizeof *e);
    e->nranks = t->nranks;
    e->died = e->error_rank = -1;
    int64_t died_at = INT64_MAX;
    for (int i = 0; i < t->nranks; i++) {
        const ms_trace_rank *r = &t->ranks[i];
        if (r->missing) {
            list_add(e->missing_list, sizeof e->missing_list, &e->missing, i);
            continue;
        }
        if (r->truncated) list_add(e->cut_list, sizeof e->cut_list, &e->cut, i);
        int fin = 0, stop = 0, error = 0;
        int64_t last = INT64_MIN;
        for (size_t k = 0; k < r->nev; k++) {
            const ms_trace_event *ev = &r->ev[k];
            if (ev->kind == MS_TRACE_FINALIZE) fin = 1;
            if (ev->real_entry_ns > last) last = ev->real_entry_ns;
            if (ev->real_exit_ns > last) last = ev->real_exit_ns;
            if (ev->kind != MS_TRACE_UNMODELLED || ev->list_off < 0 || (size_t)ev->list_off >= r->ntext) continue;
            const char *text = r->text + ev->list_off;
            if (!strncmp(text, "STOP ", 5)) {
                if (!stop && !e->stop[0]) snprintf(e->stop, sizeof e->stop, "rank %d: %.250s", i, text + 5);
                stop = 1;
            } else if (!strncmp(text, "FATAL ", 6) || !strncmp(text, "ABORT ", 6)) {
                if (e->error_rank < 0) {
                    e->error_rank = i;
                    snprintf(e->error, sizeof e->error, "%.290s", text + 6);
                }
                error = 1;
            }
        }
        if (fin) {
            e->finalized++;
            continue;
        }
        list_add(e->unfinished_list, sizeof e->unfinished_list, &e->unfinished, i);
        if (stop) e->stopped++;
        else if (!error && last < died_at) {
            died_at = last;
            e->died = i;
        }
    }
}

int ms_trace_convert(const char *raw_dir, const char *h5_path, char *err, size_t errlen)
{
    int dfd = open(raw_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return ms_trace_fail(err, errlen, "%s: %s", raw_dir, strerror(errno));
    int rc = ms_trace_convert_at(dfd, raw_dir, h5_path, NULL, err, errlen);
    close(dfd);
    return rc;
}

int ms_trace_convert_at(int dfd, const char *raw_dir, const char *h5_path, ms_trace_ends *ends, char *err,
                        size_t errlen)
{
    ms_trace *t = ms_trace_read_dirfd(dfd, raw_dir, err, errlen);
    if (!t) return -1;
#ifdef MS_TRACE_HAVE_FN_NAMES
    if (ms_trace_set_fn_names(t, ms_fn_name_table, MS_FN_NAME_COUNT) < 0) {
        ms_trace_free(t);
        return ms_trace_fail(err, errlen, "out of memory");
    }
#endif
    int rc = ms_trace_write_h5(t, h5_path, err, errlen) < 0 ? -2 : 0;
    ms_trace_ends e;
    ms_trace_ends_of(t, &e);
    if (ends) *ends = e;
    if (rc == 0 && (e.missing || e.cut)) {
        size_t off = 0;
        if (e.missing)
            off += (size_t)snprintf(err + off, errlen - off, "%d of %d ranks left no records (raw file missing or empty): %s",
                                    e.missing, t->nranks, e.missing_list);
        if (e.cut && off < errlen)
            snprintf(err + off, errlen - off, "%s%d of %d ranks' files were cut (their last record is partial: "
                     "killed while writing, or a full disk): %s", off ? "; " : "", e.cut, t->nranks, e.cut_list);
        rc = 1;
    }
    ms_trace_free(t);
    return rc;
}
