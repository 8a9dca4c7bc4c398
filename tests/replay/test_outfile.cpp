// ms_outfile: output files are created beside their name and renamed into place, never written
// through another user's link (issue 25 item 1), in place for devices and FIFOs, and a failed
// write leaves what was there.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "ms_outfile.h"
#include "test_tmpdir.h"

namespace {

std::string dir(const char *name)
{
    std::string d = tmpdir() + "/" + name;
    mkdir(d.c_str(), 0777);
    return d;
}

std::string slurp(const std::string &p)
{
    FILE *f = fopen(p.c_str(), "r");
    if (!f) return "<missing>";
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return std::string(buf, n);
}

int write_text(const std::string &path, const char *text, char *err, size_t errlen)
{
    ms_outfile o;
    if (ms_outfile_open(&o, path.c_str(), 0, NULL, err, errlen) < 0) return -1;
    fputs(text, o.f);
    return ms_outfile_commit(&o, err, errlen);
}

// Only the directory's own entries: a temporary file left behind would show here.
int entries(const std::string &d)
{
    int n = 0;
    std::string cmd = "ls -A '" + d + "' | wc -l";
    FILE *p = popen(cmd.c_str(), "r");
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

// A link that belongs to someone else (as another user would plant it); root may give it away.
bool plant_foreign_link(const std::string &target, const std::string &at)
{
    if (symlink(target.c_str(), at.c_str()) != 0) return false;
    return geteuid() == 0 && lchown(at.c_str(), 4242, 4242) == 0;
}

}  // namespace

TEST(Outfile, NewAndReplacedFiles)
{
    std::string d = dir("plain"), p = d + "/r.json";
    char err[1024] = "";
    ASSERT_EQ(write_text(p, "one\n", err, sizeof err), 0) << err;
    EXPECT_EQ(slurp(p), "one\n");
    chmod(p.c_str(), 0640);
    ASSERT_EQ(write_text(p, "two\n", err, sizeof err), 0) << err;
    EXPECT_EQ(slurp(p), "two\n");
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u) << "the replaced file's mode is kept";
    EXPECT_EQ(entries(d), 1) << "no temporary file left";
}

TEST(Outfile, AnotherUsersLinkIsNeverWrittenThrough)
{
    if (geteuid() != 0) GTEST_SKIP() << "needs root to make a link owned by another user";
    std::string d = dir("foreign"), victim = d + "/victim", link = d + "/mpisim-report.json";
    FILE *f = fopen(victim.c_str(), "w");
    fputs("precious\n", f);
    fclose(f);
    ASSERT_TRUE(plant_foreign_link(victim, link));
    char err[1024] = "";
    EXPECT_EQ(write_text(link, "report\n", err, sizeof err), -1);
    EXPECT_NE(strstr(err, "symbolic link of another user"), nullptr) << err;
    EXPECT_EQ(slurp(victim), "precious\n");
    // nor through a directory link of another user in the path
    std::string sub = d + "/sub";
    ASSERT_TRUE(plant_foreign_link(d, sub));
    EXPECT_EQ(write_text(sub + "/victim", "report\n", err, sizeof err), -1);
    EXPECT_NE(strstr(err, "sub is a symbolic link of another user"), nullptr) << err;
    EXPECT_EQ(slurp(victim), "precious\n");
    EXPECT_EQ(entries(d), 3);
}

