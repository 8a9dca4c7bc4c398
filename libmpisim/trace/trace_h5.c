/* The HDF5 form of a trace: its types, the writer and the raw -> HDF5 conversion (the reader:
 * trace_h5_read.c, trace_h5_stretch.c). Schema: replay/README.md. */
#define _GNU_SOURCE
#include "ms_trace.h"
#include "trace_h5_internal.h"
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

#include "ms_fn_names_gen.h"

#ifndef MPISIM_VERSION
#define MPISIM_VERSION "unknown"
#endif

/* ---- types ---------------------------------------------------------------------------------- */

hid_t th5_event_type(void)
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

hid_t th5_result_type(void)
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

hid_t th5_comm_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(ms_trace_comm));
    H5Tinsert(t, "id", HOFFSET(ms_trace_comm, id), H5T_NATIVE_UINT64);
    H5Tinsert(t, "size", HOFFSET(ms_trace_comm, size), H5T_NATIVE_INT32);
    H5Tinsert(t, "offset", HOFFSET(ms_trace_comm, offset), H5T_NATIVE_INT64);
    return t;
}

hid_t th5_str_type(void)
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
    hid_t st = th5_str_type();
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
    hid_t st = th5_str_type();
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
    hid_t et = th5_event_type(), rt = th5_result_type(), ct = th5_comm_type();
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

hid_t th5_head_type(void)
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
    hid_t ht = th5_head_type(), ct = th5_comm_type();
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
    if (ms_trace_set_fn_names(t, ms_fn_names, MS_FN_NAME_COUNT) < 0) {
        ms_trace_free(t);
        return ms_trace_fail(err, errlen, "out of memory");
    }
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
