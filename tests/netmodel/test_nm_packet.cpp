// The packet engines (ethernet, avici, sci) against their analytic limits: store-and-forward
// latency and link-rate throughput (ethernet), line-card/fabric latency and output-port rate
// (avici), ring and B-Link saturation of seed 004 eqs. 1-5 (sci). Closed forms: netmodel/README.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

extern "C" {
#include "netmodel.h"
}
#include "nm_internal.h"

namespace {

struct Net {
    nm_config *cfg = nm_config_create();
    nm_topology *topo = nullptr;
    nm_network *net = nullptr;
    std::vector<nm_delivery> got, dropped;
    std::string err;
    Net(const char *spec, std::initializer_list<const char *> sets)
    {
        char e[512];
        for (const char *s : sets)
            if (nm_config_set(cfg, s, "test", e, sizeof e) != 0) { err = e; return; }
        topo = nm_topology_load(spec, cfg, e, sizeof e);
        if (!topo) { err = e; return; }
        net = nm_network_create(cfg, topo, e, sizeof e);
        if (!net) { err = e; return; }
        nm_network_set_callbacks(net, on_deliver, on_drop, this);
    }
    ~Net()
    {
        nm_network_destroy(net);
        nm_topology_destroy(topo);
        nm_config_destroy(cfg);
    }
    static void on_deliver(void *u, const nm_delivery *d) { static_cast<Net *>(u)->got.push_back(*d); }
    static void on_drop(void *u, const nm_delivery *d) { static_cast<Net *>(u)->dropped.push_back(*d); }
    // One packet on an idle network: its latency.
    nm_time_t latency(int s, int d, uint64_t payload)
    {
        got.clear();
        nm_time_t t0 = nm_network_now(net);
        EXPECT_EQ(nm_network_inject(net, s, d, payload, t0, 7), 0);
        EXPECT_EQ(nm_network_run(net), 0);
        EXPECT_EQ(got.size(), 1u);
        return got.empty() ? -1 : got[0].deliver_time - t0;
    }
};

const nm_time_t NS = 1000;

// ---- ethernet -----------------------------------------------------------------------------

// Store-and-forward: every link carries the whole frame (preamble + max(P + header, 64 B)) before
// the next may start; every switch adds its forwarding latency; each cable its propagation.
nm_time_t eth_frame_ps(uint64_t p) { return (nm_time_t)(8 + std::max<uint64_t>(p + 18, 64)) * 8 * NS; }

TEST(PacketEthernet, StoreAndForwardLatency)
{
    for (nm_time_t s : {(nm_time_t)0, (nm_time_t)404 * NS, (nm_time_t)20000 * NS}) {
        std::string sl = "ethernet.switch_latency=" + std::to_string(s);
        Net N("gige-tree:2:3:2", {"network.engine=ethernet", "network.link_rate=1Gb/s", "network.link_length=2m",
                                  "network.propagation_velocity=2e8m/s", sl.c_str()});
        ASSERT_TRUE(N.net) << N.err;
        nm_time_t prop = 10 * NS;
        for (uint64_t p : {0, 1, 46, 47, 100, 1000, 1500}) {
            // one switch (same edge switch): 2 links
            EXPECT_EQ(N.latency(0, 1, p), 2 * (eth_frame_ps(p) + prop) + s) << p;
            // three switches (edge, centre, edge): 4 links
            EXPECT_EQ(N.latency(0, 4, p), 4 * (eth_frame_ps(p) + prop) + 3 * s) << p;
        }
        // two frames (1500 + 500): the second follows the first (IFG included) on the first link
        // and waits at the switch's output port behind it
        nm_time_t f1 = eth_frame_ps(1500), f2 = eth_frame_ps(500), gap = 12 * 8 * NS;
        EXPECT_EQ(N.latency(0, 1, 2000), 2 * f1 + gap + f2 + 2 * prop + s);
    }
}

TEST(PacketEthernet, LinkRateThroughput)
{
    Net N("crossbar:4", {"network.engine=ethernet", "network.link_rate=1Gb/s"});
    ASSERT_TRUE(N.net) << N.err;
    // a train of full frames: one every (8 + 1518 + 12) bytes at 1 Gb/s = 1500/1538 of the rate
    for (int k = 0; k < 100; k++) ASSERT_EQ(nm_network_inject(N.net, 0, 1, 1500, 0, k), 0);
    ASSERT_EQ(nm_network_run(N.net), 0);
    ASSERT_EQ(N.got.size(), 100u);
    EXPECT_EQ(N.got[99].deliver_time - N.got[0].deliver_time, 99 * 1538 * 8 * NS);
    // jumbo frames: the same rule with a 9000-byte MTU
    Net J("crossbar:4", {"network.engine=ethernet", "network.link_rate=1Gb/s", "ethernet.mtu=9000"});
    ASSERT_TRUE(J.net) << J.err;
    EXPECT_EQ(J.latency(0, 1, 9000), 2 * (nm_time_t)(8 + 9018) * 8 * NS + 2 * J.topo->links[0].prop_ps);
}

TEST(PacketEthernet, PauseAvoidsLossThatTailDropSuffers)
{
    // three hosts send 300 frames each to one host: 3:1 overload of its port
    for (int pause : {0, 1}) {
        std::string ps = "ethernet.pause=" + std::to_string(pause);
        Net N("crossbar:4", {"network.engine=ethernet", "network.link_rate=1Gb/s", "ethernet.queue_bytes=64KiB",
                             "ethernet.pause_high=8KiB", "ethernet.pause_low=4KiB", ps.c_str()});
        ASSERT_TRUE(N.net) << N.err;
        for (int s = 1; s <= 3; s++)
            for (int k = 0; k < 300; k++) ASSERT_EQ(nm_network_inject(N.net, s, 0, 1500, 0, k), 0);
        ASSERT_EQ(nm_network_run(N.net), 0);
        if (pause) {
            EXPECT_EQ(N.dropped.size(), 0u);
            ASSERT_EQ(N.got.size(), 900u);
            // the receiving link stays saturated: 900 frames at its rate
            nm_time_t last = N.got.back().deliver_time;
            EXPECT_LT(last, 900 * 1538 * 8 * NS * 102 / 100);
        } else {
            EXPECT_GT(N.dropped.size(), 0u);
        }
    }
}

// Routes are taken on first use: a route longer than any before (7 links across a line of 6
// switches) grows every packet's path storage while another packet is in flight; both arrive as
// each would alone.
TEST(PacketEthernet, LongerRouteWhileInFlight)
{
    std::initializer_list<const char *> sets = {"network.engine=ethernet", "network.link_rate=1Gb/s",
                                                "network.link_length=2m", "network.propagation_velocity=2e8m/s",
                                                "ethernet.switch_latency=404ns"};
    const nm_time_t t1 = 50000 * NS, prop = 10 * NS, s = 404 * NS;
    Net A("array:6:2", sets);   // hosts 2i, 2i+1 on switch i
    ASSERT_TRUE(A.net) << A.err;
    ASSERT_EQ(nm_network_inject(A.net, 2, 3, 30000, 0, 1), 0);   // 20 frames on switch 1
    ASSERT_EQ(nm_network_run_until(A.net, t1), 0);
    ASSERT_TRUE(A.got.empty());
    ASSERT_EQ(nm_network_inject(A.net, 0, 11, 1000, t1, 2), 0);   // switch 0 to switch 5
    ASSERT_EQ(nm_network_run(A.net), 0);
    ASSERT_EQ(A.got.size(), 2u);
    Net B("array:6:2", sets);
    ASSERT_TRUE(B.net) << B.err;
    for (const nm_delivery &d : A.got) {
        if (d.cookie == 2) {
            EXPECT_EQ(d.deliver_time - t1, 7 * (eth_frame_ps(1000) + prop) + 6 * s);
        } else {
            EXPECT_EQ(d.deliver_time, B.latency(2, 3, 30000));
        }
    }
}

TEST(PacketEthernet, RefusesSwitchLoops)
{
    Net N("ring:4:2:1", {"network.engine=ethernet"});
    EXPECT_EQ(N.net, nullptr);
    EXPECT_NE(N.err.find("spanning tree"), std::string::npos) << N.err;
    Net T("ring:2:2:3", {"network.engine=ethernet"});   // parallel links between two switches: a trunk
    EXPECT_TRUE(T.net) << T.err;
}

TEST(PacketEthernet, SwitchMulticast)
{
    // seed 001's conventional GigE fan-out: one 2048-byte multicast from host 0 to the other 255
    for (int mc : {0, 1}) {
        std::string ms = "ethernet.multicast=" + std::to_string(mc);
        Net N("gige-tree:4:64:6", {"network.engine=ethernet", "network.link_rate=1Gb/s", "network.link_length=0.8m",
                                   "network.propagation_velocity=2e8m/s", "ethernet.switch_latency=404ns",
                                   "ethernet.queue_bytes=1MiB", ms.c_str()});
        ASSERT_TRUE(N.net) << N.err;
        EXPECT_EQ(nm_network_has_multicast(N.net), mc);
        std::vector<int> dst;
        std::vector<uint64_t> ck;
        for (int d = 1; d < 256; d++) {
            dst.push_back(d);
            ck.push_back(1000 + (uint64_t)d);
        }
        ASSERT_EQ(nm_network_inject_multicast(N.net, 0, 255, dst.data(), ck.data(), 2048, 0), 0);
        ASSERT_EQ(nm_network_run(N.net), 0);
        ASSERT_EQ(N.got.size(), 255u);
        std::vector<int> seen(256, 0);
        nm_time_t last = 0;
        for (const nm_delivery &d : N.got) {
            EXPECT_EQ(d.cookie, 1000 + (uint64_t)d.dst_host);
            seen[d.dst_host]++;
            last = std::max(last, d.deliver_time);
        }
        for (int d = 1; d < 256; d++) EXPECT_EQ(seen[d], 1) << d;
        if (mc) {
            // two frames (1500 + 548 B) through edge, centre and edge switch, the second behind the
            // first on every link: 3 (F1 + prop + s) + F1 + IFG + F2 + prop = 54.748 us
            nm_time_t f1 = eth_frame_ps(1500), f2 = eth_frame_ps(548), p = 4 * NS, sl = 404 * NS;
            EXPECT_EQ(last, 3 * (f1 + p + sl) + f1 + 12 * 8 * NS + f2 + p);
            nm_stats st;
            nm_network_stats(N.net, &st);
            // a frame crosses a link at most once (the tree: 256 host links, some trunk links)
            EXPECT_LE(st.char_hops, (uint64_t)(256 + 24) * (1538 + 586));
        } else {
            EXPECT_GE(last, 255 * (nm_time_t)(1538 + 586) * 8 * NS);   // the root's link, once per destination
        }
    }
}

// ---- avici --------------------------------------------------------------------------------

TEST(PacketAvici, FabricLatencyAndOutputPortRate)
{
    Net N("avici:4:4:4:2", {"network.engine=avici", "avici.hosts=fabric", "avici.fabric_rate=20Gb/s",
                            "avici.hop_latency=75ns", "avici.linecard_latency=23.7ns", "avici.flit_payload=64",
                            "avici.flit_header=8"});
    ASSERT_TRUE(N.net) << N.err;
    auto flits = [](uint64_t p) { return (nm_time_t)(std::max<uint64_t>((p + 63) / 64, 1) * 72) * 400; };
    for (uint64_t p : {1, 64, 65, 2048}) {
        for (int d : {1, 2, 4, 10, 42}) {   // same card, then 1, 1, 2.., fabric hops
            int hops = nm_topology_route_hops(N.topo, 0, d) - 1;
            // line card in, the whole packet into the fabric, wormhole head per hop, cut through
            // into the output port behind its first flit, line card out
            EXPECT_EQ(N.latency(0, d, p), 2 * 23700 + flits(p) + 75000 * hops + 72 * 400) << p << " to " << d;
        }
    }
    // seed 001's fabric minimum: 0.180 us for one hop
    EXPECT_EQ(N.latency(0, 2, 1), 180000);
    // fan-in: the output port at 20 Gb/s is the only bottleneck
    N.got.clear();
    nm_time_t t0 = nm_network_now(N.net);
    for (int s = 1; s < 32; s++)
        for (int k = 0; k < 4; k++) ASSERT_EQ(nm_network_inject(N.net, s, 0, 2048, t0, k), 0);
    ASSERT_EQ(nm_network_run(N.net), 0);
    ASSERT_EQ(N.got.size(), 124u);
    for (size_t i = 1; i < N.got.size(); i++)
        EXPECT_GE(N.got[i].deliver_time - N.got[i - 1].deliver_time, flits(2048));
    EXPECT_LT(N.got.back().deliver_time - t0, 124 * flits(2048) + 200000 + 4 * 75000);
}

TEST(PacketAvici, GigeHostsStoreAndForwardAtLineCards)
{
    for (const char *ingress : {"avici.gige_ingress=link", "avici.gige_ingress=delay"}) {
        Net N("avici:4:4:4", {"network.engine=avici", "avici.hosts=gige", "avici.gige_rate=1Gb/s",
                              "network.link_length=0m", ingress});
        ASSERT_TRUE(N.net) << N.err;
        // the Avici fabric latency plus two 64-byte frames (+ preamble) stored and forwarded
        nm_time_t fabric = 2 * 23700 + 72 * 400 + 75000 + 72 * 400;
        EXPECT_EQ(N.latency(0, 1, 1), fabric + 2 * 72 * 8 * NS) << ingress;
        // one host sending to many: its GigE link serialises (link) or not (delay)
        N.got.clear();
        nm_time_t t0 = nm_network_now(N.net);
        for (int d = 1; d < 64; d++) ASSERT_EQ(nm_network_inject(N.net, 0, d, 1500, t0, d), 0);
        ASSERT_EQ(nm_network_run(N.net), 0);
        nm_time_t span = N.got.back().deliver_time - t0;
        if (std::string(ingress).find("link") != std::string::npos)
            EXPECT_GE(span, 63 * 1538 * 8 * NS);
        else
            EXPECT_LT(span, 63 * 1538 * 8 * NS / 10);
    }
}

// ---- sci ------------------------------------------------------------------------------------

// Saturated all-to-all (every node keeps 8 packets of one 128-byte request outstanding to random
// destinations): accepted payload per node, against seed 004 eqs. 1-5.
double sci_saturation(int r, int f)
{
    std::string spec = "sci-torus:" + std::to_string(r) + ":" + std::to_string(f);
    Net N(spec.c_str(), {"network.engine=sci", "network.link_rate=667MB/s", "sci.blink_rate=640MB/s"});
    EXPECT_TRUE(N.net) << N.err;
    if (!N.net) return 0;
    int n = nm_topology_hosts(N.topo);
    std::vector<int> out(n, 0);
    struct U { Net *N; std::vector<int> *out; } u{&N, &out};
    nm_network_set_callbacks(
        N.net,
        [](void *p, const nm_delivery *d) {
            U *u = static_cast<U *>(p);
            (*u->out)[d->src_host]--;
            u->N->got.push_back(*d);
        },
        nullptr, &u);
    uint64_t rng = 12345;
    nm_time_t t = 0, warm = 20000 * NS, end = 120000 * NS;
    uint64_t bytes0 = 0;
    while (t < end) {
        for (int s = 0; s < n; s++)
            while (out[s] < 8) {
                rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                int d = (int)((rng >> 33) % (uint64_t)(n - 1));
                if (d >= s) d++;
                EXPECT_EQ(nm_network_inject(N.net, s, d, 128, t, 0), 0);
                out[s]++;
            }
        t += 100 * NS;
        EXPECT_EQ(nm_network_run_until(N.net, t), 0);
        if (t == warm) {
            nm_stats st;
            nm_network_stats(N.net, &st);
            bytes0 = st.payload_bytes_delivered;
        }
    }
    nm_stats st;
    nm_network_stats(N.net, &st);
    return (double)(st.payload_bytes_delivered - bytes0) / ((double)(end - warm) * 1e-12) / n;   // B/s per node
}

double sci_eq(int r, int f)   // seed 004 eqs. 1-5, B/s per node
{
    double N = std::pow(r, f), eff = 128.0 / 192.0;
    double hot_link = N * (r - 1) / 2.0, hot_blink = 2 * (N - 1);
    for (int d = 2; d <= f; d++) {
        double c = std::tgamma(f + 1) / (std::tgamma(d + 1) * std::tgamma(f - d + 1));
        hot_blink += (d - 1) * c * std::pow(r - 1, d);
    }
    double b_link = (N - 1) / hot_link * 667e6 * eff, b_blink = (N - 1) / hot_blink * 640e6 * eff;
    return std::min(b_link, b_blink);
}

TEST(PacketSci, SaturationMatchesSeed004Equations)
{
    for (auto rf : {std::pair<int, int>{8, 1}, {4, 2}, {3, 3}, {6, 1}, {5, 2}}) {
        double sim = sci_saturation(rf.first, rf.second), eq = sci_eq(rf.first, rf.second);
        EXPECT_NEAR(sim / eq, 1.0, 0.05) << rf.first << ":" << rf.second << " sim " << sim / 1e6 << " MB/s, eqs "
                                        << eq / 1e6 << " MB/s";
    }
}

TEST(PacketSci, RingLatencyAndEcho)
{
    Net N("sci-torus:4:1", {"network.engine=sci", "network.link_rate=667MB/s", "sci.blink_rate=640MB/s",
                            "network.link_length=0m"});
    ASSERT_TRUE(N.net) << N.err;
    // one 128-byte request (176 B): the first ring link cuts through behind its 16-byte header on
    // the source's B-Link, each further link behind it on the ring; the destination's B-Link
    // stores it whole
    auto t = [](double bytes, double rate) { return (nm_time_t)std::llround(bytes * 8e12 / (rate * 8)); };
    for (int k = 1; k <= 3; k++) {
        nm_time_t want = t(16, 640e6) + (k - 1) * t(16, 667e6) + t(176, 667e6) + t(176, 640e6);
        EXPECT_NEAR((double)N.latency(0, k, 128), (double)want, 4.0) << k;
    }
    // the echo comes back: the packet is freed, nothing is left in flight
    nm_stats st;
    nm_network_stats(N.net, &st);
    EXPECT_EQ(st.packets_delivered, 3u);
    EXPECT_EQ(nm_network_next_time(N.net), NM_TIME_NEVER);
}

}  // namespace
