// Topology: the text format and its errors, every generator (counts, connectivity, hop counts),
// and the validity of every computed route.
#include <gtest/gtest.h>

#include <ctime>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>

#include "netmodel.h"
#include "nm_internal.h"
#include "nm_test_util.h"

namespace {

struct Topo {
    nm_topology *t = nullptr;
    std::string err;
    Topo(const std::string &spec, const nm_config *cfg = nullptr)
    {
        char e[512] = "";
        t = nm_topology_load(spec.c_str(), cfg, e, sizeof e);
        err = e;
    }
    ~Topo() { nm_topology_destroy(t); }
};

// The generators' own shortest routes (the default, auto, switches to up*/down* where they can
// deadlock on a wormhole engine).
struct Cfg {
    nm_config *c = nm_config_create();
    explicit Cfg(std::initializer_list<const char *> sets)
    {
        char e[256];
        for (const char *s : sets) EXPECT_EQ(nm_config_set(c, s, "test", e, sizeof e), 0) << e;
    }
    ~Cfg() { nm_config_destroy(c); }
};
const nm_config *shortest()
{
    static Cfg cfg({"network.routing=shortest"});
    return cfg.c;
}

// Every route starts at its source, follows connected channels through the given output
// ports, and ends at its destination.
void check_routes(const nm_topology *t)
{
    for (int s = 0; s < t->nhosts; s++) {
        for (int d = 0; d < t->nhosts; d++) {
            const nm_route *r = nm_route_get(t, s, d);
            if (s == d) { EXPECT_EQ(r->nhops, -1); continue; }
            ASSERT_GE(r->nhops, 0) << s << "->" << d;
            ASSERT_EQ(r->nchannels, r->nhops + 1);
            int k, id, port;
            nm_channel_from(t, r->channel[0], &k, &id, &port);
            ASSERT_EQ(k, NM_NODE_HOST);
            ASSERT_EQ(id, s);
            for (int i = 0; i < r->nhops; i++) {
                nm_channel_to(t, r->channel[i], &k, &id, &port);
                ASSERT_EQ(k, NM_NODE_SWITCH);
                int sw = id;
                nm_channel_from(t, r->channel[i + 1], &k, &id, &port);
                ASSERT_EQ(k, NM_NODE_SWITCH);
                ASSERT_EQ(id, sw);
                ASSERT_EQ(port, r->out_port[i]);
            }
            nm_channel_to(t, r->channel[r->nhops], &k, &id, &port);
            ASSERT_EQ(k, NM_NODE_HOST);
            ASSERT_EQ(id, d);
        }
    }
}

TEST(Topology, ParseFile)
{
    nmt::TempDir d;
    std::string p = d.write("t.topo",
                            "# two switches, three hosts\n"
                            "switch S0 ports 8\n"
                            "switch S1            # default ports: network.switch_ports\n"
                            "host A\nhost B\nhost C\n"
                            "link A:0 S0:0\n"
                            "link B:0 S0:1 rate=2.56Gb/s length=5m velocity=2e8m/s\n"
                            "link S0:7 S1:7\n"
                            "link C:0 S1:2\n"
                            "route A C 7 2\n");
    Topo T(p);
    ASSERT_NE(T.t, nullptr) << T.err;
    EXPECT_EQ(nm_topology_hosts(T.t), 3);
    EXPECT_EQ(nm_topology_switches(T.t), 2);
    EXPECT_EQ(nm_topology_links(T.t), 4);
    EXPECT_EQ(T.t->switches[1].nports, 8);
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 1), 1);
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 2), 2);
    EXPECT_EQ(nm_topology_route_hops(T.t, 2, 1), 2);
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 0), -1);
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 9), -1);
    EXPECT_EQ(T.t->route_given_count, 1);
    const nm_link &fast = T.t->links[1];
    EXPECT_EQ(fast.char_ps, 3125);     // 8e12 / 2.56e9
    EXPECT_EQ(fast.prop_ps, 25000);    // 5 m / 2e8 m/s
    const nm_link &def = T.t->links[0];
    EXPECT_EQ(def.char_ps, 6250);      // 1.28 Gb/s
    EXPECT_EQ(def.prop_ps, 55556);     // 10 m / 1.8e8 m/s, rounded
    check_routes(T.t);
}

