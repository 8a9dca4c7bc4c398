/* The MPI layer model: its keys, lifecycle and public calls. The engine is split by concept into
 * ms_model_*.c over the private ms_model_internal.h; the timing contract is in README.md next to
 * this file. */
#include "ms_model_internal.h"

/* ---- configuration keys ---------------------------------------------------------------------- */

static const nm_key_def mpi_keys[] = {
    {"mpi.eager_threshold", NM_KEY_INT, "B", "16384",
     "seed 003 section 2 (MPICH-GM: eager protocol below 16K)",
     "messages of fewer bytes go eager, others rendezvous (RTS/CTS, then the data)", NULL, NM_KEY_NONNEG},
    {"mpi.send_overhead", NM_KEY_INT, "ps", "400000",
     "seed 003 section 5.3 (o = 0.8 us send+receive for 1 B, split evenly: o_s = 0.4 us)",
     "host CPU time of one send (o_s), charged to the sender's clock", NULL, NM_KEY_NONNEG},
    {"mpi.recv_overhead", NM_KEY_INT, "ps", "400000",
     "seed 003 section 5.3 (o = 0.8 us send+receive for 1 B, split evenly: o_r = 0.4 us)",
     "host CPU time of one receive (o_r), added to the receive's completion", NULL, NM_KEY_NONNEG},
    {"mpi.send_overhead_per_byte", NM_KEY_INT, "ps/B", "0", "LogGP-style extension; 0 keeps seed 003's constant o",
     "send overhead per message byte (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"mpi.recv_overhead_per_byte", NM_KEY_INT, "ps/B", "0", "LogGP-style extension; 0 keeps seed 003's constant o",
     "receive overhead per message byte (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"mpi.gap", NM_KEY_INT, "ps", "0", "LogP g; not modelled in seed 000's testbed (seed 003 5.3 measured 2.3 us)",
     "minimum interval between the starts of two data messages injected by one host NIC", NULL, NM_KEY_NONNEG},
    {"mpi.packet_payload", NM_KEY_INT, "B", "4096", "GM MTU of 4 KB (seed 003 section 2, GM)",
     "largest payload of one network packet; messages are cut into packets of this size", NULL, NM_KEY_POSITIVE},
    {"mpi.envelope_bytes", NM_KEY_INT, "B", "0", "project choice: 0 keeps seed 000 eq. 3 exact",
     "MPI header bytes carried in a message's first packet", NULL, NM_KEY_NONNEG},
    {"mpi.control_bytes", NM_KEY_INT, "B", "0", "project choice (header-only packets)",
     "payload of rendezvous RTS/CTS and synchronous-send ACK packets", NULL, NM_KEY_NONNEG},
    {"mpi.packet_trains", NM_KEY_INT, "", "1", "project choice (exact: the same results as 0)",
     "1: a message's back-to-back full packets go to the network as one train (nm_network_inject_train) "
     "where the engine runs trains (myrinet), the node has one port and receiving costs nothing; 0: "
     "packet by packet", "0..1", 0},
    {"mpi.poll_cost", NM_KEY_INT, "ps", "100000",
     "project choice: makes polling loops (MPI_Test/MPI_Iprobe) advance in virtual time",
     "modelled cost of one MPI_Test*/MPI_Iprobe call", NULL, NM_KEY_NONNEG},
    {"mpi.reduce_cost_per_byte", NM_KEY_INT, "ps/B", "0", "project choice (0: reductions are free)",
     "arithmetic cost per byte combined in a reduction step (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"mpi.recv_unexpected_overhead", NM_KEY_INT, "ps", "0", "0: the receive costs o_r whether or not its message came first",
     "more host CPU time for an eager receive whose message arrived before it was posted (the library "
     "queued it unexpected and copies it out again, as MPI_Recv after MPI_Iprobe), on top of o_r", NULL, NM_KEY_NONNEG},
    {"mpi.recv_unexpected_overhead_per_byte", NM_KEY_INT, "ps/B", "0", "0: no per-byte cost for unexpected receives",
     "the same per message byte (plain integer ps per byte)", NULL, NM_KEY_NONNEG},
    {"mpi.allreduce_overhead", NM_KEY_INT, "ps", "0", "0: a collective costs its algorithm's messages, reductions and copies",
     "host CPU time of an MPI_Allreduce call on each member beyond its algorithm's messages, reductions and "
     "local copies (the MPI library's own path: dispatch, the choice of algorithm, temporary buffers), "
     "charged at the call's start; mpisim calibrate fits it as calibench's allreduce less the same exchange "
     "and reduction by hand", NULL, NM_KEY_NONNEG},
    {"mpi.bcast_overhead", NM_KEY_INT, "ps", "0", "0: a collective costs its algorithm's messages, reductions and copies",
     "the same for MPI_Bcast (calibrate: calibench's bcast less its message sent by hand)", NULL, NM_KEY_NONNEG},
    {"mpi.barrier_overhead", NM_KEY_INT, "ps", "0", "0: a collective costs its algorithm's messages, reductions and copies",
     "the same for MPI_Barrier (calibrate: calibench's barrier less an exchange of 0 B by hand)", NULL, NM_KEY_NONNEG},
    {"mpi.recv_overhead_serial", NM_KEY_INT, "", "0", "0: the timing contract of seed 000's model (receives overlap)",
     "1: a rank's receive overheads o_r(B) take its CPU one after the other and after its send overheads "
     "(one thread runs the MPI library: several messages arriving at once are taken in turn), and so do "
     "the intra-node copies of the rendezvous messages it receives (a single-copy get by the receiver); 0: "
     "each receive completes o_r(B) after its data, whatever else the rank receives", "0..1", 0},
    {"mpi.size_segments", NM_KEY_STRING, "", "", "none: the overheads above hold at every size",
     "piecewise costs by message size, as an MPI library's protocols and a host's caches change them "
     "(fitted by mpisim calibrate): segments 'FROM:OS:OS_PB:OR:OR_PB:COPY_PB[:COPY_SHARED_PB][:ack]' separated by spaces, "
     "FROM in bytes ascending; a message of B >= FROM bytes (up to the next FROM) costs o_s = OS + OS_PB*B "
     "(at least the scalar o_s, which the sender's clock takes at once; the rest is its time in the call "
     "before the send completes) "
     "and o_r = OR + OR_PB*B (ps, ps per byte, decimals allowed), its intra-node copy COPY_PB ps per byte "
     "(-1: host.shm_copy_rate), COPY_SHARED_PB ps per byte for the bytes of a rendezvous received into a buffer "
     "the receiver itself sent from in one of its last 4 rendezvous sends on its node (lines the other core holds; "
     "default: COPY_PB); ':ack': its standard, ready and nonblocking eager sends complete when the "
     "receiver has taken the message (a shared-memory fragment returned to the sender). Below the first "
     "FROM the keys above apply", NULL, 0},
#define COLL_KEY(n, choices)                                                                        \
    {"mpi.coll." n ".algorithm", NM_KEY_STRING, "", "auto", "MPICH 3.x defaults (auto)",           \
     "algorithm of MPI_" n "; auto = MPICH's choice by size and message length", choices, 0}
    COLL_KEY("barrier", "auto|dissemination"),
    COLL_KEY("bcast", "auto|binomial|scatter_doubling_allgather|scatter_ring_allgather|multicast"),
    COLL_KEY("reduce", "auto|binomial|reduce_scatter_gather"),
    COLL_KEY("allreduce", "auto|recursive_doubling|reduce_scatter_allgather"),
    COLL_KEY("gather", "auto|binomial|linear"),
    COLL_KEY("scatter", "auto|binomial|linear"),
    COLL_KEY("allgather", "auto|recursive_doubling|bruck|ring"),
    COLL_KEY("alltoall", "auto|bruck|scattered|pairwise"),
    COLL_KEY("reduce_scatter", "auto|recursive_halving|pairwise"),
    COLL_KEY("scan", "auto|recursive_doubling"),
    COLL_KEY("exscan", "auto|recursive_doubling"),
    COLL_KEY("gatherv", "auto|linear"),
    COLL_KEY("scatterv", "auto|linear"),
    COLL_KEY("allgatherv", "auto|recursive_doubling|bruck|ring"),
    COLL_KEY("alltoallv", "auto|scattered"),
    COLL_KEY("neighbor", "auto|linear"),   /* MPI_Neighbor_* and MPI_Ineighbor_*, every variant */
#undef COLL_KEY
};

