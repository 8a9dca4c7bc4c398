// The analytic engine against its closed forms (netmodel/README.md):
//   uncontended latency = tau*(P + 4 + h) + sum(prop) + h*d   (seed 000 eq. 3 for h = 1, d = 0)
//   back-to-back packets: D_k = D_0 + k*max(ns, nr, W*tau), W = h + 4 + P + 1 + 1
//   fan-in: the second packet waits one packet-time (T+P+C+G)*tau on the receiver's channel.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "netmodel.h"
#include "nm_internal.h"

namespace {

struct Rec {
    std::vector<nm_delivery> got, dropped;
};

void on_deliver(void *u, const nm_delivery *d) { static_cast<Rec *>(u)->got.push_back(*d); }
void on_drop(void *u, const nm_delivery *d) { static_cast<Rec *>(u)->dropped.push_back(*d); }

struct Net {
    nm_config *cfg = nm_config_create();
    nm_topology *topo = nullptr;
    nm_network *net = nullptr;
    Rec rec;
    explicit Net(const char *spec, std::vector<std::string> sets = {})
    {
        char err[512] = "";
        for (auto &s : sets) {
            if (nm_config_set(cfg, s.c_str(), "test", err, sizeof err) != 0) ADD_FAILURE() << err;
        }
        topo = nm_topology_load(spec, cfg, err, sizeof err);
        if (!topo) { ADD_FAILURE() << err; return; }
        net = nm_network_create(cfg, topo, err, sizeof err);
        if (!net) { ADD_FAILURE() << err; return; }
        nm_network_set_callbacks(net, on_deliver, on_drop, &rec);
    }
    ~Net()
    {
        nm_network_destroy(net);
        nm_topology_destroy(topo);
        nm_config_destroy(cfg);
    }
};

// Independent of the engine: tau and prop from the seed 000 Table 2 values.
const int64_t TAU = std::llround(8e12 / 1.28e9);          // 6250 ps
const int64_t PROP = std::llround(10.0 / 1.8e8 * 1e12);   // 55556 ps

TEST(Analytic, Eq3OnCrossbar2ForEveryPayload)
{
    Net n("crossbar:2");
    ASSERT_NE(n.net, nullptr);
    EXPECT_STREQ(nm_network_engine_name(n.net), "analytic");
    const nm_time_t spacing = 1000000000;  // 1 ms apart: never contended
    for (uint64_t P = 0; P <= 8192; P++) {
        nm_time_t t0 = (nm_time_t)P * spacing + 17;
        ASSERT_EQ(nm_network_inject(n.net, (int)(P % 2), (int)(1 - P % 2), P, t0, P), 0);
    }
    ASSERT_EQ(nm_network_run(n.net), 0);
    ASSERT_EQ(n.rec.got.size(), 8193u);
    for (uint64_t P = 0; P <= 8192; P++) {
        const nm_delivery &d = n.rec.got[P];
        ASSERT_EQ(d.cookie, P);
        ASSERT_EQ(d.payload_bytes, P);
        // seed 000 eq. 3 with C = 1: 8(1 + 3 + P + 1)/R + 2L/V, in integer ps per link
        nm_time_t want = TAU * (nm_time_t)(1 + 3 + P + 1) + 2 * PROP;
        ASSERT_EQ(d.deliver_time - d.inject_time, want) << "P=" << P;
    }
    nm_stats st;
    nm_network_stats(n.net, &st);
    EXPECT_EQ(st.packets_injected, 8193u);
    EXPECT_EQ(st.packets_delivered, 8193u);
    EXPECT_EQ(st.packets_dropped, 0u);
    EXPECT_EQ(st.payload_bytes_delivered, 8192u * 8193u / 2);
}

TEST(Analytic, MultiHopWithSwitchDelay)
{
    // triangle18: hosts 0 and 6 are two switches apart; d = 150 ns (seed 002 sec 5.3)
    Net n("triangle18", {"network.switch_delay=150ns"});
    ASSERT_NE(n.net, nullptr);
    const int64_t d = 150000;
    for (uint64_t P : {0ull, 1ull, 4ull, 64ull, 1000ull, 8192ull}) {
        n.rec.got.clear();
        nm_time_t t0 = nm_network_now(n.net) + 5;
        ASSERT_EQ(nm_network_inject(n.net, 0, 6, P, t0, 0), 0);
        ASSERT_EQ(nm_network_inject(n.net, 1, 2, P, t0, 1), 0);  // same switch, h = 1
        ASSERT_EQ(nm_network_run(n.net), 0);
        ASSERT_EQ(n.rec.got.size(), 2u);
        for (auto &g : n.rec.got) {
            int64_t h = nm_topology_route_hops(n.topo, g.src_host, g.dst_host);
            EXPECT_EQ(g.deliver_time - g.inject_time, TAU * (int64_t)(P + 4 + h) + (h + 1) * PROP + h * d)
                << "P=" << P << " h=" << h;
        }
    }
}

TEST(Analytic, MixedRatesUseTheBottleneck)
{
    // uniform faster links: same closed form with the faster tau
    Net f("crossbar:2", {"network.link_rate=2.56Gb/s", "network.link_length=0m"});
    ASSERT_NE(f.net, nullptr);
    ASSERT_EQ(nm_network_inject(f.net, 0, 1, 100, 0, 0), 0);
    nm_network_run(f.net);
    ASSERT_EQ(f.rec.got.size(), 1u);
    EXPECT_EQ(f.rec.got[0].deliver_time, 3125 * (100 + 5));
}

TEST(Analytic, BackToBackPacketsClosedForm)
{
    for (auto sets : std::vector<std::vector<std::string>>{
             {},
             {"network.switch_delay=150ns"},
             {"network.nic_send_cost=1us", "network.nic_recv_cost=300ns"},
             {"network.nic_send_cost=100us", "network.nic_recv_cost=300ns"},
             {"network.nic_recv_cost=200us"}}) {
        Net n("triangle18", sets);
        ASSERT_NE(n.net, nullptr);
        const int64_t d = nm_config_int(n.cfg, "network.switch_delay");
        const int64_t ns = nm_config_int(n.cfg, "network.nic_send_cost");
        const int64_t nr = nm_config_int(n.cfg, "network.nic_recv_cost");
        for (int dst : {1, 7}) {
            n.rec.got.clear();
            const int64_t P = 4096, K = 10;
            const int64_t h = nm_topology_route_hops(n.topo, 0, dst);
            const int64_t W = h + 4 + P + 1 + 1;  // route bytes, type, payload, CRC, GAP
            nm_time_t t0 = nm_network_now(n.net) + 1000;
            for (int k = 0; k < K; k++) ASSERT_EQ(nm_network_inject(n.net, 0, dst, P, t0, (uint64_t)k), 0);
            ASSERT_EQ(nm_network_run(n.net), 0);
            ASSERT_EQ(n.rec.got.size(), (size_t)K);
            const int64_t step = std::max({ns, nr, W * TAU});
            for (int k = 0; k < K; k++) {
                const nm_delivery &g = n.rec.got[k];
                EXPECT_EQ(g.cookie, (uint64_t)k);
                EXPECT_EQ(g.deliver_time,
                          t0 + ns + nr + TAU * (P + 4 + h) + (h + 1) * PROP + h * d + k * step)
                    << "k=" << k << " h=" << h;
            }
        }
    }
}

TEST(Analytic, FanInQueuesAtTheReceiver)
{
    for (uint64_t P : {0ull, 64ull, 8192ull}) {
        Net n("crossbar:3");
        ASSERT_NE(n.net, nullptr);
        ASSERT_EQ(nm_network_inject(n.net, 0, 2, P, 1000, 0), 0);
        ASSERT_EQ(nm_network_inject(n.net, 1, 2, P, 1000, 1), 0);
        ASSERT_EQ(nm_network_run(n.net), 0);
        ASSERT_EQ(n.rec.got.size(), 2u);
        EXPECT_EQ(n.rec.got[0].cookie, 0u);  // equal times: first injected goes first
        EXPECT_EQ(n.rec.got[0].deliver_time, 1000 + TAU * (int64_t)(P + 5) + 2 * PROP);
        // one packet-time of the receiver's channel: type + payload + CRC + GAP characters
        EXPECT_EQ(n.rec.got[1].deliver_time - n.rec.got[0].deliver_time, TAU * (int64_t)(4 + P + 1 + 1));
        // busy time: each source channel W_0 = 1+4+P+1+1, the receiver's channel twice W_1
        std::vector<nm_time_t> busy(2 * 3);
        ASSERT_EQ(nm_network_link_busy(n.net, busy.data(), busy.size()), 6u);
        nm_time_t sum = 0;
        for (auto b : busy) sum += b;
        EXPECT_EQ(sum, 2 * TAU * (int64_t)(P + 7) + 2 * TAU * (int64_t)(P + 6));
    }
}

TEST(Analytic, RunUntilAndTimeRules)
{
    Net n("crossbar:2");
    ASSERT_NE(n.net, nullptr);
    EXPECT_EQ(nm_network_next_time(n.net), NM_TIME_NEVER);
    ASSERT_EQ(nm_network_inject(n.net, 0, 1, 0, 0, 7), 0);
    const nm_time_t lat = TAU * 5 + 2 * PROP;
    EXPECT_EQ(nm_network_next_time(n.net), 0);
    ASSERT_EQ(nm_network_run_until(n.net, lat), 0);  // events strictly before the limit
    EXPECT_TRUE(n.rec.got.empty());
    EXPECT_EQ(nm_network_now(n.net), lat);
    EXPECT_EQ(nm_network_next_time(n.net), lat);
    EXPECT_LT(nm_network_inject(n.net, 0, 1, 0, lat - 1, 8), 0);  // earlier than now
    ASSERT_EQ(nm_network_run_until(n.net, lat + 1), 0);
    ASSERT_EQ(n.rec.got.size(), 1u);
    EXPECT_EQ(n.rec.got[0].deliver_time, lat);
    EXPECT_EQ(nm_network_now(n.net), lat + 1);
    // bad hosts
    EXPECT_LT(nm_network_inject(n.net, 0, 0, 1, lat + 1, 0), 0);
    EXPECT_LT(nm_network_inject(n.net, 0, 2, 1, lat + 1, 0), 0);
    EXPECT_LT(nm_network_inject(n.net, -1, 1, 1, lat + 1, 0), 0);
    nm_stats st;
    nm_network_stats(n.net, &st);
    EXPECT_EQ(st.packets_injected, 1u);
}

// A callback that answers every delivery with a reply, the way an MPI layer would.
struct PingPong {
    nm_network *net;
    int left;
    std::vector<nm_time_t> times;
};
void pong(void *u, const nm_delivery *d)
{
    auto *pp = static_cast<PingPong *>(u);
    pp->times.push_back(d->deliver_time);
    if (pp->left-- > 0) {
        ASSERT_EQ(nm_network_inject(pp->net, d->dst_host, d->src_host, 8, d->deliver_time, 0), 0);
    }
}

TEST(Analytic, InjectFromCallback)
{
    Net n("crossbar:2");
    PingPong pp{n.net, 9, {}};
    nm_network_set_callbacks(n.net, pong, nullptr, &pp);
    ASSERT_EQ(nm_network_inject(n.net, 0, 1, 8, 0, 0), 0);
    ASSERT_EQ(nm_network_run(n.net), 0);
    ASSERT_EQ(pp.times.size(), 10u);
    for (size_t i = 0; i < pp.times.size(); i++)
        EXPECT_EQ(pp.times[i], (nm_time_t)(i + 1) * (TAU * 13 + 2 * PROP));
}

TEST(Analytic, TimeoutDrops)
{
    // 8 packets of 8 KB fan in; with a 30 us timeout the late ones are dropped
    Net n("crossbar:9", {"network.timeout=30us"});
    for (int s = 0; s < 8; s++) ASSERT_EQ(nm_network_inject(n.net, s, 8, 8192, 0, (uint64_t)s), 0);
    ASSERT_EQ(nm_network_run(n.net), 0);
    ASSERT_EQ(n.rec.got.size() + n.rec.dropped.size(), 8u);
    EXPECT_FALSE(n.rec.dropped.empty());
    for (auto &g : n.rec.dropped) EXPECT_GT(g.deliver_time - g.inject_time, 30000000);
    for (auto &g : n.rec.got) EXPECT_LE(g.deliver_time - g.inject_time, 30000000);
    nm_stats st;
    nm_network_stats(n.net, &st);
    EXPECT_EQ(st.packets_dropped, n.rec.dropped.size());
}

std::vector<nm_delivery> random_run(const char *spec, uint32_t seed)
{
    Net n(spec, {"network.route_ties=spread", "network.switch_delay=150ns"});
    std::mt19937 rng(seed);
    int H = nm_topology_hosts(n.topo);
    nm_time_t t = 0;
    for (int i = 0; i < 20000; i++) {
        t += rng() % 20000;
        int s = (int)(rng() % (uint32_t)H), d = (int)(rng() % (uint32_t)(H - 1));
        if (d >= s) d++;
        EXPECT_EQ(nm_network_inject(n.net, s, d, rng() % 4096, t, (uint64_t)i), 0);
        if (i % 1000 == 999) nm_network_run_until(n.net, t);
    }
    nm_network_run(n.net);
    nm_stats st;
    nm_network_stats(n.net, &st);
    EXPECT_EQ(st.packets_delivered, 20000u);
    return n.rec.got;
}

TEST(Analytic, Deterministic)
{
    for (const char *spec : {"clos64", "system96", "ring:6:8:2"}) {
        auto a = random_run(spec, 42), b = random_run(spec, 42);
        ASSERT_EQ(a.size(), b.size());
        nm_time_t last = 0;
        for (size_t i = 0; i < a.size(); i++) {
            EXPECT_EQ(a[i].cookie, b[i].cookie);
            EXPECT_EQ(a[i].deliver_time, b[i].deliver_time);
            EXPECT_GE(a[i].deliver_time, last);  // callbacks in time order
            last = a[i].deliver_time;
            // never faster than the uncontended closed form of one switch
            EXPECT_GE(a[i].deliver_time - a[i].inject_time, TAU * (int64_t)(a[i].payload_bytes + 5));
        }
    }
}

TEST(Analytic, MyrinetEngineSelection)
{
    nm_config *c = nm_config_create();
    char err[512];
    ASSERT_EQ(nm_config_set(c, "network.engine=myrinet", "--set", err, sizeof err), 0);
    nm_topology *t = nm_topology_load("crossbar:2", c, err, sizeof err);
    ASSERT_NE(t, nullptr);
    nm_network *n = nm_network_create(c, t, err, sizeof err);
    if (!n) {  // not built yet: the error says so
        EXPECT_NE(std::string(err).find("myrinet"), std::string::npos) << err;
    } else {
        EXPECT_STREQ(nm_network_engine_name(n), "myrinet");
    }
    nm_network_destroy(n);
    nm_topology_destroy(t);
    nm_config_destroy(c);
}

}  // namespace
