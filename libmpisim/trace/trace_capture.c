/* A capture directory read into a trace (its meta file and its ranks' raw files), communicators,
 * function names, and freeing a trace. */
#define _GNU_SOURCE
#include "ms_trace.h"
#include "ms_trace_internal.h"
#include "trace_raw.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

/* ---- a capture directory -------------------------------------------------------------------- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* meta.json is small (the configuration and the program's arguments): a bound against a file
 * that is not one */
#define META_MAX ((size_t)64 << 20)

static int read_meta(int dfd, const char *dir, ms_trace *t, int *nranks, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    struct stat st;
    if (fstatat(dfd, "meta.json", &st, 0) != 0) return 0; /* absent: nothing known */
    char *text;
    size_t len;
    if (ms_trace_read_file_at(dfd, "meta.json", path, META_MAX, &text, &len, err, errlen) < 0) return -1;
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) {
        free(text);
        return ms_trace_fail(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    }
    int rc = -1;
    if (!json_is_object(j)) {
        ms_trace_fail(err, errlen, "%s: not a JSON object", path);
        goto out;
    }
    const json_t *v;
    if ((v = json_object_get(j, "nranks")) && json_is_number(v)) {
        if (json_number_value(v) < 1 || json_number_value(v) > 1e7) {
            ms_trace_fail(err, errlen, "%s: nranks %g is out of range", path, json_number_value(v));
            goto out;
        }
        *nranks = (int)json_number_value(v);
    }
    if ((v = json_object_get(j, "program")) && json_is_array(v)) {
        t->program = calloc(json_array_size(v) + 1, sizeof *t->program);
        if (!t->program) goto oom;
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *a = json_array_get(v, i);
            t->program[i] = json_is_string(a) ? dup_str(json_string_value(a)) : json_dumps(a, JSON_ENCODE_ANY);
            if (!t->program[i]) goto oom;
            t->nprogram++;
        }
    }
    /* kept as JSON text (the trace stores it so): one line, keys in the file's order */
    if ((v = json_object_get(j, "config")) && json_is_object(v))
        if (!(t->config_json = json_dumps(v, 0))) goto oom;
    if ((v = json_object_get(j, "machine")) && !json_is_null(v))
        if (!(t->machine = json_is_string(v) ? dup_str(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY)))
            goto oom;
    if ((v = json_object_get(j, "bindings")) && !json_is_null(v))
        if (!(t->bindings_json = json_dumps(v, JSON_ENCODE_ANY))) goto oom;
    if ((v = json_object_get(j, "mpisim_version")) && json_is_string(v))
        if (!(t->mpisim_version = dup_str(json_string_value(v)))) goto oom;
    rc = 0;
    goto out;
oom:
    ms_trace_fail(err, errlen, "%s: out of memory", path);
out:
    json_decref(j);
    free(text);
    return rc;
}

/* The shim names them rank-%06d.mstrace; rank-<R>.mstrace is accepted too. -1 if neither exists
 * (path then holds the shim's form). */
static int rank_path(int dfd, int rank, char *name, size_t len, struct stat *st)
{
    snprintf(name, len, "rank-%d.mstrace", rank);
    if (fstatat(dfd, name, st, 0) == 0) return 0;
    snprintf(name, len, "rank-%06d.mstrace", rank);
    return fstatat(dfd, name, st, 0) == 0 ? 0 : -1;
}

/* The job size from the header of any rank file in dir (when meta.json is absent); 0 if none. */
/* A directory stream of dfd (its own descriptor: closedir closes that one). */
static DIR *open_dir_at(int dfd)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) close(fd);
    return d;
}