int ms_model_register_keys(nm_config *cfg, char *err, size_t errlen)
{
    if (nm_config_register(cfg, mpi_keys, sizeof mpi_keys / sizeof mpi_keys[0], err, errlen) != 0) return -1;
    return ms_host_register_keys(cfg, err, errlen);
}


/* Parse mpi.size_segments into m->seg: 0, or -1 with the reason in err. */
static int parse_segments(ms_model *m, const char *text, char *err, size_t errlen)
{
    m->nseg = 0;
    const char *p = text ? text : "";
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) break;
        const char *end = p;
        while (*end && *end != ' ' && *end != '\t' && *end != ',') end++;
        char tok[256];
        size_t len = (size_t)(end - p);
        if (len >= sizeof tok) {
            set_err(err, errlen, "mpi.size_segments: segment '%.40s...' too long", p);
            return -1;
        }
        memcpy(tok, p, len);
        tok[len] = 0;
        p = end;
        if (m->nseg == MS_MAX_SEGMENTS) {
            set_err(err, errlen, "mpi.size_segments: more than %d segments", MS_MAX_SEGMENTS);
            return -1;
        }
        ms_segment sg = {0, 0, 0, 0, 0, -1, -1, 0};
        double v[7];
        int nf = 0;
        char *q = tok, *f;
        while (nf < 8 && (f = q) != NULL) {
            char *colon = strchr(q, ':');
            if (colon) *colon = 0;
            q = colon ? colon + 1 : NULL;
            if (nf >= 6 && !strcmp(f, "ack")) {
                sg.ack = 1;
                nf++;
                break;
            }
            if (nf == 7) {
                set_err(err, errlen, "mpi.size_segments: segment '%s...': expected 'ack' as its last field, got '%s'", tok, f);
                return -1;
            }
            char *e;
            errno = 0;
            v[nf] = strtod(f, &e);
            if (e == f || *e || errno || !isfinite(v[nf])) {
                set_err(err, errlen, "mpi.size_segments: segment %d: field %d '%s' is not a number", m->nseg + 1, nf + 1, f);
                return -1;
            }
            nf++;
        }
        if (q || nf < 6) {
            set_err(err, errlen, "mpi.size_segments: segment %d: expected FROM:OS:OS_PB:OR:OR_PB:COPY_PB[:COPY_SHARED_PB][:ack]",
                    m->nseg + 1);
            return -1;
        }
        if (nf - sg.ack == 7) sg.copy_shared_pb = v[6];
        if (v[0] < 0 || v[0] != floor(v[0]) || v[0] > 1e18) {
            set_err(err, errlen, "mpi.size_segments: segment %d: FROM must be a whole number of bytes", m->nseg + 1);
            return -1;
        }
        sg.from = (uint64_t)v[0];
        sg.os = v[1], sg.os_pb = v[2], sg.or_ = v[3], sg.or_pb = v[4], sg.copy_pb = v[5];
        /* a cost may start below 0 only where its slope lifts it: never negative in its range */
        if (sg.os_pb < 0 || sg.or_pb < 0 || (sg.copy_pb < 0 && sg.copy_pb != -1) ||
            (sg.copy_shared_pb < 0 && sg.copy_shared_pb != -1) ||
            sg.os + sg.os_pb * (double)sg.from < 0 || sg.or_ + sg.or_pb * (double)sg.from < 0) {
            set_err(err, errlen, "mpi.size_segments: segment %d (from %llu B): a cost is negative in its range", m->nseg + 1,
                    (unsigned long long)sg.from);
            return -1;
        }
        if (m->nseg && sg.from <= m->seg[m->nseg - 1].from) {
            set_err(err, errlen, "mpi.size_segments: segment %d: FROM %llu B is not above the previous one", m->nseg + 1,
                    (unsigned long long)sg.from);
            return -1;
        }
        m->seg[m->nseg++] = sg;
    }
    return 0;
}


