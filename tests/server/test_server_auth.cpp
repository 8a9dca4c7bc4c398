// The model server accepts only its own job's ranks: a connection with a wrong secret, a rank
// outside the job, a wrong job size, a duplicate rank or garbage is refused and counted; so is a
// rank attaching through the shared segment, which only this user can open and which is gone
// from the file system once every rank has attached.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include "ms_server.h"
#include "protocol.h"
#include "transport.h"
}

namespace {

int connect_to(const std::string &endpoint)
{
    auto colon = endpoint.rfind(':');
    int port = std::stoi(endpoint.substr(colon + 1));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (sockaddr *)&a, sizeof a) != 0) return -1;
    return fd;
}

// Sends a HELLO and reports whether the server answered WELCOME (1) or closed (0).
int hello(const std::string &endpoint, const char *secret, int rank, int size, bool garbage = false)
{
    int fd = connect_to(endpoint);
    if (fd < 0) return -1;
    ms_msg_header h{MS_MSG_HELLO, sizeof(ms_msg_hello)};
    ms_msg_hello m;
    memset(&m, 0, sizeof m);
    m.magic = garbage ? 0xdeadbeef : MS_PROTO_MAGIC;
    m.version = MS_PROTO_VERSION;
    m.rank = rank;
    m.size = size;
    m.sizes_check = ms_proto_sizes_check();
    memcpy(m.secret, secret, strnlen(secret, MS_SECRET_LEN));
    if (write(fd, &h, sizeof h) != (ssize_t)sizeof h || write(fd, &m, sizeof m) != (ssize_t)sizeof m) return -1;
    ms_msg_header r;
    ssize_t n = read(fd, &r, sizeof r);
    int ok = n == (ssize_t)sizeof r && r.type == MS_MSG_WELCOME;
    close(fd);
    return ok;
}

ms_msg_hello make_hello(const char *secret, int rank, int size)
{
    ms_msg_hello m;
    memset(&m, 0, sizeof m);
    m.magic = MS_PROTO_MAGIC;
    m.version = MS_PROTO_VERSION;
    m.rank = rank;
    m.size = size;
    m.sizes_check = ms_proto_sizes_check();
    memcpy(m.secret, secret, strnlen(secret, MS_SECRET_LEN));
    return m;
}

// HELLO through a transport: 1 welcomed, 0 refused or closed.
int hello_tp(ms_transport *t, const char *secret, int rank, int size)
{
    ms_msg_hello m = make_hello(secret, rank, size);
    if (ms_tp_put(t, MS_MSG_HELLO, &m, sizeof m, nullptr, 0) < 0 || ms_tp_flush(t) < 0) return 0;
    for (int i = 0; i < 100 && !ms_tp_next(t); i++)
        if (ms_tp_read(t, 100) < 0) return 0;
    ms_msg_header h;
    if (!ms_tp_next(t)) return 0;
    memcpy(&h, t->in, sizeof h);
    return h.type == MS_MSG_WELCOME;
}

}  // namespace

