#define _GNU_SOURCE
#include "synth_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ms_model.h"
#include "protocol.h"
#include "trace_raw.h"

typedef struct srank {
    size_t cap_ev, cap_lists, cap_results, cap_text;
    uint64_t next_req;
} srank;

struct synth {
    ms_trace *t;
    srank *r;
    size_t cap_comms, cap_members;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t nc = *cap ? *cap * 2 : 256;
    while (nc < need) nc *= 2;
    p = realloc(p, nc * elem);
    if (!p) abort();
    *cap = nc;
    return p;
}

static const char *const names[SY_NFN] = {"MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall",
                                          "MPI_Barrier", "MPI_Finalize", "MPI_Wait", "MPI_Probe",
                                          "MPI_Comm_split", "MPI_Allreduce", "MPI_Bcast"};

synth *synth_new(int nranks)
{
    synth *s = calloc(1, sizeof *s);
    s->t = calloc(1, sizeof *s->t);
    s->t->nranks = nranks;
    s->t->ranks = calloc((size_t)nranks, sizeof *s->t->ranks);
    s->r = calloc((size_t)nranks, sizeof *s->r);
    for (int i = 0; i < nranks; i++) {
        s->t->ranks[i].rank = i;
        s->t->ranks[i].pid = 1000 + i;
        snprintf(s->t->ranks[i].hostname, sizeof s->t->ranks[i].hostname, "synth");
    }
    ms_trace_set_fn_names(s->t, names, SY_NFN);
    s->t->program = calloc(2, sizeof(char *));
    s->t->program[0] = strdup("synthetic");
    s->t->nprogram = 1;
    s->t->mpisim_version = strdup("synthetic");
    return s;
}

ms_trace *synth_finish(synth *s)
{
    ms_trace *t = s->t;
    ms_trace_derive_matches(t);
    free(s->r);
    free(s);
    return t;
}