/* ---- public API ------------------------------------------------------------------------------ */

ms_model *ms_model_create(const nm_config *cfg, nm_network *net, int nranks, const int *rank_to_host, char *err,
                          size_t errlen)
{
    if (!cfg || !net || nranks < 1 || nranks >= MAX_RANKS) {
        set_err(err, errlen, "ms_model_create: need a configuration, a network and 1..%d ranks", MAX_RANKS - 1);
        return NULL;
    }
    if (!nm_config_has(cfg, "mpi.eager_threshold")) {
        set_err(err, errlen, "ms_model_create: the [mpi] keys are not registered (call ms_model_register_keys)");
        return NULL;
    }
    ms_model *m = calloc(1, sizeof *m);
    if (!m) { set_err(err, errlen, "out of memory"); return NULL; }
    m->eager_thr = nm_config_int(cfg, "mpi.eager_threshold");
    m->o_s = nm_config_int(cfg, "mpi.send_overhead");
    m->o_r = nm_config_int(cfg, "mpi.recv_overhead");
    m->o_s_pb = nm_config_int(cfg, "mpi.send_overhead_per_byte");
    m->o_r_pb = nm_config_int(cfg, "mpi.recv_overhead_per_byte");
    m->gap = nm_config_int(cfg, "mpi.gap");
    m->pkt_payload = nm_config_int(cfg, "mpi.packet_payload");
    m->env_bytes = nm_config_int(cfg, "mpi.envelope_bytes");
    m->ctl_bytes = nm_config_int(cfg, "mpi.control_bytes");
    m->poll = nm_config_int(cfg, "mpi.poll_cost");
    m->red_pb = nm_config_int(cfg, "mpi.reduce_cost_per_byte");
    m->or_unexp = nm_config_int(cfg, "mpi.recv_unexpected_overhead");
    m->or_unexp_pb = nm_config_int(cfg, "mpi.recv_unexpected_overhead_per_byte");
    m->coll_call[MS_COLL_ALLREDUCE] = nm_config_int(cfg, "mpi.allreduce_overhead");
    m->coll_call[MS_COLL_BCAST] = nm_config_int(cfg, "mpi.bcast_overhead");
    m->coll_call[MS_COLL_BARRIER] = nm_config_int(cfg, "mpi.barrier_overhead");
    if (m->pkt_payload < 1) m->pkt_payload = 1;
    m->recv_serial = nm_config_has(cfg, "mpi.recv_overhead_serial") ? (int)nm_config_int(cfg, "mpi.recv_overhead_serial") : 0;
    if (parse_segments(m, nm_config_has(cfg, "mpi.size_segments") ? nm_config_string(cfg, "mpi.size_segments") : "",
                       err, errlen) != 0) {
        free(m);
        return NULL;
    }
    for (int k = 0; k < MS_COLL_COUNT; k++) {
        char key[64];
        snprintf(key, sizeof key, "mpi.coll.%s.algorithm", ms_coll_kind_name((ms_coll_kind)k));
        const char *v = nm_config_has(cfg, key) ? nm_config_string(cfg, key) : "auto";
        int a = ms_coll_algorithm_lookup((ms_coll_kind)k, v);
        if (a < 0) {
            set_err(err, errlen, "%s: unknown algorithm '%s' (one of %s)", key, v,
                    ms_coll_algorithm_choices((ms_coll_kind)k));
            free(m);
            return NULL;
        }
        m->coll_alg[k] = a;
    }
    m->net = net;
    m->nranks = nranks;
    m->ranks = calloc((size_t)nranks, sizeof *m->ranks);
    if (!m->ranks) goto oom;
    /* ranks live on nodes (the host model); each node's NIC ports are hosts of the topology */
    m->host = ms_host_create(cfg, nranks, rank_to_host, err, errlen);
    if (!m->host) {
        ms_model_destroy(m);
        return NULL;
    }
    ms_host_pace_ports(m->host, net);
    for (int r = 0; r < nranks; r++) {
        m->ranks[r].host = ms_host_node_of(m->host, r);
        m->ranks[r].w0.sched = NEVER;
        m->ranks[r].unexp_first = NEVER;
    }
    m->nhosts = ms_host_nodes(m->host);
    m->ports = ms_host_ports(m->host);
    m->mc_ok = nm_network_has_multicast(net) && m->ports == 1;
    m->trains_ok = nm_config_int(cfg, "mpi.packet_trains") && nm_network_has_trains(net) && m->ports == 1 &&
                   ms_host_rx_stateless(m->host);
    m->rma_in_call = ms_host_rma_in_call(m->host);
    m->nic_free = calloc((size_t)m->nhosts, sizeof *m->nic_free);
    m->nic = calloc((size_t)m->nhosts, sizeof *m->nic);
    if (!m->nic_free || !m->nic) goto oom;
    ms_pool_init(&m->connpool, sizeof(ms_conn));
    ms_pool_init(&m->msgs, sizeof(ms_msg));
    ms_pool_init(&m->reqpool, sizeof(ms_req));
    ms_pool_init(&m->mqpool, sizeof(ms_mq));
    m->mq_limit = MQ_LIMIT_MIN;
    if (!msm_comm_new(m, MS_COMM_WORLD, nranks, 0, (size_t)nranks)) goto oom;
    ms_comm *self = msm_comm_new(m, MS_COMM_SELF, 1, 1, (size_t)nranks);
    if (!self) goto oom;
    nm_network_set_callbacks(net, msm_on_deliver, msm_on_drop, m);
    return m;
oom:
    set_err(err, errlen, "out of memory");
    ms_model_destroy(m);
    return NULL;
}