TEST(Topology, DirectHostToHost)
{
    nmt::TempDir d;
    std::string p = d.write("h.topo", "host a\nhost b\nlink a:0 b:0\n");
    Topo T(p);
    ASSERT_NE(T.t, nullptr) << T.err;
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 1), 0);
    check_routes(T.t);
}

TEST(Topology, ParseErrorsNameFileAndLine)
{
    nmt::TempDir d;
    const std::string hdr = "switch S0 ports 4\nhost H0\nhost H1\n";  // lines 1-3
    struct Case { std::string body; int line; const char *what; };
    const Case cases[] = {
        {"hots H2\n", 4, "expected 'host', 'switch', 'link' or 'route', got 'hots'"},
        {"link H0:0\n", 4, "expected 'link NODE:PORT NODE:PORT'"},
        {"link H0:0 S9:1\n", 4, "expected a declared host or switch, got 'S9'"},
        {"link H0:0 S0:4\n", 4, "expected a port of S0 (0..3), got '4'"},
        {"link H0:1 S0:0\n", 4, "expected a port of H0 (0..0), got '1'"},
        {"link H0 S0:0\n", 4, "expected NODE:PORT, got 'H0'"},
        {"link H0:0 S0:0\nlink H1:0 S0:0\n", 5, "port S0:0 is already connected"},
        {"link H0:0 S0:0 rate=fast\n", 4, "expected a bit rate in b/s, got 'fast'"},
        {"link H0:0 S0:0 speed=1\n", 4, "expected rate=, length= or velocity=, got 'speed=1'"},
        {"switch S0\n", 4, "already declared"},
        {"switch S1 ports 0\n", 4, "expected a port count"},
        {"switch S1 port 4\n", 4, "expected 'ports', got 'port'"},
        {"host H9 extra\n", 4, "expected end of line, got 'extra'"},
        {"host a:b\n", 4, "expected a name"},
        {"link S0:0 S0:1\n", 4, "cannot join S0 to itself"},
        {"link H0:0 S0:0\nlink H1:0 S0:1\nroute H0 H1 2\n", 6, "expected a connected port of switch 'S0', got 2"},
        {"link H0:0 S0:0\nlink H1:0 S0:1\nroute H0 H1 1 1\n", 6, "reaches host 'H1' after 1"},
        {"link H0:0 S0:0\nlink H1:0 S0:1\nroute H0 H1\n", 6, "expected another route port"},
        {"link H0:0 S0:0\nlink H1:0 S0:1\nroute H0 H0 1\n", 6, "two different hosts"},
        {"link H0:0 S0:0\nlink H1:0 S0:1\nroute H0 Hx 1\n", 6, "expected a declared host, got 'Hx'"},
        {"link H0:0 S0:0\n", 3, "expected a 'link' for host 'H1'"},
    };
    int i = 0;
    for (const Case &c : cases) {
        std::string p = d.write("e" + std::to_string(i++) + ".topo", hdr + c.body);
        Topo T(p);
        EXPECT_EQ(T.t, nullptr) << c.body;
        std::string want = p + ":" + std::to_string(c.line) + ": ";
        EXPECT_EQ(T.err.rfind(want, 0), 0u) << "got: " << T.err << "\nwant prefix: " << want;
        EXPECT_NE(T.err.find(c.what), std::string::npos) << "got: " << T.err << "\nwant: " << c.what;
    }
    // disconnected: two islands
    std::string p = d.write("island.topo", "switch A\nswitch B\nhost x\nhost y\nlink x:0 A:0\nlink y:0 B:0\n");
    Topo T(p);
    EXPECT_EQ(T.t, nullptr);
    EXPECT_EQ(T.err, p + ":3: host 'x' cannot reach host 'y'");
    std::string e = d.write("empty.topo", "# nothing\n\n");
    Topo E(e);
    EXPECT_EQ(E.t, nullptr);
    EXPECT_EQ(E.err.rfind(e + ":2: expected at least one 'host' line", 0), 0u) << E.err;
    Topo M(d.path + "/missing.topo");
    EXPECT_EQ(M.t, nullptr);
    EXPECT_NE(M.err.find("missing.topo"), std::string::npos);
}

