// A test process's scratch directory (shared by the trace and stream tests).
#ifndef MS_TEST_TMPDIR_H
#define MS_TEST_TMPDIR_H

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

inline int ms_test_remove_entry(const char *path, const struct stat *, int, struct FTW *) { return remove(path); }

// This process's scratch directory under TMPDIR (or /tmp), removed with all it holds at exit.
inline std::string tmpdir()
{
    static std::string d;
    static pid_t owner;
    if (d.empty()) {
        const char *base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ms_trace_test.XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        if (!mkdtemp(buf.data())) std::abort();
        d = buf.data();
        owner = getpid();
        std::atexit([] {
            if (getpid() == owner) nftw(d.c_str(), ms_test_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        });
    }
    return d;
}

#endif