void ms_model_destroy(ms_model *m)
{
    if (!m) return;
    if (m->net) nm_network_set_callbacks(m->net, NULL, NULL, NULL);
    /* collective member states still running */
    for (size_t i = 0; i < m->reqs.cap; i++) {
        ms_req *r = m->reqs.s ? m->reqs.s[i].v : NULL;
        if (r && r->kind == REQ_COLL && r->cm) {
            ms_coll_plan_free(&r->cm->plan);
            free(r->cm);
        }
    }
    for (int k = 0; m->ranks && k < m->nranks; k++)
        for (size_t i = 0; m->ranks[k].win && i < REQ_WIN; i++) {
            ms_req *r = m->ranks[k].win[i];
            if (r && r->kind == REQ_COLL && r->cm) {
                ms_coll_plan_free(&r->cm->plan);
                free(r->cm);
            }
        }
    for (size_t i = 0; i < m->ncomms; i++) {
        free(m->commv[i]->members);
        free(m->commv[i]->coll_seq);
        free(m->commv[i]);
    }
    free(m->commv);
    if (m->ranks) {
        for (int r = 0; r < m->nranks; r++) {
            rank_state *rs = &m->ranks[r];
            for (int i = 0; i <= rs->nwx; i++) {
                waiter *w = wt_at(rs, i);
                if (!w) continue;
                free(w->wreqs);
                free(w->res);
                if (i) free(w);
            }
            free(rs->wx);
            free(m->ranks[r].win);
            free(m->ranks[r].resol);
            free(m->ranks[r].turns);
        }
    }
    free(m->ranks);
    free(m->nic_free);
    if (m->nic) {
        for (int i = 0; i < m->nhosts; i++)
            for (int q = 0; q < NQ_COUNT; q++) {
                nic_queue *nq = &m->nic[i].q[q];
                for (size_t k = 0; k < nq->n; k++) msm_mc_group_free(nq->v[(nq->head + k) % nq->cap].grp);
                free(nq->v);
            }
    }
    free(m->nic);
    ms_host_destroy(m->host);
    cm_hmap_free(&m->conns);
    ms_pool_free(&m->connpool);
    free(m->heap.e);
    free(m->tev);
    cm_hmap_free(&m->reqs);
    cm_hmap_free(&m->comms);
    cm_hmap_free(&m->cranks);
    cm_hmap_free(&m->mqs);
    for (size_t i = 0; i < m->locks.cap; i++) {
        rma_lock *l = m->locks.s ? m->locks.s[i].v : NULL;
        if (l) free(l->q);
        free(l);
    }
    cm_hmap_free(&m->locks);
    ms_pool_free(&m->msgs);
    ms_pool_free(&m->reqpool);
    ms_pool_free(&m->mqpool);
    free(m);
}

void ms_model_set_resume(ms_model *m, ms_resume_fn fn, void *user)
{
    if (!m) return;
    m->resume = fn;
    m->user = user;
}

ms_time_t ms_model_isend_cost(const ms_model *m, uint64_t bytes) { return m ? os_cost(m, bytes) : 0; }
ms_time_t ms_model_irecv_cost(const ms_model *m, uint64_t bytes)
{
    (void)m;
    (void)bytes;
    return 0;
}

/* Common checks of a post: rank, time, comm membership, request id. */
/* A rank may act (verb: "posts", "waits", "cancels") if it exists, is neither finished nor
 * blocked, and its time is not behind the model's. */
static int check_rank(ms_model *m, int rank, ms_time_t t, const char *verb, char *err, size_t errlen)
{
    if (!m || rank < 0 || rank >= m->nranks) {
        set_err(err, errlen, "bad rank %d", rank);
        return -1;
    }
    rank_state *rs = &m->ranks[rank];
    if (rs->finalized || wt_cur(rs)->blocked) {
        if (rs->cur)
            set_err(err, errlen, "rank %d thread %d %s %s", rank, rs->cur, verb,
                    rs->finalized ? "after MPI_Finalize" : "while blocked");
        else
            set_err(err, errlen, "rank %d %s %s", rank, verb, rs->finalized ? "after MPI_Finalize" : "while blocked");
        return -1;
    }
    if (t < m->now) {
        set_err(err, errlen, "rank %d %s at t=%" PRId64 " ps, before the model's time %" PRId64 " ps", rank, verb, t,
                m->now);
        return -1;
    }
    return 0;
}

static int check_post(ms_model *m, int rank, ms_time_t t, uint64_t comm, uint64_t req, ms_comm **c_out,
                      int *crank_out, char *err, size_t errlen)
{
    if (check_rank(m, rank, t, "posts", err, errlen)) return -1;
    ms_comm *c = msm_comm_get(m, comm);
    if (!c) {
        set_err(err, errlen, "rank %d: unknown communicator %" PRIu64, rank, comm);
        return -1;
    }
    int cr = msm_comm_rank_of(m, c, rank);
    if (cr < 0) {
        set_err(err, errlen, "rank %d is not a member of communicator %" PRIu64, rank, comm);
        return -1;
    }
    if (msm_req_find(m, rank, req)) {
        set_err(err, errlen, "rank %d: request %" PRIu64 " is already active", rank, req);
        return -1;
    }
    *c_out = c;
    *crank_out = cr;
    return 0;
}