struct GenCase {
    const char *spec;
    int hosts, switches, links, min_hops, max_hops;
};

TEST(Topology, Generators)
{
    const GenCase cases[] = {
        {"crossbar:2", 2, 1, 2, 1, 1},
        {"crossbar:16", 16, 1, 16, 1, 1},
        {"auto:2", 2, 1, 2, 1, 1},
        {"auto:8", 8, 1, 8, 1, 1},
        {"auto:9", 9, 3, 9 + 3, 1, 2},
        {"auto:16", 16, 3, 16 + 3, 1, 2},
        {"auto:18", 18, 3, 18 + 3, 1, 2},
        {"auto:40", 40, 19, 40 + 18 + 6, 1, 5},
        {"triangle18", 18, 3, 21, 1, 2},
        {"system96", 96, 19, 96 + 18 + 6, 1, 5},
        {"clos64", 64, 16, 64 + 64, 1, 3},
        {"array:1:16", 16, 1, 16, 1, 1},
        {"array:4:8", 32, 4, 32 + 3, 1, 4},
        {"ring:6:8:2", 48, 6, 48 + 12, 1, 4},
        {"ring:2:4:1", 8, 2, 8 + 2, 1, 2},
        {"ring:1:8:1", 8, 1, 8, 1, 1},
    };
    for (const GenCase &c : cases) {
        Topo T(c.spec, shortest());
        ASSERT_NE(T.t, nullptr) << c.spec << ": " << T.err;
        EXPECT_STREQ(nm_topology_name(T.t), c.spec);
        EXPECT_EQ(nm_topology_hosts(T.t), c.hosts) << c.spec;
        EXPECT_EQ(nm_topology_switches(T.t), c.switches) << c.spec;
        EXPECT_EQ(nm_topology_links(T.t), c.links) << c.spec;
        int mn = 1 << 30, mx = -1;
        for (int s = 0; s < c.hosts; s++)
            for (int d = 0; d < c.hosts; d++) {
                if (s == d) continue;
                int h = nm_topology_route_hops(T.t, s, d);
                mn = std::min(mn, h);
                mx = std::max(mx, h);
            }
        EXPECT_EQ(mn, c.min_hops) << c.spec;
        EXPECT_EQ(mx, c.max_hops) << c.spec;
        check_routes(T.t);
    }
}

TEST(Topology, GeneratorHopCounts)
{
    {   // triangle18: 6 hosts per switch
        Topo T("triangle18");
        ASSERT_NE(T.t, nullptr);
        for (int s = 0; s < 18; s++)
            for (int d = 0; d < 18; d++)
                if (s != d) { EXPECT_EQ(nm_topology_route_hops(T.t, s, d), s / 6 == d / 6 ? 1 : 2); }
    }
    {   // array:S:K: |i-j| + 1 switches
        Topo T("array:5:3");
        ASSERT_NE(T.t, nullptr);
        for (int s = 0; s < 15; s++)
            for (int d = 0; d < 15; d++)
                if (s != d) { EXPECT_EQ(nm_topology_route_hops(T.t, s, d), std::abs(s / 3 - d / 3) + 1); }
    }
    {   // ring: shorter way round
        Topo T("ring:7:2:3", shortest());
        ASSERT_NE(T.t, nullptr);
        for (int s = 0; s < 14; s++)
            for (int d = 0; d < 14; d++) {
                if (s == d) continue;
                int k = std::abs(s / 2 - d / 2);
                EXPECT_EQ(nm_topology_route_hops(T.t, s, d), std::min(k, 7 - k) + 1);
            }
    }
    {   // clos64: same leaf 1, otherwise leaf-spine-leaf
        Topo T("clos64");
        ASSERT_NE(T.t, nullptr);
        for (int s = 0; s < 64; s++)
            for (int d = 0; d < 64; d++)
                if (s != d) { EXPECT_EQ(nm_topology_route_hops(T.t, s, d), s / 8 == d / 8 ? 1 : 3); }
    }
    {   // system96: same switch 1, same cluster 2, other cluster up to 5
        Topo T("system96");
        ASSERT_NE(T.t, nullptr);
        auto sw = [](int h) { int c = h / 16, r = h % 16; return 3 * c + (r < 5 ? 0 : r < 11 ? 1 : 2); };
        for (int s = 0; s < 96; s++)
            for (int d = 0; d < 96; d++) {
                if (s == d) continue;
                int h = nm_topology_route_hops(T.t, s, d);
                if (sw(s) == sw(d)) {
                    EXPECT_EQ(h, 1);
                } else if (s / 16 == d / 16) {
                    EXPECT_EQ(h, 2);
                } else {
                    // A switches (uplinked) are one hop from the centre
                    int hs = sw(s) % 3 == 0 ? 1 : 2, hd = sw(d) % 3 == 0 ? 1 : 2;
                    EXPECT_EQ(h, hs + 1 + hd) << s << "->" << d;
                }
            }
    }
}