static int32_t size_from_any_rank(int dfd, const char *dir, int32_t **members, size_t *nmembers, char *err,
                                  size_t errlen)
{
    DIR *d = open_dir_at(dfd);
    if (!d) return 0;
    struct dirent *e;
    int32_t n = 0;
    char path[4096];
    while (!n && (e = readdir(d))) {
        int r;
        char tail[16];
        if (sscanf(e->d_name, "rank-%d.%15s", &r, tail) != 2 || strcmp(tail, "mstrace")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ms_trace_rank rr;
        if (ms_trace_read_raw_at(dfd, e->d_name, path, &rr, &n, members, nmembers, err, errlen) == 0) ms_trace_rank_free(&rr);
        else n = 0;
        *nmembers = 0;
    }
    closedir(d);
    return n;
}

/* How many non-empty rank-<R>.mstrace files dir holds (nothing read). */
static long count_rank_files(int dfd)
{
    DIR *d = open_dir_at(dfd);
    if (!d) return 0;
    struct dirent *e;
    long n = 0;
    while ((e = readdir(d))) {
        int r;
        char tail[16];
        struct stat st;
        if (sscanf(e->d_name, "rank-%d.%15s", &r, tail) == 2 && !strcmp(tail, "mstrace") &&
            fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_size > 0)
            n++;
    }
    closedir(d);
    return n;
}

int ms_trace_missing_ranks(const ms_trace *t, char *buf, size_t len)
{
    int n = 0;
    size_t off = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < t->nranks; i++)
        if (t->ranks[i].missing) {
            if (off < len) off += (size_t)snprintf(buf + off, len - off, "%s%d", n ? ", " : "", i);
            n++;
        }
    return n;
}

ms_trace *ms_trace_read_dir(const char *dir, char *err, size_t errlen)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        ms_trace_fail(err, errlen, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    ms_trace *t = ms_trace_read_dirfd(dfd, dir, err, errlen);
    close(dfd);
    return t;
}

ms_trace *ms_trace_read_dirfd(int dfd, const char *dir, char *err, size_t errlen)
{
    ms_trace *t = calloc(1, sizeof *t);
    if (!t) {
        ms_trace_fail(err, errlen, "out of memory");
        return NULL;
    }
    int nranks = 0;
    int32_t *members = NULL;
    size_t nmembers = 0;
    char path[4096];
    if (read_meta(dfd, dir, t, &nranks, err, errlen) < 0) goto fail;
    if (nranks < 0) goto fail;   /* read_meta keeps it in 1..1e7 */
    if (nranks > 0 && count_rank_files(dfd) == 0) {
        /* checked before the claim costs a slot and a stat per claimed rank (up to 1e7) */
        ms_trace_fail(err, errlen, "%s: none of the %d ranks left records (every rank-<R>.mstrace missing or empty)",
                      dir, nranks);
        goto fail;
    }
    if (nranks == 0) {
        /* no meta.json: the job size comes from a rank file's header */
        nranks = size_from_any_rank(dfd, dir, &members, &nmembers, err, errlen);
        if (nranks <= 0) {
            ms_trace_fail(err, errlen, "%s: no readable rank-<R>.mstrace and no meta.json (not a trace directory?)",
                          dir);
            goto fail;
        }
    }
    t->nranks = nranks;
    t->ranks = calloc((size_t)nranks, sizeof *t->ranks);
    if (!t->ranks) {
        ms_trace_fail(err, errlen, "out of memory");
        goto fail;
    }
    int present = 0;
    for (int i = 0; i < nranks; i++) {
        struct stat st;
        char name[64];
        if (rank_path(dfd, i, name, sizeof name, &st) < 0 || st.st_size == 0) {
            /* the rank died before writing (or before creating its file): no records */
            t->ranks[i].rank = i;
            t->ranks[i].missing = 1;
            continue;
        }
        present++;
        int32_t n = 0;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (ms_trace_read_raw_at(dfd, name, path, &t->ranks[i], &n, &members, &nmembers, err, errlen) < 0) goto fail;
        if (n != nranks || t->ranks[i].rank != i) {
            ms_trace_fail(err, errlen, "%s: offset 16: the header says rank %d of %d, expected rank %d of %d", path,
                          t->ranks[i].rank, n, i, nranks);
            goto fail;
        }
    }
    if (!present) {
        ms_trace_fail(err, errlen, "%s: none of the %d ranks left records (every rank-<R>.mstrace missing or empty)",
                      dir, nranks);
        goto fail;
    }
    if (ms_trace_build_comms(t, members, nmembers, err, errlen) < 0) goto fail;
    free(members);
    return t;
fail:
    free(members);
    ms_trace_free(t);
    return NULL;
}