static ms_req *new_user_req(ms_model *m, int rank, uint64_t id, char *err, size_t errlen)
{
    ms_req *r = msm_req_new(m);
    if (r) {
        r->id = id;
        r->rank = rank;
        r->thread = (uint16_t)m->ranks[rank].cur;
    }
    if (!r || msm_req_index(m, rank, r) != 0) {
        if (r) msm_req_free(m, r);
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    return r;
}

int ms_model_isend(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int dst, int tag,
                   uint64_t bytes, ms_send_mode mode, char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (dst != MS_PROC_NULL && (dst < 0 || dst >= c->size)) {
        set_err(err, errlen, "rank %d: send to rank %d of communicator %" PRIu64 " (size %d)", rank, dst, comm, c->size);
        return -1;
    }
    if (tag < 0) {
        set_err(err, errlen, "rank %d: send with tag %d", rank, tag);
        return -1;
    }
    if ((unsigned)mode > MS_SEND_BUFFERED) {
        set_err(err, errlen, "rank %d: bad send mode %d", rank, (int)mode);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) return -1;
    r->kind = REQ_SEND;
    r->mode = (uint8_t)mode;
    r->comm = comm;
    r->ctx = c->idx * 2;
    r->peer = dst;
    r->peer_world_cache = dst == MS_PROC_NULL ? -1 : msm_comm_world_of(c, dst, rank);
    r->tag = tag;
    r->bytes = bytes;
    r->post = t;
    r->m_src = cr;
    msm_push_post(m, rank, t, EV_SEND_POST, r);
    return 0;
}

int ms_model_irecv(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int src, int tag,
                   uint64_t bytes, char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (src != MS_PROC_NULL && src != MS_ANY_SOURCE && (src < 0 || src >= c->size)) {
        set_err(err, errlen, "rank %d: receive from rank %d of communicator %" PRIu64 " (size %d)", rank, src, comm,
                c->size);
        return -1;
    }
    if (tag < 0 && tag != MS_ANY_TAG) {
        set_err(err, errlen, "rank %d: receive with tag %d", rank, tag);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) return -1;
    r->kind = REQ_RECV;
    m->ranks[rank].active_recvs++;
    r->comm = comm;
    r->ctx = c->idx * 2;
    r->peer = src;
    r->peer_world_cache = (src >= 0) ? msm_comm_world_of(c, src, rank) : -1;
    r->tag = tag;
    r->bytes = bytes;
    r->post = t;
    r->m_src = -1;
    r->m_tag = -1;
    msm_push_post(m, rank, t, EV_RECV_POST, r);
    return 0;
}

int ms_model_rma(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, int target, ms_rma_kind kind,
                 uint64_t bytes, uint64_t result_bytes, char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (target != MS_PROC_NULL && (target < 0 || target >= c->size)) {
        set_err(err, errlen, "rank %d: one-sided operation to rank %d of window communicator %" PRIu64 " (size %d)",
                rank, target, comm, c->size);
        return -1;
    }
    if ((unsigned)kind >= MS_RMA_KIND_COUNT) {
        set_err(err, errlen, "rank %d: one-sided operation of unknown kind %d", rank, (int)kind);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) return -1;
    r->kind = REQ_RMA;
    r->mode = (uint8_t)kind;
    r->comm = comm;
    r->ctx = c->idx * 2;          /* names the window: its locks */
    r->peer = target;
    r->peer_world_cache = target == MS_PROC_NULL ? -1 : msm_comm_world_of(c, target, rank);
    r->tag = -1;
    r->bytes = kind >= MS_RMA_LOCK_SHARED ? 0 : bytes;
    r->m_bytes = msm_rma_fetches(kind) ? result_bytes : 0;
    r->m_src = cr;
    r->post = t;
    msm_push_post(m, rank, t, EV_RMA_POST, r);
    return 0;
}

int ms_model_buffer(ms_model *m, int rank, uint64_t req, uint64_t addr)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    ms_req *r = msm_req_find(m, rank, req);
    if (!r || (r->kind != REQ_SEND && r->kind != REQ_RECV)) return -1;
    r->buf = addr;
    return 0;
}

int ms_model_irecv_notify(ms_model *m, int rank, uint64_t req)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    ms_req *r = msm_req_find(m, rank, req);
    if (!r || r->kind != REQ_RECV) return -1;
    r->notify = 1;
    return 0;
}

int ms_model_forget(ms_model *m, int rank, uint64_t req, char *err, size_t errlen)
{
    if (!m || rank < 0 || rank >= m->nranks) {
        set_err(err, errlen, "bad rank %d", rank);
        return -1;
    }
    ms_req *r = msm_req_find(m, rank, req);
    if (!r || r->in_wait) {
        set_err(err, errlen, "rank %d: MPI_Request_free of request %" PRIu64 ", which is %s", rank, req,
                r ? "being waited for" : "not active");
        return -1;
    }
    if (r->kind != REQ_SEND) {
        set_err(err, errlen, "rank %d: MPI_Request_free of an active receive or collective is not modelled", rank);
        return -1;
    }
    if (r->done != NEVER) {   /* already complete: forget it now */
        msm_req_unindex(m, r);
        msm_req_free(m, r);
    } else {
        r->forget = 1;
    }
    return 0;
}