TEST(Topology, AutoUsesSwitchPorts)
{
    nm_config *c = nm_config_create();
    char err[256];
    ASSERT_EQ(nm_config_set(c, "network.switch_ports=16", "--set", err, sizeof err), 0);
    Topo T("auto:12", c);
    ASSERT_NE(T.t, nullptr) << T.err;
    EXPECT_EQ(nm_topology_switches(T.t), 1);
    EXPECT_EQ(T.t->switches[0].nports, 16);
    EXPECT_EQ(nm_topology_hosts(T.t), 12);
    ASSERT_EQ(nm_config_set(c, "network.link_rate=2 Gb/s", "--set", err, sizeof err), 0);
    Topo U("crossbar:2", c);
    ASSERT_NE(U.t, nullptr);
    EXPECT_EQ(U.t->links[0].char_ps, 4000);
    nm_config_destroy(c);
}

TEST(Topology, SpreadTiesUseAllSpines)
{
    nm_config *c = nm_config_create();
    char err[256];
    ASSERT_EQ(nm_config_set(c, "network.route_ties=lowest", "--set", err, sizeof err), 0);
    {
        Topo T("clos64", c);
        std::set<int> first_ports;
        for (int d = 8; d < 64; d++) first_ports.insert(nm_route_get(T.t, 0, d)->out_port[0]);
        EXPECT_EQ(first_ports.size(), 1u);  // lowest: always spine 0
    }
    ASSERT_EQ(nm_config_set(c, "network.route_ties=spread", "--set", err, sizeof err), 0);
    ASSERT_EQ(nm_config_set(c, "network.routing=shortest", "--set", err, sizeof err), 0);
    {
        Topo T("clos64", c);
        ASSERT_NE(T.t, nullptr);
        std::set<int> first_ports;
        for (int d = 8; d < 64; d++) first_ports.insert(nm_route_get(T.t, 0, d)->out_port[0]);
        EXPECT_EQ(first_ports.size(), 8u);
        check_routes(T.t);
        Topo R("ring:4:4:3", c);
        ASSERT_NE(R.t, nullptr);
        std::set<int> ports;
        for (int s = 0; s < 4; s++) ports.insert(nm_route_get(R.t, s, 4)->out_port[0]);
        EXPECT_EQ(ports.size(), 3u);  // the three parallel links
        check_routes(R.t);
    }
    ASSERT_EQ(nm_config_set(c, "network.routing=updown", "--set", err, sizeof err), 0);
    Topo U("crossbar:2", c);   // updown is implemented (tests/routing)
    ASSERT_NE(U.t, nullptr) << U.err;
    EXPECT_EQ(U.t->route_check_ok, 1);
    check_routes(U.t);
    nm_config_destroy(c);
}

TEST(Topology, GeneratorArgumentErrors)
{
    for (const char *s : {"crossbar:0", "crossbar:x", "crossbar", "auto:0", "auto:65537", "triangle18:19",
                          "system96:0", "clos64:65", "array:3", "array:3:15", "ring:3:8", "ring:3:8:5",
                          "crossbar:2:3"}) {
        Topo T(s);
        EXPECT_EQ(T.t, nullptr) << s;
        EXPECT_NE(T.err.find(s), std::string::npos) << s << ": " << T.err;
    }
}

}  // namespace

