// Test harness for the MPI layer model: a real analytic network (default profile values) and a
// small driver that plays per-rank scripts the way the model server does (conservative horizon
// H = min clock of running ranks; resume callbacks unblock ranks).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ms_coll.h"
#include "ms_model.h"
#include "ms_host.h"
#include "netmodel.h"

namespace mt {

// Analytic uncontended packet latency on the default network: tau*(P+4+h) + sum(prop) + h*d.
constexpr int64_t TAU = 6250;                 // 1.28 Gb/s: 8e12/1.28e9 ps per character
inline int64_t prop_ps() { return (int64_t)std::llround(10.0 / 1.8e8 * 1e12); }   // 10 m at 1.8e8 m/s
inline int64_t lat(uint64_t payload, int h = 1) { return TAU * ((int64_t)payload + 4 + h) + (h + 1) * prop_ps(); }
// Delivery of the last packet of a message of B bytes injected at once (packets of <= 4096 B
// go back to back: packet k starts k*(4096+h+6)*tau later).
inline int64_t msg_lat(uint64_t bytes, uint64_t pp = 4096, int h = 1)
{
    uint64_t npk = bytes ? (bytes + pp - 1) / pp : 1;
    uint64_t last = bytes - (npk - 1) * pp;
    return (int64_t)(npk - 1) * ((int64_t)pp + h + 6) * TAU + lat(last, h);
}

struct Op {
    enum Kind { ISEND, IRECV, WAIT, COLL, PROBE, COMPUTE, TEST_LOOP, CANCEL, FREE, RMA } kind;
    explicit Op(Kind k) : kind(k) {}
    uint64_t req = 0;
    uint64_t comm = MS_COMM_WORLD;
    int peer = 0, tag = 0;
    uint64_t bytes = 0;
    ms_send_mode mode = MS_SEND_STANDARD;
    ms_wait_mode wmode = MS_WAIT_ALL;
    std::vector<uint64_t> reqs;
    ms_coll_args cargs{};
    std::vector<uint64_t> counts;
    int blocking = 1;
    int notify = 0;      // IRECV: ms_model_irecv_notify (the shim held it back)
    uint64_t buf = 0;    // ISEND/IRECV: the user buffer's address (ms_model_buffer), 0 none
    ms_rma_kind rma = MS_RMA_PUT;   // RMA: the operation; bytes to the target, result_bytes back
    uint64_t result_bytes = 0;
    int64_t ps = 0;
};

inline Op isend(uint64_t req, int dst, int tag, uint64_t bytes, ms_send_mode mode = MS_SEND_STANDARD,
                uint64_t comm = MS_COMM_WORLD)
{
    Op o(Op::ISEND);
    o.req = req; o.peer = dst; o.tag = tag; o.bytes = bytes; o.mode = mode; o.comm = comm;
    return o;
}
inline Op irecv(uint64_t req, int src, int tag, uint64_t bytes = 0, uint64_t comm = MS_COMM_WORLD)
{
    Op o(Op::IRECV);
    o.req = req; o.peer = src; o.tag = tag; o.bytes = bytes; o.comm = comm;
    return o;
}
inline Op wait(std::vector<uint64_t> reqs, ms_wait_mode m = MS_WAIT_ALL)
{
    Op o(Op::WAIT);
    o.reqs = std::move(reqs); o.wmode = m;
    return o;
}
inline Op compute(int64_t ps) { Op o(Op::COMPUTE); o.ps = ps; return o; }
inline Op rma(uint64_t req, ms_rma_kind kind, int target, uint64_t bytes, uint64_t result_bytes = 0,
              uint64_t comm = MS_COMM_WORLD)
{
    Op o(Op::RMA);
    o.req = req; o.rma = kind; o.peer = target; o.bytes = bytes; o.result_bytes = result_bytes; o.comm = comm;
    return o;
}
inline Op cancel(uint64_t req) { Op o(Op::CANCEL); o.req = req; return o; }
inline Op request_free(uint64_t req) { Op o(Op::FREE); o.req = req; return o; }
inline Op probe(int src, int tag, int blocking, uint64_t comm = MS_COMM_WORLD)
{
    Op o(Op::PROBE);
    o.peer = src; o.tag = tag; o.blocking = blocking; o.comm = comm;
    return o;
}
// MPI_Test on one request in a loop until it completes (no compute between tests).
inline Op test_loop(uint64_t req) { Op o(Op::TEST_LOOP); o.req = req; return o; }
inline Op coll(uint64_t req, ms_coll_kind kind, uint64_t bytes, int root = 0, std::vector<uint64_t> counts = {},
               uint64_t comm = MS_COMM_WORLD)
{
    Op o(Op::COLL);
    o.req = req; o.comm = comm; o.counts = std::move(counts);
    o.cargs.kind = kind; o.cargs.root = root; o.cargs.bytes = bytes;
    return o;
}

struct Resume {
    int64_t t;
    std::vector<ms_req_result> res;
};

struct Sim {
    nm_config *cfg = nullptr;
    nm_topology *topo = nullptr;
    nm_network *net = nullptr;
    ms_model *m = nullptr;
    int n = 0;
    char err[512] = {0};
    // driver state
    std::vector<std::vector<Op>> prog;
    std::vector<size_t> pc;
    std::vector<int64_t> clock;
    std::vector<int> state;      // 0 running, 1 blocked, 2 done
    std::vector<std::vector<Resume>> log;
    std::vector<std::map<uint64_t, ms_req_result>> done;   // completed requests by id
    std::vector<std::vector<ms_resolution>> resol;
    std::vector<int> tests;      // MPI_Test calls made by TEST_LOOP
    bool deadlock = false;

