// Property test of the INI and topology parsers: random mutations of valid files never crash
// (run under ASan/UBSan in the sanitizer build) and either load or give an error naming the
// file and a line ("FILE:LINE: ..."). Bounded in iterations and in time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "netmodel.h"
#include "nm_test_util.h"

namespace {

const char kIni[] =
    "; a profile\n"
    "[profile]\n"
    "description = fuzz base\n"
    "[network]\n"
    "engine = analytic\n"
    "topology = auto\n"
    "link_rate = 1.28 Gb/s     ; seed 000 Table 2\n"
    "link_length = 10 m\n"
    "propagation_velocity = 4.92 ns/m\n"
    "switch_delay = 150 ns\n"
    "slack_buffer = 80 B\n"
    "high_water = 56\n"
    "low_water = 40 B\n"
    "beat_period = 1 s\n"
    "timeout = 1 s\n"
    "switch_ports = 16\n"
    "route_ties = spread\n";

const char kTopo[] =
    "# fuzz base\n"
    "switch S0 ports 8\n"
    "switch S1 ports 8\n"
    "switch S2\n"
    "host A\nhost B\nhost C\nhost D\n"
    "link A:0 S0:0\n"
    "link B:0 S0:1 rate=2.56Gb/s length=5m velocity=2e8m/s\n"
    "link S0:7 S1:7\n"
    "link S1:6 S2:6 length=1m\n"
    "link C:0 S1:2\n"
    "link D:0 S2:0\n"
    "route A C 7 2\n"
    "route D A 6 7 0\n";

std::string mutate(std::string s, std::mt19937 &rng)
{
    static const std::string alphabet = std::string("[]=:;#\n \t.-_/\\\"'abcdeGKMikmnsuBb0123456789") +
                                        std::string(1, '\0') + "\xff\xc2\xb5";
    auto pick = [&](size_t n) { return n ? (size_t)(rng() % n) : 0; };
    auto lines = [&]() {
        std::vector<std::string> v;
        size_t a = 0;
        while (a <= s.size()) {
            size_t b = s.find('\n', a);
            if (b == std::string::npos) { v.push_back(s.substr(a)); break; }
            v.push_back(s.substr(a, b - a + 1));
            a = b + 1;
        }
        return v;
    };
    int nmut = 1 + (int)(rng() % 4);
    for (int m = 0; m < nmut; m++) {
        switch (rng() % 9) {
        case 0: if (!s.empty()) s.erase(pick(s.size()), 1); break;
        case 1: s.insert(pick(s.size() + 1), 1, alphabet[pick(alphabet.size())]); break;
        case 2: if (!s.empty()) s[pick(s.size())] = alphabet[pick(alphabet.size())]; break;
        case 3: if (!s.empty()) s[pick(s.size())] = (char)(rng() & 0xff); break;
        case 4: { auto v = lines(); size_t i = pick(v.size()); v.insert(v.begin() + (long)i, v[i]);
                  s.clear(); for (auto &l : v) s += l; break; }
        case 5: { auto v = lines(); v.erase(v.begin() + (long)pick(v.size())); s.clear(); for (auto &l : v) s += l; break; }
        case 6: { auto v = lines(); std::swap(v[pick(v.size())], v[pick(v.size())]); s.clear(); for (auto &l : v) s += l; break; }
        case 7: s.resize(pick(s.size() + 1)); break;
        case 8: s.insert(pick(s.size() + 1), 150 + pick(300), alphabet[pick(alphabet.size())]); break;
        }
    }
    return s;
}

// "PATH:N: " with N a positive line number
bool names_file_and_line(const std::string &err, const std::string &path)
{
    size_t at = err.find(path + ":");
    if (at == std::string::npos) return false;
    size_t i = at + path.size() + 1, j = i;
    while (j < err.size() && isdigit((unsigned char)err[j])) j++;
    return j > i && j < err.size() && err[j] == ':' && std::stol(err.substr(i, j - i)) > 0;
}

TEST(Fuzz, IniParserMutations)
{
    nmt::TempDir d;
    std::mt19937 rng(12345);
    auto start = std::chrono::steady_clock::now();
    int loaded = 0, failed = 0;
    for (int it = 0; it < 4000; it++) {
        if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(2000)) break;
        std::string text = mutate(kIni, rng);
        std::string p = d.write("fuzz.ini", text);
        nm_config *c = nm_config_create();
        char err[1024] = "";
        int rc = nm_config_load_profile(c, p.c_str(), d.path.c_str(), err, sizeof err);
        if (rc == 0) {
            loaded++;
            // still a consistent configuration: JSON writes
            FILE *f = std::tmpfile();
            EXPECT_EQ(nm_config_write_json(c, f, 2), 0);
            std::fclose(f);
        } else {
            failed++;
            EXPECT_TRUE(names_file_and_line(err, p)) << "error: " << err << "\ntext:\n" << text;
        }
        nm_config_destroy(c);
    }
    std::printf("ini: %d mutants loaded, %d rejected with file:line\n", loaded, failed);
    EXPECT_GT(loaded, 0);
    EXPECT_GT(failed, 0);
}

TEST(Fuzz, TopologyParserMutations)
{
    nmt::TempDir d;
    std::mt19937 rng(777);
    auto start = std::chrono::steady_clock::now();
    int loaded = 0, failed = 0;
    nm_config *c = nm_config_create();
    for (int it = 0; it < 4000; it++) {
        if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(2000)) break;
        std::string text = mutate(kTopo, rng);
        std::string p = d.write("fuzz.topo", text);
        char err[1024] = "";
        nm_topology *t = nm_topology_load(p.c_str(), c, err, sizeof err);
        if (t) {
            loaded++;
            // routes of a loaded topology are usable
            for (int s = 0; s < nm_topology_hosts(t); s++)
                for (int k = 0; k < nm_topology_hosts(t); k++)
                    if (s != k) { EXPECT_GE(nm_topology_route_hops(t, s, k), 0); }
            nm_topology_destroy(t);
        } else {
            failed++;
            EXPECT_TRUE(names_file_and_line(err, p)) << "error: " << err << "\ntext:\n" << text;
        }
    }
    nm_config_destroy(c);
    std::printf("topology: %d mutants loaded, %d rejected with file:line\n", loaded, failed);
    EXPECT_GT(loaded, 0);
    EXPECT_GT(failed, 0);
}

TEST(Fuzz, SetAssignments)
{
    std::mt19937 rng(99);
    nm_config *c = nm_config_create();
    std::vector<std::string> keys;
    for (size_t i = 0; i < nm_config_count(c); i++) keys.push_back(nm_config_key_at(c, i));
    for (int it = 0; it < 3000; it++) {
        std::string v = mutate("1.28 Gb/s", rng);
        std::string a = keys[rng() % keys.size()] + "=" + v.substr(0, v.find('\0'));
        char err[512] = "";
        if (nm_config_set(c, a.c_str(), "--set", err, sizeof err) != 0) {
            EXPECT_EQ(std::string(err).rfind("--set: ", 0), 0u) << err;
        }
    }
    nm_config_destroy(c);
}

}  // namespace