int ms_model_cancel(ms_model *m, int rank, ms_time_t t, uint64_t req, char *err, size_t errlen)
{
    if (check_rank(m, rank, t, "cancels", err, errlen)) return -1;
    ms_req *r = msm_req_find(m, rank, req);
    if (!r) {
        set_err(err, errlen, "rank %d: MPI_Cancel of request %" PRIu64 ", which is not active", rank, req);
        return -1;
    }
    if (r->kind != REQ_RECV) return 0;   /* a send that has started is not taken back: the cancel fails */
    msm_push_post(m, rank, t, EV_CANCEL, r);
    return 0;
}

int ms_model_icoll(ms_model *m, int rank, ms_time_t t, uint64_t req, uint64_t comm, const ms_coll_args *args,
                   char *err, size_t errlen)
{
    ms_comm *c;
    int cr;
    if (check_post(m, rank, t, comm, req, &c, &cr, err, errlen)) return -1;
    if (!args || (unsigned)args->kind >= MS_COLL_COUNT) {
        set_err(err, errlen, "rank %d: bad collective", rank);
        return -1;
    }
    int v = args->kind == MS_COLL_GATHERV || args->kind == MS_COLL_SCATTERV || args->kind == MS_COLL_ALLGATHERV ||
            args->kind == MS_COLL_ALLTOALLV;
    const uint64_t *counts = (v || args->kind == MS_COLL_REDUCE_SCATTER || args->kind == MS_COLL_NEIGHBOR)
                                 ? args->counts : NULL;
    /* the lists must be as long as they say (they come from a rank or a trace) */
    int short_list = 0;
    if (args->kind == MS_COLL_NEIGHBOR)
        short_list = !counts || args->ncounts < 2 || counts[0] > args->ncounts || counts[1] > args->ncounts ||
                     args->ncounts != 2 + 2 * (counts[0] + counts[1]);
    else if (!args->inter_low && counts && args->ncounts < (size_t)c->size && (v || args->kind == MS_COLL_REDUCE_SCATTER))
        short_list = 1;
    if (short_list) {
        set_err(err, errlen, "rank %d: %s on communicator %" PRIu64 " (size %d): %zu counts do not fit", rank,
                ms_coll_mpi_name(args->kind), comm, c->size, args->ncounts);
        return -1;
    }
    if (args->inter_low < 0 || args->inter_low >= c->size) {
        set_err(err, errlen, "rank %d: %s on communicator %" PRIu64 " (size %d): low group of %d", rank,
                ms_coll_mpi_name(args->kind), comm, c->size, args->inter_low);
        return -1;
    }
    coll_member *cm = calloc(1, sizeof *cm);
    if (!cm) { set_err(err, errlen, "out of memory"); return -1; }
    /* gatherv/scatterv: only the root's counts describe the blocks */
    if ((args->kind == MS_COLL_GATHERV || args->kind == MS_COLL_SCATTERV) && cr != args->root) counts = NULL;
    ms_coll_spec spec = {args->kind, m->coll_alg[args->kind], c->size, cr, args->root, args->bytes, counts,
                         counts ? args->ncounts : 0, args->inter_low};
    if (ms_coll_generate_spec(&cm->plan, &spec) != 0) {
        ms_coll_plan_free(&cm->plan);
        free(cm);
        set_err(err, errlen, "rank %d: %s on communicator %" PRIu64 " (size %d, root %d): bad arguments", rank,
                ms_coll_mpi_name(args->kind), comm, c->size, args->root);
        return -1;
    }
    ms_req *r = new_user_req(m, rank, req, err, errlen);
    if (!r) {
        ms_coll_plan_free(&cm->plan);
        free(cm);
        return -1;
    }
    r->kind = REQ_COLL;
    m->ranks[rank].active_colls++;
    r->comm = comm;
    r->ctx = c->idx * 2 + 1;
    r->peer = -1;
    r->tag = -1;
    r->bytes = args->bytes;
    r->post = t;
    r->cm = cm;
    cm->req = r;
    cm->rank = rank;
    cm->crank = cr;
    cm->comm = c;
    cm->ctx = c->idx * 2 + 1;
    cm->kind = args->kind;
    uint64_t *seq = msm_coll_seq_slot(c, cr, rank);
    cm->tag = (int64_t)((*seq)++);
    m->ranks[rank].st.coll_calls++;
    msm_push_post(m, rank, t, EV_COLL_STEP, cm);
    return 0;
}

static int check_block(ms_model *m, int rank, ms_time_t t, char *err, size_t errlen)
{
    return check_rank(m, rank, t, "waits", err, errlen);
}