/* COMM_ADD events point into the raw member array; gather distinct communicators into
 * t->comms/t->members and point the events at them. */
int ms_trace_build_comms(ms_trace *t, const int32_t *members, size_t nmembers, char *err, size_t errlen)
{
    size_t cap_c = 0, cap_m = 0;
    for (int i = 0; i < t->nranks; i++) {
        ms_trace_rank *r = &t->ranks[i];
        for (size_t k = 0; k < r->nev; k++) {
            ms_trace_event *e = &r->ev[k];
            if (e->kind != MS_MSG_COMM_ADD) continue;
            if (e->list_off < 0 || (size_t)e->list_off + (size_t)e->list_n > nmembers)
                return ms_trace_fail(err, errlen, "rank %d: communicator record out of range", i);
            const int32_t *mem = members + e->list_off;
            size_t c;
            for (c = 0; c < t->ncomms; c++)
                if (t->comms[c].id == e->comm) break;
            if (c < t->ncomms) {
                if (t->comms[c].size != e->list_n ||
                    memcmp(t->members + t->comms[c].offset, mem, sizeof *mem * (size_t)e->list_n))
                    return ms_trace_fail(err, errlen,
                                         "rank %d: communicator %#llx registered with other members than before", i,
                                         (unsigned long long)e->comm);
            } else {
                if (ms_trace_grow((void **)&t->comms, &cap_c, t->ncomms + 1, sizeof *t->comms) < 0 ||
                    ms_trace_grow((void **)&t->members, &cap_m, t->nmembers + (size_t)e->list_n, 4) < 0)
                    return ms_trace_fail(err, errlen, "out of memory");
                ms_trace_comm *cm = &t->comms[t->ncomms++];
                cm->id = e->comm;
                cm->size = e->list_n;
                cm->pad = 0;
                cm->offset = (int64_t)t->nmembers;
                memcpy(t->members + t->nmembers, mem, sizeof *mem * (size_t)e->list_n);
                t->nmembers += (size_t)e->list_n;
            }
            e->list_off = (int64_t)c;
            e->list_n = 1;
        }
    }
    return 0;
}

void ms_trace_free(ms_trace *t)
{
    if (!t) return;
    for (int i = 0; t->ranks && i < t->nranks; i++) ms_trace_rank_free(&t->ranks[i]);
    free(t->ranks);
    free(t->comms);
    free(t->members);
    for (int i = 0; t->program && i < t->nprogram; i++) free(t->program[i]);
    free(t->program);
    free(t->config_json);
    free(t->machine);
    free(t->bindings_json);
    free(t->mpisim_version);
    for (size_t i = 0; t->fn_names && i < t->nfn; i++) free(t->fn_names[i]);
    free(t->fn_names);
    free(t);
}

const char *ms_trace_fn_name(const ms_trace *t, int fn)
{
    if (!t || fn < 0 || (size_t)fn >= t->nfn || !t->fn_names[fn]) return "?";
    return t->fn_names[fn];
}

int ms_trace_set_fn_names(ms_trace *t, const char *const *names, size_t n)
{
    for (size_t i = 0; t->fn_names && i < t->nfn; i++) free(t->fn_names[i]);
    free(t->fn_names);
    t->nfn = 0;
    t->fn_names = calloc(n ? n : 1, sizeof *t->fn_names);
    if (!t->fn_names) return -1;
    for (size_t i = 0; i < n; i++)
        if (!(t->fn_names[i] = dup_str(names[i] ? names[i] : "?"))) return -1;
    t->nfn = n;
    return 0;
}