static ms_trace_event *ev(synth *s, int rank, int kind, int fn)
{
    ms_trace_rank *r = &s->t->ranks[rank];
    r->ev = grow(r->ev, &s->r[rank].cap_ev, r->nev + 1, sizeof *r->ev);
    ms_trace_event *e = &r->ev[r->nev++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->fn = fn;
    e->matched_source = MS_TRACE_UNKNOWN;
    e->matched_tag = MS_TRACE_UNKNOWN;
    e->complete_ps = MS_TRACE_UNKNOWN_TIME;
    return e;
}

void synth_call(synth *s, int rank, int fn, int64_t compute_ps)
{
    ms_trace_event *e = ev(s, rank, MS_MSG_TR_CALL, fn);
    e->compute_ps = compute_ps;
    e->raw_compute_ns = compute_ps / 1000;
}

void synth_exit(synth *s, int rank, int fn) { ev(s, rank, MS_MSG_TR_EXIT, fn); }

static uint64_t p2p(synth *s, int rank, int kind, int fn, int peer, int tag, uint64_t bytes, uint64_t comm)
{
    ms_trace_event *e = ev(s, rank, kind, fn);
    e->req = ++s->r[rank].next_req;
    e->peer = peer;
    e->tag = tag;
    e->bytes = bytes;
    e->comm = comm;
    return e->req;
}

uint64_t synth_isend(synth *s, int rank, int dst, int tag, uint64_t bytes, uint64_t comm)
{
    return p2p(s, rank, MS_MSG_ISEND, SY_ISEND, dst, tag, bytes, comm);
}

uint64_t synth_irecv(synth *s, int rank, int src, int tag, uint64_t bytes, uint64_t comm)
{
    return p2p(s, rank, MS_MSG_IRECV, SY_IRECV, src, tag, bytes, comm);
}

void synth_post_details(synth *s, int rank, uint64_t buf, int flags)
{
    ms_trace_rank *r = &s->t->ranks[rank];
    for (size_t k = r->nev; k-- > 0;)
        if (r->ev[k].kind == MS_MSG_ISEND || r->ev[k].kind == MS_MSG_IRECV) {
            r->ev[k].callsite = buf;
            if (r->ev[k].kind == MS_MSG_IRECV) r->ev[k].flags = flags;
            return;
        }
}

uint64_t synth_icoll(synth *s, int rank, int kind, int root, uint64_t bytes, uint64_t comm)
{
    ms_trace_event *e = ev(s, rank, MS_MSG_ICOLL, SY_BARRIER);
    e->req = ++s->r[rank].next_req;
    e->mode = kind;
    e->peer = root;
    e->bytes = bytes;
    e->comm = comm;
    e->list_off = (int64_t)s->t->ranks[rank].nlists;
    return e->req;
}

uint64_t synth_rma(synth *s, int rank, int kind, int target, uint64_t bytes, uint64_t result_bytes, uint64_t comm)
{
    ms_trace_event *e = ev(s, rank, MS_MSG_RMA, SY_BARRIER);
    e->req = ++s->r[rank].next_req;
    e->mode = kind;
    e->peer = target;
    e->bytes = bytes;
    e->callsite = result_bytes;
    e->comm = comm;
    return e->req;
}

void synth_inter(synth *s, int rank, int low)
{
    ms_trace_rank *r = &s->t->ranks[rank];
    for (size_t k = r->nev; k-- > 0;)
        if (r->ev[k].kind == MS_MSG_ICOLL) {
            r->ev[k].flags = low;
            return;
        }
}

uint64_t synth_icollv(synth *s, int rank, int kind, int root, uint64_t bytes, uint64_t comm, int n,
                      const uint64_t *counts)
{
    ms_trace_rank *r = &s->t->ranks[rank];
    uint64_t q = synth_icoll(s, rank, kind, root, bytes, comm);
    r->ev[r->nev - 1].list_n = n;
    r->lists = grow(r->lists, &s->r[rank].cap_lists, r->nlists + (size_t)n, sizeof *r->lists);
    if (n) memcpy(r->lists + r->nlists, counts, sizeof *counts * (size_t)n);
    r->nlists += (size_t)n;
    return q;
}

void synth_cancel(synth *s, int rank, uint64_t req) { ev(s, rank, MS_MSG_CANCEL, SY_WAIT)->req = req; }

void synth_free(synth *s, int rank, uint64_t req) { ev(s, rank, MS_MSG_FREE, SY_WAIT)->req = req; }

void synth_unmodelled(synth *s, int rank, const char *text)
{
    ms_trace_rank *r = &s->t->ranks[rank];
    ms_trace_event *e = ev(s, rank, MS_MSG_UNMODELLED, -1);
    size_t n = strlen(text);
    e->list_off = (int64_t)r->ntext;
    e->list_n = (int32_t)n;
    r->text = grow(r->text, &s->r[rank].cap_text, r->ntext + n + 1, 1);
    memcpy(r->text + r->ntext, text, n + 1);
    r->ntext += n + 1;
}

void synth_wait(synth *s, int rank, int mode, int n, const uint64_t *reqs, int flags)
{
    ms_trace_rank *r = &s->t->ranks[rank];
    ms_trace_event *e = ev(s, rank, MS_MSG_WAIT, SY_WAITALL);
    e->mode = mode;
    e->flags = flags;
    e->list_off = (int64_t)r->nlists;
    e->list_n = n;
    r->lists = grow(r->lists, &s->r[rank].cap_lists, r->nlists + (size_t)n, sizeof *r->lists);
    if (n) memcpy(r->lists + r->nlists, reqs, sizeof *reqs * (size_t)n);
    r->nlists += (size_t)n;
}

void synth_probe(synth *s, int rank, int src, int tag, int blocking, uint64_t comm)
{
    ms_trace_event *e = ev(s, rank, MS_MSG_PROBE, SY_PROBE);
    e->peer = src;
    e->tag = tag;
    e->mode = blocking;
    e->comm = comm;
}

void synth_resume(synth *s, int rank, int64_t t, int n, const ms_trace_result *res)
{
    ms_trace_rank *r = &s->t->ranks[rank];
    ms_trace_event *e = ev(s, rank, MS_MSG_RESUME, -1);
    e->t_ps = t;
    e->mode = n;
    e->list_off = (int64_t)r->nresults;
    e->list_n = n;
    r->results = grow(r->results, &s->r[rank].cap_results, r->nresults + (size_t)n, sizeof *r->results);
    if (n) memcpy(r->results + r->nresults, res, sizeof *res * (size_t)n);
    r->nresults += (size_t)n;
}

void synth_resolve(synth *s, int rank, uint64_t req, int source, int tag, uint64_t bytes)
{
    ms_trace_event *e = ev(s, rank, MS_MSG_RESOLVE, -1);
    e->req = req;
    e->peer = source;
    e->tag = tag;
    e->bytes = bytes;
}

void synth_comm_add(synth *s, int rank, uint64_t comm, int size, const int32_t *members)
{
    ms_trace *t = s->t;
    size_t c;
    for (c = 0; c < t->ncomms; c++)
        if (t->comms[c].id == comm) break;
    if (c == t->ncomms) {
        t->comms = grow(t->comms, &s->cap_comms, t->ncomms + 1, sizeof *t->comms);
        t->members = grow(t->members, &s->cap_members, t->nmembers + (size_t)size, sizeof *t->members);
        t->comms[c].id = comm;
        t->comms[c].size = size;
        t->comms[c].pad = 0;
        t->comms[c].offset = (int64_t)t->nmembers;
        memcpy(t->members + t->nmembers, members, sizeof *members * (size_t)size);
        t->nmembers += (size_t)size;
        t->ncomms++;
    }
    ms_trace_event *e = ev(s, rank, MS_MSG_COMM_ADD, -1);
    e->comm = comm;
    e->peer = size;
    e->list_off = (int64_t)c;
    e->list_n = 1;
}

void synth_finalize(synth *s, int rank)
{
    synth_call(s, rank, SY_FINALIZE, 0);
    ev(s, rank, MS_MSG_FINALIZE, -1);
}

void synth_send(synth *s, int rank, int64_t compute, int dst, int tag, uint64_t bytes)
{
    synth_call(s, rank, SY_SEND, compute);
    uint64_t q = synth_isend(s, rank, dst, tag, bytes, MS_COMM_WORLD);
    synth_wait(s, rank, MS_WAIT_ALL, 1, &q, 0);
    synth_exit(s, rank, SY_SEND);
}

void synth_recv(synth *s, int rank, int64_t compute, int src, int tag, uint64_t bytes)
{
    synth_call(s, rank, SY_RECV, compute);
    uint64_t q = synth_irecv(s, rank, src, tag, bytes, MS_COMM_WORLD);
    synth_wait(s, rank, MS_WAIT_ALL, 1, &q, 0);
    synth_exit(s, rank, SY_RECV);
}

ms_trace *synth_pingpong(int iters, uint64_t bytes, int64_t compute_ps)
{
    synth *s = synth_new(2);
    for (int i = 0; i < iters; i++) {
        synth_send(s, 0, compute_ps, 1, 7, bytes);
        synth_recv(s, 0, 0, 1, 7, bytes);
        synth_recv(s, 1, compute_ps, 0, 7, bytes);
        synth_send(s, 1, 0, 0, 7, bytes);
    }
    synth_finalize(s, 0);
    synth_finalize(s, 1);
    return synth_finish(s);
}

static void barrier(synth *s, int rank)
{
    synth_call(s, rank, SY_BARRIER, 0);
    uint64_t q = synth_icoll(s, rank, MS_COLL_BARRIER, 0, 0, MS_COMM_WORLD);
    synth_wait(s, rank, MS_WAIT_ALL, 1, &q, 0);
    synth_exit(s, rank, SY_BARRIER);
}

ms_trace *synth_stencil(int nranks, int iters, uint64_t bytes, int64_t compute_ps)
{
    int px = (int)floor(sqrt((double)nranks));
    while (nranks % px) px--;
    int py = nranks / px;
    synth *s = synth_new(nranks);
    for (int r = 0; r < nranks; r++) {
        int x = r % px, y = r / px;
        int nb[4] = {y * px + (x + 1) % px, y * px + (x + px - 1) % px, ((y + 1) % py) * px + x,
                     ((y + py - 1) % py) * px + x};
        int opp[4] = {1, 0, 3, 2};
        barrier(s, r);
        for (int it = 0; it < iters; it++) {
            uint64_t q[8];
            for (int d = 0; d < 4; d++) {
                synth_call(s, r, SY_IRECV, d == 0 ? compute_ps : 0);
                q[d] = synth_irecv(s, r, nb[opp[d]], d, bytes, MS_COMM_WORLD);
                synth_exit(s, r, SY_IRECV);
            }
            for (int d = 0; d < 4; d++) {
                synth_call(s, r, SY_ISEND, 0);
                q[4 + d] = synth_isend(s, r, nb[d], d, bytes, MS_COMM_WORLD);
                synth_exit(s, r, SY_ISEND);
            }
            synth_call(s, r, SY_WAITALL, 0);
            synth_wait(s, r, MS_WAIT_ALL, 8, q, 0);
            synth_exit(s, r, SY_WAITALL);
        }
        synth_finalize(s, r);
    }
    return synth_finish(s);
}

ms_trace *synth_fan(int nranks, int reps, uint64_t bytes)
{
    synth *s = synth_new(nranks);
    uint64_t *q = calloc((size_t)nranks, sizeof *q);
    for (int rep = 0; rep < reps; rep++) {
        for (int r = 0; r < nranks; r++) barrier(s, r);
        for (int i = 1; i < nranks; i++) {
            synth_call(s, 0, SY_IRECV, 0);
            q[i - 1] = synth_irecv(s, 0, i, 301, bytes, MS_COMM_WORLD);
            synth_exit(s, 0, SY_IRECV);
        }
        synth_call(s, 0, SY_WAITALL, 0);
        synth_wait(s, 0, MS_WAIT_ALL, nranks - 1, q, 0);
        synth_exit(s, 0, SY_WAITALL);
        for (int i = 1; i < nranks; i++) synth_send(s, i, 1000000, 0, 301, bytes);
        for (int r = 0; r < nranks; r++) barrier(s, r);
        for (int i = 1; i < nranks; i++) {
            synth_call(s, 0, SY_ISEND, 0);
            q[i - 1] = synth_isend(s, 0, i, 302, bytes, MS_COMM_WORLD);
            synth_exit(s, 0, SY_ISEND);
        }
        synth_call(s, 0, SY_WAITALL, 0);
        synth_wait(s, 0, MS_WAIT_ALL, nranks - 1, q, 0);
        synth_exit(s, 0, SY_WAITALL);
        for (int i = 1; i < nranks; i++) synth_recv(s, i, 0, 0, 302, bytes);
    }
    for (int r = 0; r < nranks; r++) synth_finalize(s, r);
    free(q);
    return synth_finish(s);
}

ms_trace *synth_fan_bcast(int nranks, int reps, uint64_t bytes)
{
    synth *s = synth_new(nranks);
    for (int rep = 0; rep < reps; rep++) {
        for (int r = 0; r < nranks; r++) barrier(s, r);
        for (int r = 0; r < nranks; r++) {
            synth_call(s, r, SY_BCAST, 0);
            uint64_t q = synth_icoll(s, r, MS_COLL_BCAST, 0, bytes, MS_COMM_WORLD);
            synth_wait(s, r, MS_WAIT_ALL, 1, &q, 0);
            synth_exit(s, r, SY_BCAST);
        }
    }
    for (int r = 0; r < nranks; r++) synth_finalize(s, r);
    return synth_finish(s);
}

/* ---- raw serialization ---------------------------------------------------------------------- */

typedef struct obuf {
    unsigned char *p;
    size_t len, cap;
} obuf;

static void put(obuf *b, const void *x, size_t n)
{
    b->p = grow(b->p, &b->cap, b->len + n, 1);
    memcpy(b->p + b->len, x, n);
    b->len += n;
}

static void rec(obuf *b, uint32_t type, const void *x, size_t n, const void *y, size_t m)
{
    ms_msg_header h = {type, (uint32_t)(n + m)};
    put(b, &h, sizeof h);
    if (n) put(b, x, n);
    if (m) put(b, y, m);
}

unsigned char *synth_raw_bytes(const ms_trace *t, int rank, size_t *len)
{
    const ms_trace_rank *r = &t->ranks[rank];
    obuf b = {0};
    ms_trace_file_header fh;
    memset(&fh, 0, sizeof fh);
    memcpy(fh.magic, MS_TRACE_MAGIC, 8);
    fh.version = MS_PROTO_VERSION;
    fh.sizes_check = ms_proto_sizes_check();
    fh.rank = rank;
    fh.size = t->nranks;
    fh.pid = r->pid;
    fh.cosim = r->cosim;
    fh.start_real_ns = r->start_real_ns;
    memcpy(fh.hostname, r->hostname, sizeof fh.hostname);
    put(&b, &fh, sizeof fh);
    for (size_t k = 0; k < r->nev; k++) {
        const ms_trace_event *e = &r->ev[k];
        switch (e->kind) {
        case MS_MSG_ISEND: {
            ms_msg_isend m = {e->t_ps, e->req, e->comm, e->bytes, e->peer, e->tag, e->mode, e->fn, e->callsite};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_IRECV: {
            ms_msg_irecv m = {e->t_ps, e->req, e->comm, e->bytes, e->peer, e->tag, e->fn, e->flags, e->callsite};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_ICOLL: {
            ms_msg_icoll m = {e->t_ps, e->req, e->comm, e->bytes, e->mode, e->peer, e->list_n, e->fn, e->flags, 0};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, r->lists + e->list_off, 8u * (size_t)e->list_n);
            break;
        }
        case MS_MSG_RMA: {
            ms_msg_rma m = {e->t_ps, e->req, e->comm, e->bytes, e->callsite, e->peer, e->mode, e->fn, 0};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_COMM_ADD: {
            const ms_trace_comm *c = &t->comms[e->list_off];
            ms_msg_comm_add m = {c->id, c->size, 0};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, t->members + c->offset, 4u * (size_t)c->size);
            break;
        }
        case MS_MSG_WAIT: {
            ms_msg_wait m = {e->t_ps, e->mode, e->list_n, e->fn, e->flags, e->callsite};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, r->lists + e->list_off, 8u * (size_t)e->list_n);
            break;
        }
        case MS_MSG_PROBE: {
            ms_msg_probe m = {e->t_ps, e->comm, e->peer, e->tag, e->mode, e->fn, e->callsite};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_FINALIZE: {
            ms_msg_finalize m;
            memset(&m, 0, sizeof m);
            m.t = e->t_ps;
            m.compute_ps = e->compute_ps;
            m.mpi_ps = e->raw_compute_ns;
            m.calls = e->bytes;
            m.unmodelled_calls = e->req;
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_UNMODELLED:
        case MS_MSG_CALLSITE:
            rec(&b, (uint32_t)e->kind, r->text + e->list_off, (size_t)e->list_n + 1, NULL, 0);
            break;
        case MS_MSG_CLOCK: {
            ms_msg_clock m = {e->t_ps};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_TR_CALL: {
            ms_msg_tr_call m = {e->compute_ps, e->raw_compute_ns, e->real_entry_ns, e->callsite, e->fn, 0};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_TR_EXIT: {
            ms_msg_tr_exit m = {e->real_exit_ns, e->t_ps, e->fn, e->mode};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        case MS_MSG_RESUME: {
            ms_msg_resume m = {e->t_ps, e->list_n, 0};
            size_t n = (size_t)e->list_n;
            ms_msg_result *x = calloc(n ? n : 1, sizeof *x);
            for (size_t i = 0; i < n; i++) {
                const ms_trace_result *y = &r->results[e->list_off + (int64_t)i];
                x[i].req = y->req;
                x[i].complete_time = y->complete_time;
                x[i].bytes = y->bytes;
                x[i].completed = y->completed;
                x[i].source = y->source;
                x[i].tag = y->tag;
            }
            rec(&b, (uint32_t)e->kind, &m, sizeof m, x, sizeof *x * n);
            free(x);
            break;
        }
        case MS_MSG_RESOLVE: {
            ms_msg_resolve m = {e->req, e->bytes, e->peer, e->tag};
            rec(&b, (uint32_t)e->kind, &m, sizeof m, NULL, 0);
            break;
        }
        }
    }
    *len = b.len;
    return b.p;
}

int synth_write_raw_dir(const ms_trace *t, const char *dir)
{
    mkdir(dir, 0755);
    char path[4096];
    for (int i = 0; i < t->nranks; i++) {
        size_t n;
        unsigned char *d = synth_raw_bytes(t, i, &n);
        snprintf(path, sizeof path, "%s/rank-%06d.mstrace", dir, i);
        FILE *f = fopen(path, "wb");
        if (!f) {
            free(d);
            return -1;
        }
        fwrite(d, 1, n, f);
        fclose(f);
        free(d);
    }
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "{\"mpisim_version\": \"synthetic\", \"nranks\": %d, \"program\": [\"synthetic\", \"a b\"], "
               "\"config\": {\"network.engine\": {\"value\": \"analytic\", \"unit\": \"\", \"source\": \"test\"}}, "
               "\"machine\": \"Machine (1 GB)\\n  Core 0\", \"bindings\": [[0], [1]]}\n",
            t->nranks);
    fclose(f);
    return 0;
}