// defaults that cannot hurt a user.
TEST(Topology, DefaultsCannotDeadlockAndScale)
{
    nm_routing_info ri;
    {   // auto works beyond 96 hosts: a Clos of 16-port switches, deadlock-free, ties spread
        Topo T("auto:256");
        ASSERT_NE(T.t, nullptr) << T.err;
        EXPECT_EQ(nm_topology_hosts(T.t), 256);
        EXPECT_EQ(nm_topology_switches(T.t), 32 + 32 + 16);
        nm_topology_routing_info(T.t, &ri);
        EXPECT_TRUE(ri.deadlock_free);
        EXPECT_STREQ(ri.routing, "shortest");
        for (int s = 0; s < 256; s += 7)
            for (int d = 0; d < 256; d += 5)
                if (s != d) {
                    EXPECT_EQ(nm_topology_route_hops(T.t, s, d), s / 8 == d / 8 ? 1 : s / 64 == d / 64 ? 3 : 5);
                }
        check_routes(T.t);
    }
    {   // beyond 1024 hosts: an 8-ary 4-tree, deadlock-free, up to the nearest common ancestor
        // (1100 hosts, 138 leaves: all four levels are used; 4096 hosts take 15 s to check here,
        // the spread ties making a route per pair of hosts)
        Topo T("auto:1100");
        ASSERT_NE(T.t, nullptr) << T.err;
        EXPECT_EQ(nm_topology_hosts(T.t), 1100);
        EXPECT_EQ(nm_topology_switches(T.t), 138 + 144 + 192 + 512);
        nm_topology_routing_info(T.t, &ri);
        EXPECT_TRUE(ri.deadlock_free);
        for (int s = 0; s < 1100; s += 37)
            for (int d = 0; d < 1100; d += 23)
                if (s != d) {
                    int hops = s / 8 == d / 8 ? 1 : s / 64 == d / 64 ? 3 : s / 512 == d / 512 ? 5 : 7;
                    EXPECT_EQ(nm_topology_route_hops(T.t, s, d), hops) << s << " -> " << d;
                }
    }
    {   // a part of one: only the switches some used leaf is below (250 leaves, 256 + 256 above,
        // and the 512 at the top, every one above every leaf)
        Topo T("clos:2000");
        ASSERT_NE(T.t, nullptr) << T.err;
        EXPECT_EQ(nm_topology_hosts(T.t), 2000);
        EXPECT_EQ(nm_topology_switches(T.t), 250 + 256 + 256 + 512);
        nm_topology_routing_info(T.t, &ri);
        EXPECT_TRUE(ri.deadlock_free);
        EXPECT_EQ(nm_topology_route_hops(T.t, 0, 1999), 7);
    }
    {   // up to 128 hosts: leaves and 8 spines (Myricom's Clos128)
        Topo T("auto:128");
        ASSERT_NE(T.t, nullptr) << T.err;
        EXPECT_EQ(nm_topology_switches(T.t), 16 + 8);
    }
    {   // spread ties: a leaf's eight destinations on another leaf go over different spines
        Topo T("clos64");
        ASSERT_NE(T.t, nullptr);
        std::set<int> spines;
        for (int d = 8; d < 16; d++) spines.insert(nm_route_get(T.t, 0, d)->channel[1]);
        EXPECT_EQ(spines.size(), 8u);
    }
    for (const char *spec : {"ring:8:4:1", "torus2d:4:4:8"}) {   // shortest would deadlock: updown
        Topo T(spec);
        ASSERT_NE(T.t, nullptr) << T.err;
        nm_topology_routing_info(T.t, &ri);
        EXPECT_TRUE(ri.deadlock_free) << spec;
        EXPECT_STREQ(ri.routing, "updown") << spec;
        Topo S(spec, shortest());
        nm_topology_routing_info(S.t, &ri);
        EXPECT_FALSE(ri.deadlock_free) << spec;
    }
    {   // the packet engines cannot deadlock: auto keeps minimal routes for them
        Cfg c({"network.engine=avici"});
        Topo T("avici:4:4:2", c.c);
        ASSERT_NE(T.t, nullptr) << T.err;
        nm_topology_routing_info(T.t, &ri);
        EXPECT_STREQ(ri.routing, "shortest");
        EXPECT_EQ(nm_topology_hosts(T.t), 32);
        int mx = 0;
        for (int s = 0; s < 32; s++)
            for (int d = 0; d < 32; d++)
                if (s != d) mx = std::max(mx, nm_topology_route_hops(T.t, s, d));
        EXPECT_EQ(mx, 2 + 2 + 1 + 1);   // torus distance 2 + 2 + 1 line cards apart
    }
}