TEST(ServerAuth, RefusesEverythingButItsOwnRanks)
{
    char err[1024] = "";
    nm_config *cfg = nm_config_create();
    ASSERT_EQ(ms_driver_register_keys(cfg, err, sizeof err), 0) << err;
    ASSERT_EQ(nm_config_load_profile(cfg, "default", MPISIM_SOURCE_PROFILE_DIR, err, sizeof err), 0) << err;
    ms_server *s = ms_server_create();
    char *argv[] = {(char *)"prog"};
    ASSERT_EQ(ms_server_configure(s, cfg, 2, 1, argv, err, sizeof err), 0) << err;
    char endpoint[256];
    ASSERT_EQ(ms_server_listen(s, "127.0.0.1", "127.0.0.1", endpoint, sizeof endpoint, err, sizeof err), 0) << err;
    std::string secret = ms_server_secret(s);
    std::string ep = endpoint;
    pid_t child = fork();
    if (child == 0) {
        int bad = 0;
        bad += hello(ep, "0123456789abcdef0123456789abcdef", 0, 2) == 0;  // wrong secret
        bad += hello(ep, secret.c_str(), 5, 2) == 0;                      // rank outside the job
        bad += hello(ep, secret.c_str(), 1, 3) == 0;                      // wrong job size
        bad += hello(ep, secret.c_str(), 0, 2, true) == 0;                // not an mpisim rank
        _exit(bad == 4 ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(ms_server_run(s, child, &status, err, sizeof err), 0) << err;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a bad connection was welcomed";
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ms_server_write_report(s, f);
    fclose(f);
    std::string report(buf, len);
    free(buf);
    EXPECT_NE(report.find("\"rejected_connections\": 4"), std::string::npos) << report.substr(report.find("summary"));
    ms_server_destroy(s);
    nm_config_destroy(cfg);
}

TEST(ServerAuth, SharedSegmentIsPrivateAuthenticatedAndUnlinked)
{
    char err[1024] = "";
    nm_config *cfg = nm_config_create();
    ASSERT_EQ(ms_driver_register_keys(cfg, err, sizeof err), 0) << err;
    ASSERT_EQ(nm_config_load_profile(cfg, "default", MPISIM_SOURCE_PROFILE_DIR, err, sizeof err), 0) << err;
    ms_server *s = ms_server_create();
    char *argv[] = {(char *)"prog"};
    ASSERT_EQ(ms_server_configure(s, cfg, 2, 1, argv, err, sizeof err), 0) << err;
    char endpoint[256], name[64];
    ASSERT_EQ(ms_server_listen(s, "127.0.0.1", "127.0.0.1", endpoint, sizeof endpoint, err, sizeof err), 0) << err;
    ASSERT_EQ(ms_server_shm(s, name, sizeof name, err, sizeof err), 0) << err;
    int fd = shm_open(name, O_RDONLY, 0);
    ASSERT_GE(fd, 0);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    close(fd);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << "other users could open the segment";
    EXPECT_EQ(std::string(name).find(ms_server_secret(s)), std::string::npos) << "the name shows the secret";
    std::string secret = ms_server_secret(s), ep = endpoint, nm = name;
    pid_t child = fork();
    if (child == 0) {
        int bad = 0;
        char why[256];
        ms_transport a, b, c;
        ms_tp_init(&a);
        ms_tp_init(&b);
        ms_tp_init(&c);
        // a wrong secret in rank 1's slot: refused, and the slot stays closed to everyone
        if (ms_tp_attach_shm(&b, nm.c_str(), 1, why, sizeof why) != 0) _exit(10);
        bad += hello_tp(&b, "0123456789abcdef0123456789abcdef", 1, 2) != 0;
        // a HELLO naming another rank than its slot's: refused too
        if (ms_tp_attach_shm(&a, nm.c_str(), 0, why, sizeof why) != 0) _exit(11);
        bad += hello_tp(&a, secret.c_str(), 1, 2) != 0;
        // rank 1's slot is taken: it connects by TCP, as a rank on another host does
        bad += ms_tp_attach_shm(&c, nm.c_str(), 1, why, sizeof why) == 0;
        if (ms_tp_connect_tcp(&c, ep.c_str()) != 0) _exit(12);
        bad += hello_tp(&c, secret.c_str(), 1, 2) != 1;
        // rank 0's slot was refused too: it connects by TCP as well
        ms_transport d;
        ms_tp_init(&d);
        bad += ms_tp_attach_shm(&d, nm.c_str(), 0, why, sizeof why) == 0;
        if (ms_tp_connect_tcp(&d, ep.c_str()) != 0) _exit(13);
        bad += 16 * (hello_tp(&d, secret.c_str(), 0, 2) != 1);
        // every rank has attached: the name is gone. The server unlinks it just after sending the
        // last HELLO's answer, so it may be a moment late: up to 10 s for a server thread that a
        // loaded host does not run at once (the loop ends as soon as the name is gone)
        auto named = [&] {
            int fd = shm_open(nm.c_str(), O_RDONLY, 0);
            if (fd >= 0) close(fd);
            return fd >= 0 || errno != ENOENT;
        };
        for (int i = 0; i < 1000 && named(); i++) usleep(10000);
        bad += named();
        ms_tp_close(&d);
        ms_tp_close(&c);
        ms_tp_close(&b);
        ms_tp_close(&a);
        _exit(bad);
    }
    int status = 0;
    ASSERT_EQ(ms_server_run(s, child, &status, err, sizeof err), 0) << err;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ms_server_write_report(s, f);
    fclose(f);
    std::string report(buf, len);
    free(buf);
    EXPECT_NE(report.find("\"rejected_connections\": 2"), std::string::npos) << report.substr(report.find("summary"));
    ms_server_destroy(s);
    nm_config_destroy(cfg);
}

namespace {

// A rank of the run (it holds the secret) over TCP, welcomed; its socket, or -1.
int welcomed_rank(const std::string &ep, const std::string &secret, int rank, int size)
{
    int fd = connect_to(ep);
    if (fd < 0) return -1;
    ms_msg_header h{MS_MSG_HELLO, sizeof(ms_msg_hello)};
    ms_msg_hello m = make_hello(secret.c_str(), rank, size);
    if (write(fd, &h, sizeof h) != (ssize_t)sizeof h || write(fd, &m, sizeof m) != (ssize_t)sizeof m) return -1;
    ms_msg_header r;
    char body[sizeof(ms_msg_welcome)];
    if (read(fd, &r, sizeof r) != (ssize_t)sizeof r || r.type != MS_MSG_WELCOME) return -1;
    size_t got = 0;
    while (got < r.length) {
        ssize_t n = read(fd, body + got, r.length - got < sizeof body ? r.length - got : sizeof body);
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return fd;
}

std::string report_of(ms_server *s)
{
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ms_server_write_report(s, f);
    fclose(f);
    std::string r(buf, len);
    free(buf);
    return r;
}

}  // namespace

// Issue 25 item 14: a peer holding the secret declares a message of 2 GiB; the server refuses it
// at its header instead of buffering what follows (it took 272 MB before). Its FINALIZE and call
// site figures at the ends of int64 go into the report without overflow (UBSan in the sanitizer
// build), and a clock beyond the model's bounds is refused.
TEST(ServerBounds, DeclaredLengthsAndFiguresAreBounded)
{
    signal(SIGPIPE, SIG_IGN);
    char err[1024] = "";
    nm_config *cfg = nm_config_create();
    ASSERT_EQ(ms_driver_register_keys(cfg, err, sizeof err), 0) << err;
    ASSERT_EQ(nm_config_load_profile(cfg, "default", MPISIM_SOURCE_PROFILE_DIR, err, sizeof err), 0) << err;
    ms_server *s = ms_server_create();
    char *argv[] = {(char *)"prog"};
    ASSERT_EQ(ms_server_configure(s, cfg, 3, 1, argv, err, sizeof err), 0) << err;
    char endpoint[256];
    ASSERT_EQ(ms_server_listen(s, "127.0.0.1", "127.0.0.1", endpoint, sizeof endpoint, err, sizeof err), 0) << err;
    std::string secret = ms_server_secret(s), ep = endpoint;
    pid_t child = fork();
    if (child == 0) {
        signal(SIGPIPE, SIG_IGN);
        int fd = welcomed_rank(ep, secret, 0, 3);
        if (fd < 0) _exit(20);
        ms_msg_header h{MS_MSG_WAIT, 0x80000000u};
        if (write(fd, &h, sizeof h) != (ssize_t)sizeof h) _exit(21);
        // the server closes the connection at the header: far less than 256 MB get through
        static char junk[1 << 20];
        size_t sent = 0;
        for (int i = 0; i < 256; i++) {
            ssize_t n = send(fd, junk, sizeof junk, MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += (size_t)n;
        }
        close(fd);
        // rank 1 finalizes with figures at the ends of int64 and a site of INT64_MAX time
        int f1 = welcomed_rank(ep, secret, 1, 3), f2 = welcomed_rank(ep, secret, 2, 3);
        if (f1 < 0 || f2 < 0) _exit(22);
        for (int r = 1; r <= 2; r++) {
            int fd2 = r == 1 ? f1 : f2;
            ms_msg_site site;
            memset(&site, 0, sizeof site);
            site.fn = 0;
            site.calls = 1;
            site.time_ps = INT64_MAX;
            snprintf(site.text, sizeof site.text, "main+0x10 (prog+0x10)");
            ms_msg_header hs{MS_MSG_SITE, sizeof site};
            if (write(fd2, &hs, sizeof hs) != (ssize_t)sizeof hs || write(fd2, &site, sizeof site) != (ssize_t)sizeof site)
                _exit(23);
        }
        ms_msg_finalize fin;
        memset(&fin, 0, sizeof fin);
        fin.t = 1000;
        fin.charging.method = 1;
        fin.charging.gaps = 100;
        fin.charging.raw_ns = INT64_MAX;
        fin.charging.compensated_ns = INT64_MIN;
        fin.charging.woken_raw_ns = INT64_MIN;
        ms_msg_header hf{MS_MSG_FINALIZE, sizeof fin};
        if (write(f1, &hf, sizeof hf) != (ssize_t)sizeof hf || write(f1, &fin, sizeof fin) != (ssize_t)sizeof fin)
            _exit(24);
        fin.t = INT64_MAX;   // beyond the model's clock
        if (write(f2, &hf, sizeof hf) != (ssize_t)sizeof hf || write(f2, &fin, sizeof fin) != (ssize_t)sizeof fin)
            _exit(25);
        // rank 1 gets FIN_OK, rank 2 an ABORT: then both leave, as a shim would
        for (int fd2 : {f1, f2}) {
            ms_msg_header a;
            struct timeval tv = {10, 0};
            setsockopt(fd2, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            if (read(fd2, &a, sizeof a) != (ssize_t)sizeof a) _exit(27);
            close(fd2);
        }
        _exit(sent < ((size_t)64 << 20) ? 0 : 26);
    }
    int status = 0;
    ASSERT_EQ(ms_server_run(s, child, &status, err, sizeof err), 0) << err;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit " << WEXITSTATUS(status);
    std::string report = report_of(s);
    EXPECT_NE(report.find("with 2147483648 bytes, which no message of the protocol has"), std::string::npos) << report;
    EXPECT_NE(report.find("beyond the model's bounds"), std::string::npos) << report;
    ms_server_destroy(s);
    nm_config_destroy(cfg);
}
