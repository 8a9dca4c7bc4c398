// cm_registry and cm_cmdline: lookup and "did you mean" over a registry, and the one option parser
// (long and short options, values, operands, the usage errors it names) on argument vectors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cm_cmdline.h"
#include "cm_registry.h"

namespace {
const cm_named colours[] = {
    {"red", "red", "the first"},
    {"green", "green:N", "takes an argument"},
    {"blue", "blue", "the last"},
};
const cm_named *colour_at(size_t i) { return i < sizeof colours / sizeof *colours ? &colours[i] : nullptr; }

enum { O_VALUE = 256, O_REPORT, O_REPLACE };
const cm_opt opts[] = {
    {"np", 'n', "N", "number of ranks"},
    {"value", O_VALUE, "X", "a number"},
    {"report", O_REPORT, "FILE", "where the report goes"},
    {"replace-trace", O_REPLACE, nullptr, "a flag"},
    {"colour", 'c', "NAME", "one of the colours"},
    CM_OPT_HELP,
    CM_OPT_END,
};

// argv with argv[0] the tool's name; the strings live as long as the object
struct Argv {
    std::vector<std::string> s;
    std::vector<char *> p;
    explicit Argv(std::vector<std::string> a) : s(std::move(a))
    {
        for (auto &x : s) p.push_back(&x[0]);
        p.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(s.size()); }
    char **argv() { return p.data(); }
};

// every option's key and value until the end or a usage error ('?'); stderr captured
std::vector<std::pair<int, std::string>> parse(Argv &a, int stop_at_operand, cm_cmdline *c, std::string *err)
{
    std::vector<std::pair<int, std::string>> got;
    EXPECT_EQ(cm_cmdline_init(c, "tool", opts, a.argc(), a.argv(), stop_at_operand), 0);
    testing::internal::CaptureStderr();
    const char *v;
    int k;
    while ((k = cm_cmdline_next(c, &v)) != -1) {
        got.emplace_back(k, v ? v : "");
        if (k == '?') break;
    }
    *err = testing::internal::GetCapturedStderr();
    return got;
}
}  // namespace