TEST(Topology, FabricGenerators)
{
    {   // seed 001's GigE: 4 edge switches of 64 hosts, 6 trunks each to the centre
        Topo T("gige-tree:4:64:6");
        ASSERT_NE(T.t, nullptr) << T.err;
        EXPECT_EQ(nm_topology_hosts(T.t), 256);
        EXPECT_EQ(nm_topology_switches(T.t), 5);
        EXPECT_EQ(nm_topology_links(T.t), 256 + 24);   // seed 001: 280 cables
        EXPECT_EQ(nm_topology_route_hops(T.t, 0, 63), 1);
        EXPECT_EQ(nm_topology_route_hops(T.t, 63, 64), 3);
        std::set<int> trunks;
        for (int d = 64; d < 128; d++) trunks.insert(nm_route_get(T.t, 0, d)->channel[1]);
        EXPECT_EQ(trunks.size(), 6u);   // host pairs spread over the trunk
        check_routes(T.t);
    }
    {   // SCI: r^f nodes, one host each; the generator records the radix for the engine
        Topo T("sci-torus:3:3");
        ASSERT_NE(T.t, nullptr) << T.err;
        EXPECT_EQ(nm_topology_hosts(T.t), 27);
        EXPECT_EQ(nm_topology_links(T.t), 27 + 27 * 3);
        EXPECT_EQ(T.t->gen_kind, NM_GEN_SCI);
        EXPECT_EQ(T.t->gen_ndims, 3);
    }
    for (const char *bad : {"sci-torus:1:2", "sci-torus:4", "avici:0:1:1", "gige-tree:4:64", "clos:65537"}) {
        Topo T(bad);
        EXPECT_EQ(T.t, nullptr) << bad;
        EXPECT_NE(T.err.find(bad), std::string::npos) << T.err;
    }
}

// 10^4 hosts, 8 per switch, on a ring of 1250 switches. Routes are computed on first use, so the
// file loads with shortest or itb routing; up*/down* beyond 4 M (source host, destination switch)
// units balances one tree per destination switch (1250 searches over 2500 states, not 1.25e7), so
// updown and auto (which falls back to it: shortest routes deadlock on a ring) load too, checked
// deadlock-free. Each case within seconds (the shortest checker took 270 s, up*/down* per unit ran
// past 11 minutes and 19 GB, and was then refused).
TEST(Topology, LargeTopologyFileLoadsOrIsRefusedPromptly)
{
    std::string text;
    const int n = 10000, per = 8, S = n / per;
    for (int s = 0; s < S; s++) text += "switch S" + std::to_string(s) + " ports 16\n";
    for (int h = 0; h < n; h++) text += "host H" + std::to_string(h) + "\n";
    for (int h = 0; h < n; h++)
        text += "link H" + std::to_string(h) + ":0 S" + std::to_string(h / per) + ":" + std::to_string(h % per) + "\n";
    for (int s = 0; s < S; s++) text += "link S" + std::to_string(s) + ":8 S" + std::to_string((s + 1) % S) + ":9\n";
    nmt::TempDir d;
    std::string p = d.write("big.topo", text);
    for (const char *routing : {"shortest", "itb", "updown", "auto"}) {
        Cfg cfg({(std::string("network.routing=") + routing).c_str()});
        std::clock_t t0 = std::clock();   // CPU time: the machine may be shared
        Topo T(p, cfg.c);
        double s = double(std::clock() - t0) / CLOCKS_PER_SEC;
        EXPECT_LT(s, 30.0) << routing;
        if (!strcmp(routing, "shortest") || !strcmp(routing, "itb")) {
            ASSERT_NE(T.t, nullptr) << routing << ": " << T.err;
            EXPECT_EQ(nm_topology_hosts(T.t), n);
            EXPECT_GE(nm_route_get(T.t, 0, n - 1)->nhops, 2) << routing;
            continue;
        }
        // auto: shortest may deadlock on the ring (the default engine blocks), so up*/down*
        ASSERT_NE(T.t, nullptr) << routing << ": " << T.err;
        EXPECT_EQ(T.t->routing, NM_ROUTING_UPDOWN) << routing;
        EXPECT_EQ(T.t->route_check_ok, 1) << routing << ": " << T.t->route_check_msg;
        const nm_route *r = nm_route_get(T.t, 0, n - 1);
        EXPECT_GE(r->nhops, 2) << routing;
        EXPECT_NE(nm_route_get(T.t, 3, n / 2)->nhops, -1) << routing;
    }
}