TEST(Outfile, OwnLinksAreFollowed)
{
    std::string d = dir("own"), real = dir("own/real");
    ASSERT_EQ(symlink(real.c_str(), (d + "/via").c_str()), 0);
    ASSERT_EQ(symlink("real/r.json", (d + "/r.json").c_str()), 0);
    char err[1024] = "";
    ASSERT_EQ(write_text(d + "/via/x.json", "x\n", err, sizeof err), 0) << err;
    EXPECT_EQ(slurp(real + "/x.json"), "x\n");
    ASSERT_EQ(write_text(d + "/r.json", "r\n", err, sizeof err), 0) << err;
    EXPECT_EQ(slurp(real + "/r.json"), "r\n");
    struct stat st;
    ASSERT_EQ(lstat((d + "/r.json").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the user's own link stays a link";
}

TEST(Outfile, DevicesAndFailures)
{
    char err[1024] = "";
    EXPECT_EQ(write_text("/dev/null", "x\n", err, sizeof err), 0) << err;
    EXPECT_EQ(write_text("/dev/full", "x\n", err, sizeof err), -1);
    EXPECT_NE(strstr(err, "/dev/full"), nullptr) << err;
    std::string d = dir("fail");
    EXPECT_EQ(write_text(d + "/no/such/r.json", "x\n", err, sizeof err), -1);
    EXPECT_NE(strstr(err, "there is no directory no"), nullptr) << err;
    EXPECT_EQ(write_text(d, "x\n", err, sizeof err), -1);
    EXPECT_NE(strstr(err, "is a directory"), nullptr) << err;
    std::string fifo = d + "/fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(write_text(fifo, "x\n", err, sizeof err), -1) << "a FIFO nobody reads is an error, not a hang";
    EXPECT_EQ(entries(d), 1);
}

TEST(Outfile, DiscardLeavesWhatWasThere)
{
    std::string d = dir("discard"), p = d + "/r.json";
    char err[1024] = "";
    ASSERT_EQ(write_text(p, "old\n", err, sizeof err), 0) << err;
    ms_outfile o;
    ASSERT_EQ(ms_outfile_open(&o, p.c_str(), 0, NULL, err, sizeof err), 0) << err;
    fputs("half", o.f);
    ms_outfile_discard(&o);
    EXPECT_EQ(slurp(p), "old\n");
    EXPECT_EQ(entries(d), 1);
}

TEST(Outfile, ReservedNameForAWriterOfItsOwn)
{
    std::string d = dir("reserve"), p = d + "/t.h5";
    char err[1024] = "", tmp[4096];
    ms_outfile o;
    ASSERT_EQ(ms_outfile_reserve(&o, p.c_str(), NULL, tmp, sizeof tmp, err, sizeof err), 0) << err;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    ASSERT_GE(fd, 0) << tmp;
    ASSERT_EQ(write(fd, "h5", 2), 2);
    close(fd);
    EXPECT_EQ(slurp(p), "<missing>") << "not in place before the commit";
    ASSERT_EQ(ms_outfile_commit(&o, err, sizeof err), 0) << err;
    EXPECT_EQ(slurp(p), "h5");
    EXPECT_EQ(entries(d), 1);
    EXPECT_EQ(ms_outfile_reserve(&o, "/dev/null", NULL, tmp, sizeof tmp, err, sizeof err), -1)
        << "a writer of its own needs a regular file";
}

TEST(Outfile, ParentDirectory)
{
    std::string d = dir("parent");
    char leaf[256], err[1024] = "";
    int fd = ms_open_parent_dir((d + "/new.raw").c_str(), leaf, sizeof leaf, err, sizeof err);
    ASSERT_GE(fd, 0) << err;
    EXPECT_STREQ(leaf, "new.raw");
    EXPECT_EQ(mkdirat(fd, leaf, 0700), 0);
    close(fd);
    EXPECT_EQ(ms_open_parent_dir((d + "/..").c_str(), leaf, sizeof leaf, err, sizeof err), -1);
}

TEST(Outfile, StandardOutputByItsDeviceName)
{
    // /dev/stdout leads to /proc/self/fd/1: written at stdout's offset, after what is there
    std::string d = dir("stdout"), p = d + "/out.txt";
    int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "program\n", 8), 8);
    int saved = dup(1);
    ASSERT_EQ(dup2(fd, 1), 1);
    close(fd);
    char err[1024] = "";
    int rc = write_text("/dev/stdout", "report\n", err, sizeof err);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ASSERT_EQ(rc, 0) << err;
    EXPECT_EQ(slurp(p), "program\nreport\n");
}