int ms_model_wait(ms_model *m, int rank, ms_time_t t, ms_wait_mode mode, size_t n, const uint64_t *reqs, char *err,
                  size_t errlen)
{
    if (check_block(m, rank, t, err, errlen)) return -1;
    if ((unsigned)mode > MS_TEST_PEEK || (n && !reqs)) {
        set_err(err, errlen, "rank %d: bad wait", rank);
        return -1;
    }
    rank_state *rs = &m->ranks[rank];
    waiter *w = wt_cur(rs);
    if (w->wcap < n) {
        ms_req **nw = realloc(w->wreqs, n * sizeof *nw);
        if (!nw) { set_err(err, errlen, "out of memory"); return -1; }
        w->wreqs = nw;
        w->wcap = n;
    }
    for (size_t i = 0; i < n; i++) {
        ms_req *r = msm_req_find(m, rank, reqs[i]);
        if (!r || r->in_wait) {
            for (size_t j = 0; j < i; j++) w->wreqs[j]->in_wait = 0;
            set_err(err, errlen, "rank %d: request %" PRIu64 " is %s", rank, reqs[i],
                    r ? "listed twice in one wait" : "not active (unknown or already completed)");
            return -1;
        }
        r->in_wait = 1;
        r->wthread = (uint16_t)w->thread;
        w->wreqs[i] = r;
    }
    w->wn = n;
    w->wmode = mode;
    w->wt = t;
    w->blocked = 1;
    msm_rndv_enter_call(m, rank, t);
    w->sched = NEVER;
    if (mode >= MS_TEST_ALL) {
        w->wkind = W_TEST;
        for (size_t i = 0; i < n; i++) w->wreqs[i]->in_wait = 0;
        msm_schedule_resume(m, rank, w, t);
        return 0;
    }
    w->wkind = W_WAIT;
    w->nundet = 0;
    w->wmax = t;
    ms_time_t first = NEVER;
    for (size_t i = 0; i < n; i++) {
        ms_req *r = w->wreqs[i];
        if (r->done == NEVER) w->nundet++;
        else {
            if (r->done > w->wmax) w->wmax = r->done;
            if (r->done < first) first = r->done;
        }
    }
    if (n == 0) msm_schedule_resume(m, rank, w, t);
    else if (mode == MS_WAIT_ALL) {
        if (w->nundet == 0) msm_schedule_resume(m, rank, w, w->wmax);
    } else if (first != NEVER) {
        msm_schedule_resume(m, rank, w, tmax(t, first));
    }
    return 0;
}

int ms_model_probe(ms_model *m, int rank, ms_time_t t, uint64_t comm, int src, int tag, int blocking, char *err,
                   size_t errlen)
{
    if (check_block(m, rank, t, err, errlen)) return -1;
    ms_comm *c = msm_comm_get(m, comm);
    if (!c || msm_comm_rank_of(m, c, rank) < 0) {
        set_err(err, errlen, "rank %d: probe on unknown communicator %" PRIu64, rank, comm);
        return -1;
    }
    if (src != MS_ANY_SOURCE && src != MS_PROC_NULL && (src < 0 || src >= c->size)) {
        set_err(err, errlen, "rank %d: probe for rank %d of communicator %" PRIu64 " (size %d)", rank, src, comm,
                c->size);
        return -1;
    }
    rank_state *rs = &m->ranks[rank];
    waiter *w = wt_cur(rs);
    w->pctx = c->idx * 2;
    w->pcomm = comm;
    w->psrc = src;
    w->ptag = tag;
    w->parmed = 0;
    w->pfound = 0;
    w->wn = 0;
    w->wt = t;
    w->blocked = 1;
    w->sched = NEVER;
    w->wkind = blocking ? W_PROBE : W_IPROBE;
    msm_rndv_enter_call(m, rank, t);
    if (src == MS_PROC_NULL) {
        w->pfound = 1;
        w->pf_src = MS_PROC_NULL;
        w->pf_tag = MS_ANY_TAG;
        w->pf_bytes = 0;
        w->pf_time = t;
        msm_schedule_resume(m, rank, w, t);
    } else if (blocking) {
        msm_push_post(m, rank, t, EV_PROBE, w);
    } else {
        msm_schedule_resume(m, rank, w, t);
    }
    return 0;
}

int ms_model_finalize(ms_model *m, int rank, ms_time_t t)
{
    if (!m || rank < 0 || rank >= m->nranks) return -1;
    m->ranks[rank].finalized = 1;
    m->ranks[rank].fin_t = t;
    msm_rndv_enter_call(m, rank, t);   /* MPI_Finalize makes progress */
    return 0;
}

size_t ms_model_take_resolutions(ms_model *m, int rank, ms_resolution *out, size_t max)
{
    if (!m || rank < 0 || rank >= m->nranks) return 0;
    rank_state *rs = &m->ranks[rank];
    size_t k = 0;
    while (k < max && rs->rhead < rs->rn) out[k++] = rs->resol[rs->rhead++];
    if (rs->rhead == rs->rn) rs->rhead = rs->rn = 0;
    return k;
}

int ms_model_rank_node(const ms_model *m, int rank)
{
    return m && rank >= 0 && rank < m->nranks ? m->ranks[rank].host : -1;
}

void ms_model_rank_stats(const ms_model *m, int rank, ms_rank_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (m && rank >= 0 && rank < m->nranks) *out = m->ranks[rank].st;
}

size_t ms_model_active_requests(const ms_model *m) { return m ? m->nreqs : 0; }

int ms_model_rank_blocked(const ms_model *m, int rank)
{
    if (!m || rank < 0 || rank >= m->nranks) return 0;
    rank_state *rs = &m->ranks[rank];
    for (int i = 0; i <= rs->nwx; i++)
        if (wt_at(rs, i) && wt_at(rs, i)->blocked) return 1;
    return 0;
}

int ms_model_set_thread(ms_model *m, int rank, int thread)
{
    if (!m || rank < 0 || rank >= m->nranks || thread < 0 || thread > MS_MODEL_MAX_THREADS) return -1;
    rank_state *rs = &m->ranks[rank];
    if (thread > rs->nwx) {
        waiter **x = realloc(rs->wx, sizeof *x * (size_t)thread);
        if (!x) return -1;
        for (int i = rs->nwx; i < thread; i++) x[i] = NULL;
        rs->wx = x;
        rs->nwx = thread;
    }
    if (thread && !rs->wx[thread - 1]) {
        waiter *w = calloc(1, sizeof *w);
        if (!w) return -1;
        w->thread = thread;
        w->sched = NEVER;
        w->cpu_free = 0;
        rs->wx[thread - 1] = w;
    }
    rs->cur = thread;
    return 0;
}