// Names are looked up by hash: a file at the host cap (65536 hosts and as many links) is read in
// linear time (a scan per endpoint made it quadratic: minutes, and more under the sanitizers).
// The last line's error makes the test measure reading alone.
TEST(Topology, ReadingIsLinearInTheFileSize)
{
    std::string text;
    const int n = 65536, per = 16;
    for (int s = 0; s < n / per; s++) text += "switch S" + std::to_string(s) + " ports 32\n";
    for (int h = 0; h < n; h++) text += "host H" + std::to_string(h) + "\n";
    for (int h = 0; h < n; h++)
        text += "link H" + std::to_string(h) + ":0 S" + std::to_string(h / per) + ":" + std::to_string(h % per) + "\n";
    text += "link H0:0 NOSUCH:1\n";
    nmt::TempDir d;
    std::string p = d.write("huge.topo", text);
    std::clock_t t0 = std::clock();   // CPU time: the machine may be shared
    Topo T(p, shortest());
    double s = double(std::clock() - t0) / CLOCKS_PER_SEC;
    ASSERT_EQ(T.t, nullptr);
    EXPECT_NE(T.err.find("huge.topo:135169: expected a declared host or switch, got 'NOSUCH'"), std::string::npos)
        << T.err;
    EXPECT_LT(s, 10.0);
}

// Issue 28: auto:N to 65536 hosts. Beyond 32768 the 8-ary 5-tree's top switches use all 16 ports
// downward (4096 of them, every one above every leaf); hops 1, 3, 5, 7 or 9 switches; the shortest
// routes (spread ties) are proved deadlock-free per destination switch in seconds.
TEST(Topology, AutoBeyond32768IsAWideFatTree)
{
    Topo T("auto:40000");
    ASSERT_NE(T.t, nullptr) << T.err;
    EXPECT_EQ(nm_topology_hosts(T.t), 40000);
    // 5000 leaves; levels 1-3: the switches above some used leaf (5000, 5056, 5120); 4096 tops
    EXPECT_EQ(nm_topology_switches(T.t), 5000 + 5000 + 5056 + 5120 + 4096);
    EXPECT_EQ(T.t->route_check_ok, 1) << T.t->route_check_msg;
    EXPECT_NE(strstr(T.t->route_check_msg, "1599960000 routes legal"), nullptr) << T.t->route_check_msg;
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 1), 1);          // one leaf
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 8), 3);          // one level-1 switch above both
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 64 * 8), 7);     // meet at level 3
    EXPECT_EQ(nm_topology_route_hops(T.t, 0, 39999), 9);      // across the top
    int top = 0;
    for (int s = 0; s < T.t->nswitches; s++) {
        int down = 0;
        for (int p = 0; p < 16; p++) down += T.t->switches[s].port_link[p] >= 0;
        top += s >= T.t->nswitches - 4096 && down == 10;   // leaves' level-3 digit 0..9
    }
    EXPECT_EQ(top, 4096);
}