TEST(CmRegistry, FindNamesSuggestUnknown)
{
    EXPECT_STREQ(cm_registry_find(colour_at, "green:4")->name, "green");   // arguments after ':'
    EXPECT_EQ(cm_registry_find(colour_at, "gre"), nullptr);
    char buf[128];
    EXPECT_EQ(cm_registry_names(colour_at, "|", 0, buf, sizeof buf), 14);
    EXPECT_STREQ(buf, "red|green|blue");
    cm_registry_names(colour_at, ", ", 1, buf, sizeof buf);
    EXPECT_STREQ(buf, "red, green:N, blue");
    EXPECT_EQ(cm_registry_names(colour_at, "|", 0, buf, 6), -1);   // does not fit
    EXPECT_STREQ(cm_registry_suggest(colour_at, "gren"), "green");
    EXPECT_EQ(cm_registry_suggest(colour_at, "purple"), nullptr);
    EXPECT_EQ(cm_registry_suggest(colour_at, "red"), nullptr);   // not a typo: the name itself
    cm_registry_unknown(colour_at, "--colour", "blu", buf, sizeof buf);
    EXPECT_STREQ(buf, "--colour 'blu' is not one of red, green, blue (did you mean 'blue'?)");
    EXPECT_EQ(cm_edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(cm_edit_distance("", "abc"), 3u);
    EXPECT_EQ(cm_edit_distance(std::string(200, 'a').c_str(), "a"), SIZE_MAX);
}

TEST(CmCmdline, OptionsValuesAndOperands)
{
    Argv a({"tool", "-n", "4", "prog.c", "--value=2.5", "--replace-trace", "--report", "r.json", "x"});
    cm_cmdline c;
    std::string err;
    auto got = parse(a, 0, &c, &err);
    ASSERT_EQ(got.size(), 4u) << err;
    EXPECT_EQ(got[0], std::make_pair(static_cast<int>('n'), std::string("4")));
    EXPECT_EQ(got[1], std::make_pair(static_cast<int>(O_VALUE), std::string("2.5")));
    EXPECT_EQ(got[2].first, O_REPLACE);
    EXPECT_EQ(got[3], std::make_pair(static_cast<int>(O_REPORT), std::string("r.json")));
    // operands anywhere are moved to the end
    int first = cm_cmdline_operand(&c);
    ASSERT_EQ(a.argc() - first, 2);
    EXPECT_STREQ(a.argv()[first], "prog.c");
    EXPECT_STREQ(a.argv()[first + 1], "x");
    testing::internal::CaptureStderr();
    EXPECT_EQ(cm_cmdline_operands(&c, 1, 2, "program"), 2);
    EXPECT_EQ(cm_cmdline_operands(&c, 1, 1, "program"), -1);
    EXPECT_NE(testing::internal::GetCapturedStderr().find("unexpected argument 'x'"), std::string::npos);
}

TEST(CmCmdline, StopsAtTheFirstOperand)
{
    Argv a({"tool", "-n", "2", "--", "./prog", "-n", "9"});
    cm_cmdline c;
    std::string err;
    auto got = parse(a, 1, &c, &err);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_STREQ(a.argv()[cm_cmdline_operand(&c)], "./prog");   // the program's own -n is its own
}

TEST(CmCmdline, UsageErrorsNameTheOption)
{
    cm_cmdline c;
    std::string err;
    {
        Argv a({"tool", "--reprot", "f"});
        auto got = parse(a, 0, &c, &err);
        EXPECT_EQ(got.back().first, '?');
        EXPECT_NE(err.find("unknown option '--reprot' (did you mean '--report'?)"), std::string::npos) << err;
    }
    {
        Argv a({"tool", "--rep", "f"});   // a prefix of two options
        parse(a, 0, &c, &err);
        EXPECT_NE(err.find("option '--rep' is ambiguous: --report, --replace-trace"), std::string::npos) << err;
    }
    {
        Argv a({"tool", "--value"});
        parse(a, 0, &c, &err);
        EXPECT_NE(err.find("--value needs a value (X)"), std::string::npos) << err;
    }
    {
        Argv a({"tool", "-z"});
        parse(a, 0, &c, &err);
        EXPECT_NE(err.find("unknown option '-z'"), std::string::npos) << err;
    }
}

TEST(CmCmdline, ValuesCheckedAndBlamed)
{
    Argv a({"tool"});
    cm_cmdline c;
    ASSERT_EQ(cm_cmdline_init(&c, "tool", opts, a.argc(), a.argv(), 0), 0);
    long n = 0;
    double x = 0;
    EXPECT_EQ(cm_cmdline_long(&c, 'n', "16", 1, 64, &n), 0);
    EXPECT_EQ(n, 16);
    testing::internal::CaptureStderr();
    EXPECT_EQ(cm_cmdline_long(&c, 'n', "65", 1, 64, &n), 2);
    EXPECT_EQ(cm_cmdline_long(&c, 'n', "4x", 1, 64, &n), 2);
    EXPECT_EQ(cm_cmdline_double(&c, O_VALUE, "-1", 0, &x), 2);
    EXPECT_EQ(cm_cmdline_choice(&c, 'c', colour_at, "gren"), 2);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("tool: --np '65': expected a whole number from 1 to 64"), std::string::npos) << err;
    EXPECT_NE(err.find("tool: --value '-1': expected a number >= 0"), std::string::npos) << err;
    EXPECT_NE(err.find("tool: --colour 'gren' is not one of red, green, blue (did you mean 'green'?)"),
              std::string::npos) << err;
    EXPECT_EQ(cm_cmdline_double(&c, O_VALUE, "2.5", 0, &x), 0);
    EXPECT_DOUBLE_EQ(x, 2.5);
    EXPECT_EQ(cm_cmdline_choice(&c, 'c', colour_at, "blue"), 0);
}

TEST(CmCmdline, HelpListsEveryOfferedOption)
{
    char *buf = nullptr;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cm_cmdline_print_options(opts, m);
    fclose(m);
    std::string h(buf, len);
    free(buf);
    EXPECT_NE(h.find("  -n, --np N"), std::string::npos) << h;
    EXPECT_NE(h.find("      --replace-trace"), std::string::npos) << h;
    EXPECT_NE(h.find("show this help and exit"), std::string::npos) << h;
}

TEST(CmCmdline, TooManyOptionsRefused)
{
    std::vector<cm_opt> big;
    for (int i = 0; i <= CM_CMDLINE_MAX; i++) big.push_back({"opt", 256 + i, nullptr, "x"});
    big.push_back(CM_OPT_END);
    Argv a({"tool"});
    cm_cmdline c;
    EXPECT_EQ(cm_cmdline_init(&c, "tool", big.data(), a.argc(), a.argv(), 0), -1);
}