    explicit Sim(int nranks, std::vector<std::string> sets = {}, std::string topo_spec = "")
    {
        n = nranks;
        cfg = nm_config_create();
        EXPECT_NE(cfg, nullptr);
        EXPECT_EQ(ms_model_register_keys(cfg, err, sizeof err), 0) << err;
        // "@name" loads the profile configs/name.ini (first); the others are --set assignments
        bool profile = false;
        for (auto &s : sets) {
            if (s[0] != '@') continue;
            EXPECT_EQ(nm_config_load_profile(cfg, s.c_str() + 1, MPISIM_SOURCE_PROFILE_DIR, err, sizeof err), 0) << err;
            profile = true;
        }
        for (auto &s : sets) {
            if (s[0] == '@') continue;
            EXPECT_EQ(nm_config_set(cfg, s.c_str(), "--set", err, sizeof err), 0) << err;
        }
        if (topo_spec.empty() && profile) {   // the profile's topology, "auto" sized for the nodes' ports
            std::string t = nm_config_string(cfg, "network.topology");
            topo_spec = t == "auto" ? "auto:" + std::to_string(ms_host_topology_hosts(cfg, nranks)) : t;
        }
        if (topo_spec.empty()) topo_spec = "crossbar:" + std::to_string(nranks < 2 ? 2 : nranks);
        topo = nm_topology_load(topo_spec.c_str(), cfg, err, sizeof err);
        EXPECT_NE(topo, nullptr) << err;
        net = nm_network_create(cfg, topo, err, sizeof err);
        EXPECT_NE(net, nullptr) << err;
        m = ms_model_create(cfg, net, nranks, nullptr, err, sizeof err);
        EXPECT_NE(m, nullptr) << err;
        ms_model_set_resume(m, &Sim::on_resume, this);
        prog.resize(n);
        pc.assign(n, 0);
        clock.assign(n, 0);
        state.assign(n, 0);
        log.resize(n);
        done.resize(n);
        resol.resize(n);
        tests.assign(n, 0);
    }
    ~Sim()
    {
        ms_model_destroy(m);
        nm_network_destroy(net);
        nm_topology_destroy(topo);
        nm_config_destroy(cfg);
    }
    static void on_resume(void *u, int rank, ms_time_t t, const ms_req_result *r, size_t n)
    {
        Sim *s = static_cast<Sim *>(u);
        Resume R{t, std::vector<ms_req_result>(r, r + n)};
        EXPECT_EQ(s->state[rank], 1) << "resume of a rank that is not blocked";
        EXPECT_GE(t, s->clock[rank]) << "resume earlier than the call";
        s->log[rank].push_back(R);
        for (size_t i = 0; i < n; i++)
            if (r[i].completed && r[i].req != 0) s->done[rank][r[i].req] = r[i];
        s->clock[rank] = t;
        s->state[rank] = 0;
        ms_resolution buf[16];
        size_t k;
        while ((k = ms_model_take_resolutions(s->m, rank, buf, 16)) > 0) s->resol[rank].insert(s->resol[rank].end(), buf, buf + k);
        // TEST_LOOP: repeat the test while the request is not complete
        Op &op = s->prog[rank][s->pc[rank] - 1];
        if (op.kind == Op::TEST_LOOP && n == 1 && !r[0].completed) s->pc[rank]--;
    }
    // Execute rank r's next op; returns false if it blocked or finished.
    bool step(int r)
    {
        if (pc[r] >= prog[r].size()) {
            EXPECT_EQ(ms_model_finalize(m, r, clock[r]), 0);
            state[r] = 2;
            return false;
        }
        Op &o = prog[r][pc[r]++];
        int rc = 0;
        switch (o.kind) {
        case Op::ISEND:
            rc = ms_model_isend(m, r, clock[r], o.req, o.comm, o.peer, o.tag, o.bytes, o.mode, err, sizeof err);
            if (rc == 0 && o.buf) rc = ms_model_buffer(m, r, o.req, o.buf);
            clock[r] += ms_model_isend_cost(m, o.bytes);
            break;
        case Op::IRECV:
            rc = ms_model_irecv(m, r, clock[r], o.req, o.comm, o.peer, o.tag, o.bytes, err, sizeof err);
            if (rc == 0 && o.notify) rc = ms_model_irecv_notify(m, r, o.req);
            if (rc == 0 && o.buf) rc = ms_model_buffer(m, r, o.req, o.buf);
            clock[r] += ms_model_irecv_cost(m, o.bytes);
            break;
        case Op::COMPUTE: clock[r] += o.ps; break;
        case Op::RMA:
            rc = ms_model_rma(m, r, clock[r], o.req, o.comm, o.peer, o.rma, o.bytes, o.result_bytes, err, sizeof err);
            clock[r] += ms_model_isend_cost(m, o.bytes);
            break;
        case Op::CANCEL: rc = ms_model_cancel(m, r, clock[r], o.req, err, sizeof err); break;
        case Op::FREE: rc = ms_model_forget(m, r, o.req, err, sizeof err); break;
        case Op::COLL: {
            ms_coll_args a = o.cargs;
            a.counts = o.counts.empty() ? nullptr : o.counts.data();
            a.ncounts = o.counts.size();
            rc = ms_model_icoll(m, r, clock[r], o.req, o.comm, &a, err, sizeof err);
            break;
        }
        case Op::WAIT:
            state[r] = 1;
            rc = ms_model_wait(m, r, clock[r], o.wmode, o.reqs.size(), o.reqs.data(), err, sizeof err);
            break;
        case Op::TEST_LOOP:
            state[r] = 1;
            tests[r]++;
            rc = ms_model_wait(m, r, clock[r], MS_TEST_ALL, 1, &o.req, err, sizeof err);
            break;
        case Op::PROBE:
            state[r] = 1;
            rc = ms_model_probe(m, r, clock[r], o.comm, o.peer, o.tag, o.blocking, err, sizeof err);
            break;
        }
        EXPECT_EQ(rc, 0) << "rank " << r << ": " << err;
        if (rc != 0) state[r] = 2;
        return state[r] == 0;
    }
    // Drive to the end. one_op: advance only the running rank with the smallest clock by one
    // call between model runs (the strictest interleaving); else each rank runs until it blocks.
    void run(bool one_op = false, int64_t max_iter = 50000000)
    {
        for (int64_t it = 0; it < max_iter; it++) {
            if (one_op) {
                int best = -1;
                for (int r = 0; r < n; r++)
                    if (state[r] == 0 && (best < 0 || clock[r] < clock[best])) best = r;
                if (best >= 0) step(best);
            } else {
                for (int r = 0; r < n; r++)
                    while (state[r] == 0 && step(r)) {
                    }
            }
            int64_t H = NM_TIME_NEVER;
            bool any_running = false;
            for (int r = 0; r < n; r++)
                if (state[r] == 0) {
                    any_running = true;
                    if (clock[r] < H) H = clock[r];
                }
            if (!any_running) {
                bool any_blocked = false;
                for (int r = 0; r < n; r++) any_blocked |= state[r] == 1;
                if (!any_blocked) return;
                if (ms_model_next_time(m) == NM_TIME_NEVER) {
                    deadlock = true;
                    return;
                }
            }
            EXPECT_EQ(ms_model_run_until(m, H), 0);
        }
        ADD_FAILURE() << "driver did not finish";
    }
    const ms_req_result &result(int rank, uint64_t req)
    {
        static ms_req_result none{};
        auto it = done[rank].find(req);
        if (it == done[rank].end()) {
            ADD_FAILURE() << "rank " << rank << " request " << req << " not completed";
            return none;
        }
        return it->second;
    }
    uint64_t total_sent()
    {
        uint64_t s = 0;
        for (int r = 0; r < n; r++) {
            ms_rank_stats st;
            ms_model_rank_stats(m, r, &st);
            s += st.msgs_sent;
        }
        return s;
    }
    uint64_t total_recv()
    {
        uint64_t s = 0;
        for (int r = 0; r < n; r++) {
            ms_rank_stats st;
            ms_model_rank_stats(m, r, &st);
            s += st.msgs_recv;
        }
        return s;
    }
};

}  // namespace mt