static void describe_req(const ms_model *m, const ms_req *r, char *buf, size_t len)
{
    char peer[48], tag[32];
    double us = (double)r->post / 1e6;
    if (r->kind == REQ_COLL) {
        const coll_member *cm = r->cm;
        if (cm)
            snprintf(buf, len, "%s on comm %" PRIu64 " (step %zu of %zu, entered at %.3f us)",
                     ms_coll_mpi_name(cm->kind), r->comm, cm->step + 1, cm->plan.nsteps, us);
        else
            snprintf(buf, len, "collective on comm %" PRIu64 " (entered at %.3f us)", r->comm, us);
        return;
    }
    if (r->kind == REQ_RMA) {
        snprintf(buf, len, "%s to rank %d (world %d) of window communicator %" PRIu64 " (%" PRIu64 " B, posted at %.3f us)",
                 ms_model_rma_name((ms_rma_kind)r->mode), r->peer, r->peer_world_cache, r->comm, r->bytes, us);
        return;
    }
    if (r->peer == MS_ANY_SOURCE) snprintf(peer, sizeof peer, "any source");
    else if (r->peer == MS_PROC_NULL) snprintf(peer, sizeof peer, "MPI_PROC_NULL");
    else if (r->comm != MS_COMM_WORLD && r->peer_world_cache >= 0)
        snprintf(peer, sizeof peer, "rank %d (world %d)", r->peer, r->peer_world_cache);
    else snprintf(peer, sizeof peer, "rank %d", r->peer);
    if (r->tag == MS_ANY_TAG) snprintf(tag, sizeof tag, "any tag");
    else snprintf(tag, sizeof tag, "tag %" PRId64, r->tag);
    if (r->kind == REQ_RECV)
        snprintf(buf, len, "recv from %s %s comm %" PRIu64 " (posted at %.3f us)", peer, tag, r->comm, us);
    else
        snprintf(buf, len, "%ssend to %s %s comm %" PRIu64 " (%" PRIu64 " B, posted at %.3f us)",
                 r->mode == MS_SEND_SYNC ? "synchronous " : "", peer, tag, r->comm, r->bytes, us);
    (void)m;
}

int ms_model_describe_wait(const ms_model *m, int rank, char *buf, size_t len)
{
    if (!m || rank < 0 || rank >= m->nranks || !buf || len == 0) return -1;
    const waiter *w = wt_cur(&m->ranks[rank]);
    if (!w->blocked) {
        snprintf(buf, len, "not blocked");
        return 0;
    }
    if (w->wkind == W_PROBE || w->wkind == W_IPROBE) {
        char src[32], tag[32];
        if (w->psrc == MS_ANY_SOURCE) snprintf(src, sizeof src, "any source");
        else snprintf(src, sizeof src, "rank %d", w->psrc);
        if (w->ptag == MS_ANY_TAG) snprintf(tag, sizeof tag, "any tag");
        else snprintf(tag, sizeof tag, "tag %" PRId64, w->ptag);
        snprintf(buf, len, "%s for %s %s comm %" PRIu64 " (since %.3f us)",
                 w->wkind == W_PROBE ? "MPI_Probe" : "MPI_Iprobe", src, tag, w->pcomm, (double)w->wt / 1e6);
        return 0;
    }
    static const char *const names[] = {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall",
                                        "MPI_Testany", "MPI_Testsome", "MPI_Request_get_status"};
    const char *fn = w->wn == 1 && w->wmode == MS_WAIT_ALL ? "MPI_Wait"
                     : w->wn == 1 && w->wmode == MS_TEST_ALL ? "MPI_Test" : names[w->wmode];
    size_t pending = 0, first = w->wn;
    for (size_t i = 0; i < w->wn; i++)
        if (w->wreqs[i]->done == NEVER) {
            if (first == w->wn) first = i;
            pending++;
        }
    if (first == w->wn) {
        snprintf(buf, len, "%s (%zu requests, all complete; resuming)", fn, w->wn);
        return 0;
    }
    char d[200];
    describe_req(m, w->wreqs[first], d, sizeof d);
    if (pending > 1) snprintf(buf, len, "%s on %s; %zu of %zu requests pending", fn, d, pending, w->wn);
    else snprintf(buf, len, "%s on %s", fn, d);
    return 0;
}

void ms_model_get_params(const ms_model *m, ms_model_params *out)
{
    if (!m || !out) return;
    out->eager_threshold = m->eager_thr;
    out->send_overhead = m->o_s;
    out->send_overhead_per_byte = m->o_s_pb;
    out->recv_overhead = m->o_r;
    out->recv_overhead_per_byte = m->o_r_pb;
    out->gap = m->gap;
    out->packet_payload = m->pkt_payload;
    out->envelope_bytes = m->env_bytes;
    out->control_bytes = m->ctl_bytes;
    out->poll_cost = m->poll;
    out->reduce_cost_per_byte = m->red_pb;
}

const char *ms_model_last_error(const ms_model *m, uint64_t *count)
{
    if (!m) return NULL;
    if (count) *count = m->errors;
    return m->errors ? m->last_err : NULL;
}

uint64_t ms_model_clamped_injections(const ms_model *m) { return m ? m->clamped : 0; }

const char *ms_model_coll_algorithm(const ms_model *m, ms_coll_kind kind, int size, uint64_t bytes,
                                    const uint64_t *counts)
{
    if (!m || (unsigned)kind >= MS_COLL_COUNT || size < 1) return NULL;
    int a = m->coll_alg[kind];
    ms_coll_plan p = {0};
    if (ms_coll_generate(&p, kind, a, size, 0, 0, bytes, counts) != 0) {
        ms_coll_plan_free(&p);
        return NULL;
    }
    a = p.alg;
    ms_coll_plan_free(&p);
    return ms_coll_algorithm_name(kind, a);
}
