// The model server accepts only its own job's ranks: a connection with a wrong secret, a rank
// outside the job, a wrong job size, a duplicate rank or garbage is refused and counted.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include "ms_server.h"
#include "protocol.h"
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
