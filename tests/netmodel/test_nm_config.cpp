// Configuration: units, defaults and citations, INI files with file:line errors, includes,
// profiles on a search path, --set, and the JSON writer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "netmodel.h"
#include "nm_test_util.h"

namespace {

struct Cfg {
    nm_config *c = nm_config_create();
    ~Cfg() { nm_config_destroy(c); }
};

std::string set_err(nm_config *c, const std::string &a)
{
    char err[512] = "";
    int rc = nm_config_set(c, a.c_str(), "--set", err, sizeof err);
    return rc == 0 ? std::string() : std::string(err);
}

TEST(Config, DefaultsHaveUnitsAndCitations)
{
    Cfg k;
    ASSERT_NE(k.c, nullptr);
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_rate"), 1.28e9);
    EXPECT_STREQ(nm_config_unit(k.c, "network.link_rate"), "b/s");
    EXPECT_NE(std::string(nm_config_origin(k.c, "network.link_rate")).find("seed 000 Table 2"), std::string::npos);
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_length"), 10.0);
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.propagation_velocity"), 1.8e8);
    EXPECT_EQ(nm_config_int(k.c, "network.switch_delay"), 0);
    EXPECT_EQ(nm_config_int(k.c, "network.slack_buffer"), 96);
    EXPECT_EQ(nm_config_int(k.c, "network.high_water"), 56);
    EXPECT_EQ(nm_config_int(k.c, "network.low_water"), 40);
    EXPECT_EQ(nm_config_int(k.c, "network.beat_period"), 1000000000000LL);
    EXPECT_EQ(nm_config_int(k.c, "network.timeout"), 1000000000000LL);
    EXPECT_EQ(nm_config_int(k.c, "network.type_bytes"), 4);
    EXPECT_EQ(nm_config_int(k.c, "network.crc_bytes"), 1);
    EXPECT_EQ(nm_config_int(k.c, "network.gap_bytes"), 1);
    EXPECT_EQ(nm_config_int(k.c, "network.switch_ports"), 8);
    EXPECT_STREQ(nm_config_string(k.c, "network.engine"), "analytic");
    EXPECT_STREQ(nm_config_string(k.c, "network.topology"), "auto");
    EXPECT_STREQ(nm_config_string(k.c, "network.routing"), "auto");
    EXPECT_STREQ(nm_config_string(k.c, "network.route_ties"), "auto");
    EXPECT_TRUE(nm_config_has(k.c, "profile.description"));
    EXPECT_FALSE(nm_config_has(k.c, "network.nope"));
    EXPECT_EQ(nm_config_lookup_error(k.c), nullptr);
    // every key has a unit string and an origin
    for (size_t i = 0; i < nm_config_count(k.c); i++) {
        const char *key = nm_config_key_at(k.c, i);
        ASSERT_NE(nm_config_unit(k.c, key), nullptr);
        ASSERT_NE(nm_config_origin(k.c, key), nullptr);
        EXPECT_STRNE(nm_config_origin(k.c, key), "") << key;
    }
}

TEST(Config, UnitsAndPrefixes)
{
    Cfg k;
    struct Case { const char *a; const char *key; double want; };
    const Case cases[] = {
        {"network.link_rate=2.56Gb/s", "network.link_rate", 2.56e9},
        {"network.link_rate = 640 Mb/s", "network.link_rate", 640e6},
        {"network.link_rate=160 MB/s", "network.link_rate", 1.28e9},   // bytes per second x 8
        {"network.link_rate=5.12 Gbps", "network.link_rate", 5.12e9},
        {"network.link_rate=1.28e9", "network.link_rate", 1.28e9},    // bare number: key's unit
        {"network.link_length=10 m", "network.link_length", 10},
        {"network.link_length=250 cm", "network.link_length", 2.5},
        {"network.link_length=0.5km", "network.link_length", 500},
        {"network.propagation_velocity=2e8 m/s", "network.propagation_velocity", 2e8},
        {"network.propagation_velocity=5 ns/m", "network.propagation_velocity", 2e8},
        {"network.switch_delay=6.25 ns", "network.switch_delay", 6250},
        {"network.switch_delay=150ns", "network.switch_delay", 150000},
        {"network.switch_delay=1.5 us", "network.switch_delay", 1500000},
        {"network.switch_delay=2 \xc2\xb5s", "network.switch_delay", 2000000},
        {"network.switch_delay=3 ms", "network.switch_delay", 3e9},
        {"network.switch_delay=1 s", "network.switch_delay", 1e12},
        {"network.switch_delay=42", "network.switch_delay", 42},       // bare number: ps
        {"network.slack_buffer=16 KiB", "network.slack_buffer", 16384},
        {"network.slack_buffer=16 KB", "network.slack_buffer", 16000},  // KB = 1000 (documented)
        {"network.slack_buffer=16kB", "network.slack_buffer", 16000},
        {"network.slack_buffer=1 MiB", "network.slack_buffer", 1048576},
        {"network.slack_buffer=80 bytes", "network.slack_buffer", 80},
        {"network.slack_buffer=80", "network.slack_buffer", 80},
        {"network.seed=9007199254740993", "network.seed", 9007199254740993.0},
    };
    for (const Case &c : cases) {
        EXPECT_EQ(set_err(k.c, c.a), "") << c.a;
        EXPECT_DOUBLE_EQ(nm_config_double(k.c, c.key), c.want) << c.a;
        EXPECT_STREQ(nm_config_origin(k.c, c.key), "--set");
    }
    // int keys hold exact integers, beyond 2^53 too
    ASSERT_EQ(set_err(k.c, "network.seed=9007199254740993"), "");
    EXPECT_EQ(nm_config_int(k.c, "network.seed"), 9007199254740993LL);
    EXPECT_STREQ(nm_config_value_text(k.c, "network.seed"), "9007199254740993");
    // velocity from a delay per metre: 1 / 4.92 ns
    ASSERT_EQ(set_err(k.c, "network.propagation_velocity=4.92 ns/m"), "");
    EXPECT_NEAR(nm_config_double(k.c, "network.propagation_velocity"), 1.0 / 4.92e-9, 1e-3);
}

TEST(Config, BadValuesAndKeys)
{
    Cfg k;
    EXPECT_EQ(set_err(k.c, "network.link_rate=abc"), "--set: key 'network.link_rate': expected a bit rate, got 'abc'");
    EXPECT_NE(set_err(k.c, "network.link_rate=10 m"), "");        // wrong dimension
    EXPECT_NE(set_err(k.c, "network.link_rate=1.28 Gb"), "");     // not a rate
    EXPECT_NE(set_err(k.c, "network.link_rate=0"), "");           // must be positive
    EXPECT_NE(set_err(k.c, "network.link_rate=inf"), "");
    EXPECT_NE(set_err(k.c, "network.link_rate=nan"), "");
    EXPECT_NE(set_err(k.c, "network.link_rate=0x10"), "");
    EXPECT_NE(set_err(k.c, "network.link_rate=1e999"), "");
    EXPECT_NE(set_err(k.c, "network.slack_buffer=1.5"), "");      // bytes are whole
    EXPECT_NE(set_err(k.c, "network.slack_buffer=-1"), "");
    EXPECT_NE(set_err(k.c, "network.slack_buffer=16 Kib"), "");
    EXPECT_NE(set_err(k.c, "network.switch_delay=1 m"), "");
    EXPECT_NE(set_err(k.c, "network.switch_ports=eight"), "");
    EXPECT_EQ(set_err(k.c, "network.engine=bogus"),
              "--set: key 'network.engine': expected one of analytic|myrinet|ethernet|avici|sci, got 'bogus'");
    EXPECT_EQ(set_err(k.c, "network.bogus=1"), "--set: unknown key 'network.bogus'");
    EXPECT_EQ(set_err(k.c, "no equals sign"), "--set: expected key=value, got 'no equals sign'");
    // failures leave the value alone
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_rate"), 1.28e9);
    EXPECT_NE(std::string(nm_config_origin(k.c, "network.link_rate")).find("seed 000"), std::string::npos);
}

TEST(Config, FileErrorsNameFileAndLine)
{
    nmt::TempDir d;
    Cfg k;
    char err[512];
    std::string p = d.write("a.ini", "[network]\nlink_rate = 2.56 Gb/s\nfoo = 3\n");
    EXPECT_NE(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0);
    EXPECT_EQ(std::string(err), p + ":3: unknown key 'foo' in section [network]");
    // a failed load changes nothing
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_rate"), 1.28e9);

    p = d.write("b.ini", "; comment\n[network]\nlink_rate = abc\n");
    EXPECT_NE(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0);
    EXPECT_EQ(std::string(err), p + ":3: key 'network.link_rate': expected a bit rate, got 'abc'");

    p = d.write("c.ini", "[network]\n\n[nosuch]\nx = 1\n");
    EXPECT_NE(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0);
    EXPECT_EQ(std::string(err), p + ":4: unknown key 'x' in section [nosuch]");

    p = d.write("d.ini", "[network]\nthis line has no equals sign\n");
    EXPECT_NE(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0);
    EXPECT_EQ(std::string(err).rfind(p + ":2: expected", 0), 0u) << err;

    p = d.write("e.ini", "[network\nlink_rate = 1\n");
    EXPECT_NE(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0);
    EXPECT_EQ(std::string(err).rfind(p + ":1: ", 0), 0u) << err;

    p = d.write("f.ini", "[network]\nlink_rate = 1 Gb/s\nlink_length = " + std::string(300, '1') + "\n");
    EXPECT_NE(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0);
    EXPECT_EQ(std::string(err), p + ":3: line too long");

    EXPECT_NE(nm_config_load_file(k.c, (d.path + "/missing.ini").c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("missing.ini"), std::string::npos);
}

TEST(Config, FileValuesOriginsAndComments)
{
    nmt::TempDir d;
    Cfg k;
    char err[512] = "";
    std::string p = d.write("ok.ini",
                            "# hash comment\n[profile]\ndescription = test profile ; inline\n[network]\n"
                            "link_rate = 2.56 Gb/s   ; seed 000 sec 4.3\n"
                            "switch_delay = 150 ns  # seed 002 sec 5.3\n"
                            "engine = analytic\n");
    ASSERT_EQ(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0) << err;
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_rate"), 2.56e9);
    EXPECT_EQ(nm_config_int(k.c, "network.switch_delay"), 150000);
    EXPECT_EQ(std::string(nm_config_origin(k.c, "network.link_rate")), p + ":5");
    EXPECT_EQ(std::string(nm_config_origin(k.c, "network.switch_delay")), p + ":6");
    EXPECT_STREQ(nm_config_string(k.c, "profile.description"), "test profile");
    // full key names outside any section
    std::string top = d.write("top.ini", "network.gap_bytes = 2\n[network]\ncrc_bytes = 2\n");
    ASSERT_EQ(nm_config_load_file(k.c, top.c_str(), err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(k.c, "network.gap_bytes"), 2);
    EXPECT_EQ(nm_config_int(k.c, "network.crc_bytes"), 2);
    // --set overrides the file
    ASSERT_EQ(set_err(k.c, "network.link_rate=5.12Gb/s"), "");
    EXPECT_STREQ(nm_config_origin(k.c, "network.link_rate"), "--set");
}

// "KEY.source = TEXT": a profile says where a value comes from (mpisim calibrate writes
// "calibrated: ..."); it is the value's note,
// as a comment after the value would be; the origin keeps the file and line of the value.
TEST(Config, DeclaredSourcesOfValues)
{
    nmt::TempDir d;
    Cfg k;
    char err[512] = "";
    std::string base = d.write("base.ini", "[network]\nlink_rate = 640 Mb/s\n");
    std::string p = d.write("cal.ini",
                            "[profile]\ninclude = base\n[network]\n"
                            "switch_delay.source = calibrated: pingpong 1 B..2 KiB on 2026-01-02\n"
                            "switch_delay = 150 ns\n"
                            "gap_bytes = 2\n"
                            "gap_bytes.source = seed 000 sec 2 ; a comment\n");
    ASSERT_EQ(nm_config_load_profile(k.c, p.c_str(), "", err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(k.c, "network.switch_delay"), 150000);
    EXPECT_EQ(std::string(nm_config_origin(k.c, "network.switch_delay")), p + ":5");
    EXPECT_STREQ(nm_config_note(k.c, "network.switch_delay"), "calibrated: pingpong 1 B..2 KiB on 2026-01-02");
    EXPECT_STREQ(nm_config_kind(k.c, "network.switch_delay"), "calibrated");
    EXPECT_STREQ(nm_config_note(k.c, "network.gap_bytes"), "seed 000 sec 2");
    EXPECT_EQ(std::string(nm_config_origin(k.c, "network.link_rate")), base + ":2");
    // --set still wins, and says so
    ASSERT_EQ(set_err(k.c, "network.switch_delay=1ns"), "");
    EXPECT_STREQ(nm_config_origin(k.c, "network.switch_delay"), "--set");
    // a source for a value the file does not set (the included file's), for an unknown key, or empty
    std::string bad1 = d.write("bad1.ini", "[profile]\ninclude = base\n[network]\nlink_rate.source = x\n");
    std::string bad2 = d.write("bad2.ini", "[network]\nlink_rat.source = x\n");
    std::string bad3 = d.write("bad3.ini", "[network]\nlink_rate = 1 Gb/s\nlink_rate.source =\n");
    const char *want[] = {"bad1.ini:4: a source for 'network.link_rate', which this file does not set",
                          "bad2.ini:2: 'link_rat.source': a source for unknown key 'network.link_rat' (did you mean "
                          "'network.link_rate'?)",
                          "bad3.ini:3: 'link_rate.source': expected the source of the value"};
    const std::string *files[] = {&bad1, &bad2, &bad3};
    for (int i = 0; i < 3; i++) {
        Cfg kb;
        EXPECT_NE(nm_config_load_profile(kb.c, files[i]->c_str(), "", err, sizeof err), 0);
        EXPECT_NE(std::string(err).find(want[i]), std::string::npos) << err;
        EXPECT_DOUBLE_EQ(nm_config_double(kb.c, "network.link_rate"), 1.28e9) << "a failed load changes nothing";
    }
}

// An indented line continues a text value (a long list stays within inih's 200-byte lines);
// numeric values cannot be continued.
TEST(Config, ContinuedTextValues)
{
    nmt::TempDir d;
    Cfg k;
    char err[512] = "";
    std::string seg;
    for (int i = 0; i < 40; i++) seg += "   segment" + std::to_string(i) + ":1:2:3:4:5\n";
    std::string p = d.write("long.ini", "[profile]\ndescription = first part\n" + seg + "  ; a comment\n[network]\n"
                                        "link_rate = 1 Gb/s\n");
    ASSERT_EQ(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0) << err;
    std::string v = nm_config_string(k.c, "profile.description");
    EXPECT_EQ(v.substr(0, 21), "first part segment0:1");
    EXPECT_NE(v.find("segment39:1:2:3:4:5"), std::string::npos);
    EXPECT_EQ(std::string(nm_config_origin(k.c, "profile.description")), p + ":2");
    std::string bad = d.write("bad.ini", "[network]\nlink_rate = 1 Gb/s\n  2 Gb/s\n");
    Cfg kb;
    EXPECT_NE(nm_config_load_file(kb.c, bad.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("bad.ini:3: an indented line continues 'network.link_rate'"), std::string::npos) << err;
}

// A profile value's comment is its source as the profile gives it; its first word declares the
// value's kind (configs/README.md), shown by --describe and written into every report.
TEST(Config, ValueNotesAndKinds)
{
    nmt::TempDir d;
    Cfg k;
    char err[512] = "";
    std::string p = d.write("kinds.ini",
                            "[network]\n"
                            "link_rate = 2 Gb/s        ; cited: 003 sec 2, 2.0+2.0 Gbps\n"
                            "switch_delay = 10 ns      ; calibrated: 003_x.txt sec 4 Fig. 1, GM latency [003-a]\n"
                            "                          ; continued on the next line\n"
                            "\n"
                            "                          ; not a continuation: a blank line came between\n"
                            "slack_buffer = 96 B       # assumed: a guess; range 80..200 B\n"
                            "high_water = 56 B         ; no kind declared\n"
                            "low_water = 40 B\n");
    ASSERT_EQ(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0) << err;
    EXPECT_STREQ(nm_config_note(k.c, "network.link_rate"), "cited: 003 sec 2, 2.0+2.0 Gbps");
    EXPECT_STREQ(nm_config_kind(k.c, "network.link_rate"), "cited");
    EXPECT_STREQ(nm_config_note(k.c, "network.switch_delay"),
                 "calibrated: 003_x.txt sec 4 Fig. 1, GM latency [003-a] continued on the next line");
    EXPECT_STREQ(nm_config_kind(k.c, "network.switch_delay"), "calibrated");
    EXPECT_STREQ(nm_config_kind(k.c, "network.slack_buffer"), "assumed");
    EXPECT_STREQ(nm_config_note(k.c, "network.high_water"), "no kind declared");
    EXPECT_STREQ(nm_config_kind(k.c, "network.high_water"), "");
    EXPECT_EQ(nm_config_note(k.c, "network.low_water"), nullptr);
    EXPECT_EQ(nm_config_note(k.c, "network.timeout"), nullptr);   // a default has its citation as origin
    EXPECT_EQ(nm_config_kind(k.c, "no.such_key"), nullptr);
    // the report: "source" is the comment with its file:line, "kind" what it declares
    std::string jp = d.write("k.json", "");
    FILE *f = std::fopen(jp.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(nm_config_write_json(k.c, f, 0), 0);
    std::fclose(f);
    nmt::Json j;
    std::string text = nmt::read_file(jp);
    ASSERT_TRUE(nmt::JsonParser(text).parse(j)) << text;
    EXPECT_EQ(j.get("network.switch_delay")->get("source")->str,
              "calibrated: 003_x.txt sec 4 Fig. 1, GM latency [003-a] continued on the next line (" + p + ":3)");
    EXPECT_EQ(j.get("network.switch_delay")->get("kind")->str, "calibrated");
    EXPECT_EQ(j.get("network.low_water")->get("source")->str, p + ":9");
    EXPECT_EQ(j.get("network.low_water")->get("kind"), nullptr);
    // --describe shows it
    std::string dp = d.write("k.txt", "");
    f = std::fopen(dp.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(nm_config_describe(k.c, "network.switch_delay", f, err, sizeof err), 0) << err;
    std::fclose(f);
    EXPECT_NE(nmt::read_file(dp).find("kind calibrated, source: calibrated: 003_x.txt"), std::string::npos)
        << nmt::read_file(dp);
    // a value set again (--set, another file) no longer carries the old comment
    ASSERT_EQ(set_err(k.c, "network.switch_delay=20ns"), "");
    EXPECT_EQ(nm_config_note(k.c, "network.switch_delay"), nullptr);
    EXPECT_STREQ(nm_config_kind(k.c, "network.switch_delay"), "");
}

TEST(Config, IncludesAndCycles)
{
    nmt::TempDir d;
    Cfg k;
    char err[512] = "";
    std::string base = d.write("base.ini", "[network]\nlink_rate = 640 Mb/s\nswitch_delay = 100 ns\n");
    // keys of the including file win whatever the line order
    std::string top = d.write("top.ini", "[network]\nswitch_delay = 150 ns\n[profile]\ninclude = base\n");
    ASSERT_EQ(nm_config_load_profile(k.c, top.c_str(), "", err, sizeof err), 0) << err;
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_rate"), 640e6);
    EXPECT_EQ(std::string(nm_config_origin(k.c, "network.link_rate")), base + ":2");
    EXPECT_EQ(nm_config_int(k.c, "network.switch_delay"), 150000);
    EXPECT_EQ(std::string(nm_config_origin(k.c, "network.switch_delay")), top + ":2");

    Cfg k2;
    d.write("x.ini", "[profile]\ninclude = y\n");
    d.write("y.ini", "[profile]\ninclude = x\n");
    EXPECT_NE(nm_config_load_profile(k2.c, "x", d.path.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("include cycle"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find("y.ini:2:"), std::string::npos) << err;

    d.write("self.ini", "[profile]\ninclude = self\n");
    EXPECT_NE(nm_config_load_profile(k2.c, "self", d.path.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("self.ini:2: include cycle"), std::string::npos) << err;

    d.write("bad_inc.ini", "[profile]\n\ninclude = nowhere\n");
    EXPECT_NE(nm_config_load_profile(k2.c, "bad_inc", d.path.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("bad_inc.ini:3: profile 'nowhere' not found"), std::string::npos) << err;
}

TEST(Config, SearchPath)
{
    nmt::TempDir a, b;
    Cfg k;
    char err[512] = "";
    b.write("p1.ini", "[network]\nlink_rate = 2 Gb/s\n");
    std::string sp = a.path + ":" + b.path;
    ASSERT_EQ(nm_config_load_profile(k.c, "p1", sp.c_str(), err, sizeof err), 0) << err;
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_rate"), 2e9);
    a.write("p1.ini", "[network]\nlink_rate = 3 Gb/s\n");  // first directory wins
    ASSERT_EQ(nm_config_load_profile(k.c, "p1", sp.c_str(), err, sizeof err), 0) << err;
    EXPECT_DOUBLE_EQ(nm_config_double(k.c, "network.link_rate"), 3e9);
    EXPECT_NE(nm_config_load_profile(k.c, "nosuch", sp.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("nosuch"), std::string::npos);
}

TEST(Config, ShippedProfiles)
{
    const char *dir = MPISIM_SOURCE_PROFILE_DIR;
    for (const char *name : {"default", "seed000-sbus", "seed002-pci", "seed003-ecard", "seed004-myrinet"}) {
        Cfg k;
        char err[512] = "";
        nm_config_skip_sections(k.c, "mpi|host|shim");   // the MPI layer's keys: tests/model
        ASSERT_EQ(nm_config_load_profile(k.c, name, dir, err, sizeof err), 0) << name << ": " << err;
        EXPECT_STRNE(nm_config_string(k.c, "profile.description"), "") << name;
        // every network value is set by the profile itself, with its line
        EXPECT_NE(std::string(nm_config_origin(k.c, "network.link_rate")).find(".ini:"), std::string::npos) << name;
    }
    Cfg d;
    char err[512] = "";
    nm_config_skip_sections(d.c, "mpi|host|shim");   // seed000-sbus sets the MPI layer's broadcast
    ASSERT_EQ(nm_config_load_profile(d.c, "default", dir, err, sizeof err), 0) << err;
    EXPECT_NE(std::string(nm_config_origin(d.c, "network.link_rate")).find("seed000-sbus.ini:"), std::string::npos);
    EXPECT_DOUBLE_EQ(nm_config_double(d.c, "network.link_rate"), 1.28e9);

    Cfg p;
    ASSERT_EQ(nm_config_load_profile(p.c, "seed002-pci", dir, err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(p.c, "network.switch_delay"), 150000);
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 80);
    EXPECT_EQ(nm_config_int(p.c, "network.switch_ports"), 16);
    EXPECT_DOUBLE_EQ(nm_config_double(p.c, "network.link_rate"), 1.28e9);
    EXPECT_NEAR(nm_config_double(p.c, "network.propagation_velocity"), 1.0 / 4.92e-9, 1e-3);

    Cfg e;
    // a full profile's [host] and [mpi] sections are other layers' keys: unknown here ...
    EXPECT_NE(nm_config_load_profile(e.c, "seed003-ecard", dir, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("[host]"), std::string::npos) << err;
    // ... unless this program says it does not read them (the network-only tool)
    Cfg e2;
    ASSERT_EQ(nm_config_skip_sections(e2.c, "mpi|host|shim"), 0);
    ASSERT_EQ(nm_config_load_profile(e2.c, "seed003-ecard", dir, err, sizeof err), 0) << err;
    EXPECT_DOUBLE_EQ(nm_config_double(e2.c, "network.link_rate"), 2e9);
    Cfg f;
    nm_config_skip_sections(f.c, "mpi|host|shim");
    ASSERT_EQ(nm_config_load_profile(f.c, "seed004-myrinet", dir, err, sizeof err), 0) << err;
    // seed 004 sec 2.2: the NICs' links are the 160 MB/s links too (host_link_rate 0 = link_rate)
    EXPECT_DOUBLE_EQ(nm_config_double(f.c, "network.host_link_rate"), 0);
    EXPECT_DOUBLE_EQ(nm_config_double(f.c, "network.link_rate"), 1.28e9);
}

TEST(Config, RegisterOtherLayers)
{
    static const nm_key_def mpi_keys[] = {
        {"mpi.eager_limit", NM_KEY_INT, "B", "16 KiB", "seed 003 sec 5.2", "eager/rendezvous switch", nullptr, 0},
        {"mpi.send_overhead", NM_KEY_INT, "ps", "0.4 us", "seed 003 sec 5.3", "o_s", nullptr, NM_KEY_NONNEG},
    };
    Cfg k;
    char err[512] = "";
    ASSERT_EQ(nm_config_register(k.c, mpi_keys, 2, err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(k.c, "mpi.eager_limit"), 16384);
    EXPECT_EQ(nm_config_int(k.c, "mpi.send_overhead"), 400000);
    EXPECT_NE(nm_config_register(k.c, mpi_keys, 1, err, sizeof err), 0);  // twice
    static const nm_key_def bad_default[] = {
        {"mpi.x", NM_KEY_INT, "B", "lots", "nowhere", "", nullptr, 0},
    };
    EXPECT_NE(nm_config_register(k.c, bad_default, 1, err, sizeof err), 0);
    EXPECT_FALSE(nm_config_has(k.c, "mpi.x"));
    nmt::TempDir d;
    std::string p = d.write("m.ini", "[mpi]\neager_limit = 32 KiB\n");
    ASSERT_EQ(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(k.c, "mpi.eager_limit"), 32768);
}

TEST(Config, NumericRangesAreCheckedWhereverAValueIsSet)
{
    static const nm_key_def keys[] = {
        {"shim.factor", NM_KEY_DOUBLE, "", "1", "guess", "a factor", "0..10000", 0},
        {"shim.depth", NM_KEY_INT, "", "1", "guess", "frames", "1..8", 0},
        {"shim.wait", NM_KEY_INT, "ps", "1 s", "guess", "a time", "1e9..", 0},   // from 1 ms
    };
    Cfg k;
    char err[512] = "";
    ASSERT_EQ(nm_config_register(k.c, keys, 3, err, sizeof err), 0) << err;
    EXPECT_EQ(set_err(k.c, "shim.factor=2.5"), "");
    EXPECT_NE(set_err(k.c, "shim.factor=-1").find("from 0 to 10000, got '-1'"), std::string::npos);
    EXPECT_NE(set_err(k.c, "shim.factor=1e7"), "");
    EXPECT_EQ(set_err(k.c, "shim.depth=8"), "");
    EXPECT_NE(set_err(k.c, "shim.depth=9"), "");
    EXPECT_NE(set_err(k.c, "shim.depth=0"), "");
    EXPECT_EQ(set_err(k.c, "shim.wait=2 ms"), "");
    EXPECT_NE(set_err(k.c, "shim.wait=10 us"), "");   // below the range, in the key's unit
    nmt::TempDir d;
    std::string p = d.write("r.ini", "[shim]\nfactor = 3\ndepth = 12\n");
    EXPECT_NE(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("r.ini:3"), std::string::npos) << err;
    static const nm_key_def bad_range[] = {{"shim.bad", NM_KEY_INT, "", "1", "guess", "", "9..1", 0}};
    EXPECT_NE(nm_config_register(k.c, bad_range, 1, err, sizeof err), 0);
}

TEST(Config, JsonIsValidAndComplete)
{
    nmt::TempDir d;
    Cfg k;
    char err[512] = "";
    std::string p = d.write("j.ini", "[profile]\ndescription = quote \" backslash \\ tab\t\x01 end\n"
                                     "[network]\nlink_rate = 2.56 Gb/s\n");
    ASSERT_EQ(nm_config_load_file(k.c, p.c_str(), err, sizeof err), 0) << err;
    ASSERT_EQ(set_err(k.c, "network.switch_delay=150 ns"), "");
    for (int indent : {0, 2}) {
        std::string jp = d.path + "/out" + std::to_string(indent) + ".json";
        d.files.push_back(jp);
        FILE *f = std::fopen(jp.c_str(), "w");
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(nm_config_write_json(k.c, f, indent), 0);
        std::fclose(f);
        std::string text = nmt::read_file(jp);
        nmt::Json j;
        ASSERT_TRUE(nmt::JsonParser(text).parse(j)) << text;
        ASSERT_EQ(j.kind, nmt::Json::Obj);
        EXPECT_EQ(j.obj.size(), nm_config_count(k.c));
        for (size_t i = 0; i < nm_config_count(k.c); i++) {
            const char *key = nm_config_key_at(k.c, i);
            const nmt::Json *e = j.get(key);
            ASSERT_NE(e, nullptr) << key;
            ASSERT_NE(e->get("value"), nullptr);
            ASSERT_NE(e->get("unit"), nullptr);
            ASSERT_NE(e->get("source"), nullptr);
            EXPECT_EQ(e->get("unit")->str, nm_config_unit(k.c, key));
            EXPECT_EQ(e->get("source")->str, nm_config_origin(k.c, key));
        }
        EXPECT_DOUBLE_EQ(j.get("network.link_rate")->get("value")->num, 2.56e9);
        EXPECT_EQ(j.get("network.link_rate")->get("source")->str, p + ":4");
        EXPECT_DOUBLE_EQ(j.get("network.switch_delay")->get("value")->num, 150000);
        EXPECT_EQ(j.get("network.switch_delay")->get("source")->str, "--set");
        EXPECT_EQ(j.get("network.engine")->get("value")->kind, nmt::Json::Str);
    }
    // value texts round-trip through --set
    Cfg k2;
    for (size_t i = 0; i < nm_config_count(k.c); i++) {
        const char *key = nm_config_key_at(k.c, i);
        std::string a = std::string(key) + "=" + nm_config_value_text(k.c, key);
        if (std::string(key) == "profile.description") continue;  // free text with control chars
        ASSERT_EQ(set_err(k2.c, a), "") << a;
        EXPECT_STREQ(nm_config_value_text(k2.c, key), nm_config_value_text(k.c, key));
    }
    FILE *f = std::tmpfile();
    ASSERT_EQ(nm_config_write_text(k.c, f), 0);
    std::fclose(f);
}

}  // namespace

// A typed lookup of a name that was never registered is a defect in code: debug builds stop at
// it, release builds keep it and the next topology or network built from the configuration fails
// with it, so it never passes as a silent 0.
TEST(ConfigLookup, UnregisteredNameFailsLoudly)
{
#ifndef NDEBUG
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH({
        nm_config *c = nm_config_create();
        (void)nm_config_int(c, "network.link_rat");
    }, "never registered");
#else
    Cfg k;
    EXPECT_EQ(nm_config_int(k.c, "network.link_rat"), 0);
    EXPECT_EQ(nm_config_double(k.c, "network.nope"), 0.0);
    ASSERT_NE(nm_config_lookup_error(k.c), nullptr);
    EXPECT_NE(std::string(nm_config_lookup_error(k.c)).find("'network.link_rat'"), std::string::npos);
    char err[512] = "";
    nm_topology *t = nm_topology_load("crossbar:4", k.c, err, sizeof err);
    EXPECT_EQ(t, nullptr);
    EXPECT_NE(std::string(err).find("unregistered configuration key 'network.link_rat'"), std::string::npos) << err;
    nm_topology_destroy(t);
#endif
}

// Choice lists, key help and errors come from the registries.
TEST(Registries, KeyHelpAndChoicesComeFromThem)
{
    Cfg k;
    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    char err[256] = "";
    ASSERT_EQ(nm_config_describe(k.c, "network.topology", f, err, sizeof err), 0) << err;
    fclose(f);
    std::string topo(buf);
    const cm_named *e;
    size_t n = 0;
    for (size_t i = 0; (e = nm_topology_generator_at(i)) != nullptr; i++, n++)
        EXPECT_NE(topo.find(e->usage), std::string::npos) << e->usage;
    EXPECT_GE(n, 15u);
    for (const char *g : {"torus2d:X:Y:K", "cplant", "irregular:S:SEED", "avici:X:Y:Z[:K]", "sci-torus:R:F"})
        EXPECT_NE(topo.find(g), std::string::npos) << g;
    // every generator in the registry builds (its usage with small arguments)
    EXPECT_NE(cm_registry_find(nm_topology_generator_at, "torus2d:2:2:1"), nullptr);
    EXPECT_EQ(cm_registry_find(nm_topology_generator_at, "torus3d:2:2:1"), nullptr);
    EXPECT_STREQ(cm_registry_suggest(nm_topology_generator_at, "toruss2d:2:2:1"), "torus2d");
    EXPECT_STREQ(cm_registry_suggest(nm_routing_at, "updwn"), "updown");
    EXPECT_EQ(cm_registry_suggest(nm_routing_at, "foo"), nullptr);

    // network.routing's choices are the registry's
    std::string bad = set_err(k.c, "network.routing=foo");
    EXPECT_NE(bad.find("auto|shortest|updown|itb"), std::string::npos) << bad;
    char names[256];
    ASSERT_GT(cm_registry_names(nm_engine_at, "|", 0, names, sizeof names), 0);
    EXPECT_NE(std::string(names).find("analytic"), std::string::npos);
    EXPECT_NE(std::string(names).find("sci"), std::string::npos);
    bad = set_err(k.c, "network.engine=ethernett");
    EXPECT_NE(bad.find(names), std::string::npos) << bad;

    char m[512];
    cm_registry_unknown(nm_routing_at, "--routing", "updwn", m, sizeof m);
    EXPECT_EQ(std::string(m), "--routing 'updwn' is not one of auto, shortest, updown, itb (did you mean 'updown'?)");
}


// The myrinet slack buffer follows the links when the user did not set it: a STOP's
// round trip at 2.56 Gb/s over seed 002's 10 m cables leaves 35 B arriving above the 56 B high
// water mark, more than the 80 B buffer holds; the configuration derives 91 B and says so. Every
// shipped profile keeps its own value on its own links.
TEST(Config, SlackBufferDerivedFromTheLinksRoundTrip)
{
    const char *dir = MPISIM_SOURCE_PROFILE_DIR;
    char err[512] = "";
    for (const char *name : {"default", "seed000-sbus", "seed001-myrinet", "seed002-pci", "seed003-ecard",
                             "seed004-myrinet"}) {
        Cfg k;
        nm_config_skip_sections(k.c, "mpi|host|shim");
        ASSERT_EQ(nm_config_load_profile(k.c, name, dir, err, sizeof err), 0) << name << ": " << err;
        EXPECT_NE(std::string(nm_config_origin(k.c, "network.slack_buffer")).find(".ini:"), std::string::npos)
            << name << ": " << nm_config_origin(k.c, "network.slack_buffer");
    }
    Cfg p;
    nm_config_skip_sections(p.c, "mpi|host|shim");
    ASSERT_EQ(nm_config_load_profile(p.c, "seed002-pci", dir, err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 80);
    ASSERT_EQ(set_err(p.c, "network.link_rate=2.56Gb/s"), "");
    // 49.2 ns each way at 3.125 ns per character: ceil(31.5) + 3 = 35 above the 56 B mark
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 91);
    EXPECT_DOUBLE_EQ(nm_config_double(p.c, "network.slack_buffer"), 91.0);
    EXPECT_STREQ(nm_config_value_text(p.c, "network.slack_buffer"), "91");
    std::string why = nm_config_origin(p.c, "network.slack_buffer");
    EXPECT_EQ(why.rfind("derived: ", 0), 0u) << why;
    EXPECT_NE(why.find("seed002-pci.ini:23 gave 80 B"), std::string::npos) << why;
    // the resolved configuration (reports, traces) carries the value in force and its source
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    nm_config_write_json(p.c, f, 0);
    fclose(f);
    std::string j(buf, len);
    free(buf);
    EXPECT_NE(j.find("\"network.slack_buffer\": {\"value\": 91,\"unit\": \"B\",\"source\": \"derived: "),
              std::string::npos) << j.substr(0, 300);
    // longer cables and higher water marks need more; back on the profile's link, its own value
    ASSERT_EQ(set_err(p.c, "network.link_length=25m"), "");
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 56 + (2 * 123000 + 3124) / 3125 + 3);
    ASSERT_EQ(set_err(p.c, "network.link_length=10m"), "");
    ASSERT_EQ(set_err(p.c, "network.link_rate=1.28Gb/s"), "");
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 80);
    EXPECT_STREQ(nm_config_origin(p.c, "network.slack_buffer"), "configs/seed002-pci.ini:23");
    ASSERT_EQ(set_err(p.c, "network.high_water=70"), "");
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 70 + 19);
    ASSERT_EQ(set_err(p.c, "network.high_water=56"), "");
    // a host link faster than the network's (network.host_link_rate) is a link too
    ASSERT_EQ(set_err(p.c, "network.host_link_rate=5.12Gb/s"), "");
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 56 + (2 * 49200 + 1562) / 1563 + 3);
    ASSERT_EQ(set_err(p.c, "network.host_link_rate=0"), "");
    // the user's own value is theirs, whatever the links (the engine reports an overflow)
    ASSERT_EQ(set_err(p.c, "network.slack_buffer=80"), "");
    ASSERT_EQ(set_err(p.c, "network.link_rate=2.56Gb/s"), "");
    EXPECT_EQ(nm_config_int(p.c, "network.slack_buffer"), 80);
    EXPECT_STREQ(nm_config_origin(p.c, "network.slack_buffer"), "--set");
    // a recorded configuration read back as a profile gives it (a trace's) is not the user's
    Cfg r;
    ASSERT_EQ(nm_config_set_as_profile(r.c, "network.engine=myrinet", "trace", err, sizeof err), 0) << err;
    ASSERT_EQ(nm_config_set_as_profile(r.c, "network.slack_buffer=96", "trace", err, sizeof err), 0) << err;
    EXPECT_EQ(nm_config_int(r.c, "network.slack_buffer"), 96);
    ASSERT_EQ(set_err(r.c, "network.link_rate=5.12Gb/s"), "");
    EXPECT_EQ(nm_config_int(r.c, "network.slack_buffer"), 56 + 75);
    // other engines have no slack buffer: nothing is derived for them
    ASSERT_EQ(set_err(r.c, "network.engine=analytic"), "");
    EXPECT_EQ(nm_config_int(r.c, "network.slack_buffer"), 96);
    EXPECT_STREQ(nm_config_origin(r.c, "network.slack_buffer"), "trace");
}
