// mpisim calibrate's library (cli/calib.c): reading the suites' outputs (files the project
// produced, tests/calibrate/data/README.md), the robust estimate, the piecewise fit on synthetic
// data with known breakpoints and noise, and the profile it writes (loaded as mpisim run would).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

extern "C" {
#include "calib.h"
#include "ms_driver.h"
#include "ms_model.h"
#include "netmodel.h"
}

static double urand(unsigned *s);
static std::string data(const char *name) { return std::string(CALIB_DATA) + "/" + name; }

struct Data {
    cal_data *d = cal_data_create();
    ~Data() { cal_data_destroy(d); }
};

static int read_text(cal_data *d, const std::string &text, std::string *err_out = nullptr)
{
    FILE *f = fmemopen((void *)text.data(), text.size(), "r");
    char err[512] = "";
    int n = cal_read_stream(d, f, "mem.txt", 0, err, sizeof err);
    fclose(f);
    if (err_out) *err_out = err;
    return n;
}

TEST(CalibRead, OsuTables)
{
    Data a;
    char err[512];
    ASSERT_GT(cal_read_file(a.d, data("osu_latency.txt").c_str(), 0, err, sizeof err), 20) << err;
    ASSERT_GT(cal_read_file(a.d, data("osu_bw.txt").c_str(), 0, err, sizeof err), 15) << err;
    ASSERT_GT(cal_read_file(a.d, data("osu_bibw.txt").c_str(), 0, err, sizeof err), 15) << err;
    cal_data_estimate(a.d);
    cal_series *lat = cal_find(a.d, CAL_PINGPONG, "send", 0), *bw = cal_find(a.d, CAL_STREAM, "isend", 0),
               *bi = cal_find(a.d, CAL_BOTHWAY, "isend", 0);
    ASSERT_TRUE(lat && bw && bi);
    EXPECT_STREQ(lat->origin, "OSU osu_latency");
    EXPECT_EQ(lat->p[0].bytes, 0);
    EXPECT_EQ(lat->p[lat->np - 1].bytes, 1048576);
    // the table's microseconds, read back (2 decimals)
    FILE *f = fopen(data("osu_latency.txt").c_str(), "r");
    char line[256];
    double size = -1, us = -1;
    while (fgets(line, sizeof line, f))
        if (line[0] != '#' && sscanf(line, "%lf %lf", &size, &us) == 2 && size == 1024) break;
    fclose(f);
    for (int i = 0; i < lat->np; i++) {
        if (lat->p[i].bytes == 1024) {
            EXPECT_NEAR(lat->p[i].est, us * 1e-6, 1e-12);
        }
    }
    // MB/s of 10^6 bytes into seconds per message (bibw: per pair of messages)
    for (int i = 0; i < bw->np; i++) {
        EXPECT_GT(bw->p[i].est, 0);
    }
    EXPECT_EQ(bw->p[0].bytes, 1);   // size 0 has no bandwidth
    EXPECT_EQ(bi->window, 64);
}

TEST(CalibRead, ImbPingPongAndPingPingInOneFile)
{
    Data a;
    char err[512];
    ASSERT_GT(cal_read_file(a.d, data("imb_pingpong_pingping.txt").c_str(), 0, err, sizeof err), 40) << err;
    cal_data_estimate(a.d);
    cal_series *pp = cal_find(a.d, CAL_PINGPONG, "send", 0), *pi = cal_find(a.d, CAL_BOTHWAY, "isend", 0);
    ASSERT_TRUE(pp && pi);
    EXPECT_STREQ(pp->origin, "IMB PingPong");
    EXPECT_STREQ(pi->origin, "IMB PingPing");
    EXPECT_EQ(pi->window, 1);
    EXPECT_EQ(pp->np, pi->np);
    // an IMB table of another benchmark in the same file is skipped, not an error
    Data b;
    std::string text = "#----\n# Benchmarking Sendrecv \n# #processes = 2 \n#----\n"
                       "       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]   Mbytes/sec\n"
                       "            0         1000         0.41         0.41         0.41         0.00\n"
                       "# Benchmarking PingPong \n       #bytes #repetitions      t[usec]   Mbytes/sec\n"
                       "            0         1000         0.23         0.00\n"
                       "            4         1000         0.25        16.00\n";
    EXPECT_EQ(read_text(b.d, text), 2);
}

TEST(CalibRead, NetpipeOutputFileAndTerminal)
{
    Data a, b;
    char err[512];
    int n1 = cal_read_file(a.d, data("netpipe_np.out").c_str(), 0, err, sizeof err);
    ASSERT_GT(n1, 30) << err;
    int n2 = cal_read_file(b.d, data("netpipe_stdout.txt").c_str(), 0, err, sizeof err);
    ASSERT_EQ(n1, n2) << err;
    cal_data_estimate(a.d);
    cal_data_estimate(b.d);
    cal_series *s1 = cal_find(a.d, CAL_PINGPONG, "send", 0), *s2 = cal_find(b.d, CAL_PINGPONG, "send", 0);
    ASSERT_TRUE(s1 && s2);
    EXPECT_STREQ(s1->origin, "NetPIPE");
    // the same measurements (the terminal's usec to 2 decimals)
    for (int i = 0; i < s1->np; i++) {
        EXPECT_EQ(s1->p[i].bytes, s2->p[i].bytes);
        EXPECT_NEAR(s1->p[i].est, s2->p[i].est, 0.006e-6 + 1e-3 * s1->p[i].est);
    }
    EXPECT_EQ(s1->p[0].bytes, 1);   // NetPIPE's perturbed sizes: 1, 2, 3, 4, 6, 8, 12, 13, ...
    EXPECT_EQ(s1->p[2].bytes, 3);
}

TEST(CalibRead, CalibenchRawAndItsErrors)
{
    Data a;
    char err[512];
    ASSERT_GT(cal_read_file(a.d, data("calibench_raw.txt").c_str(), -1, err, sizeof err), 100) << err;
    EXPECT_EQ(a.d->same_host, 1);
    cal_data_estimate(a.d);
    cal_series *pp = cal_find(a.d, CAL_PINGPONG, "send", 0), *bs = cal_find(a.d, CAL_PINGPONG, "bsend", 0);
    ASSERT_TRUE(pp && bs);
    EXPECT_EQ(pp->p[0].nv, 8);
    EXPECT_TRUE(cal_find(a.d, CAL_SENDCALL, "send", 0) && cal_find(a.d, CAL_RECVCALL, "send", 0));
    EXPECT_TRUE(cal_find(a.d, CAL_EMPTY, "iprobe", 0) && cal_find(a.d, CAL_COMPUTE, "mac", 0));
    // a line whose samples do not match its count, an unknown test, a failed check, garbage, nothing
    const char *head = "# calibench procs=2 same_host=1\ntest,mode,bytes,window,batch,samples,values_s\n";
    std::string e;
    Data b;
    EXPECT_EQ(read_text(b.d, std::string(head) + "pingpong,send,8,1,4,3,1e-6 2e-6\n", &e), -1);
    EXPECT_NE(e.find("mem.txt:3: 3 samples announced, 2 read"), std::string::npos) << e;
    EXPECT_EQ(read_text(b.d, std::string(head) + "pingpang,send,8,1,4,1,1e-6\n", &e), -1);
    EXPECT_NE(e.find("mem.txt:3: unknown test 'pingpang'"), std::string::npos) << e;
    EXPECT_EQ(read_text(b.d, std::string(head) + "pingpong,send,8,1,4,1,1e-6\n# check=FAIL errors=1\n", &e), -1);
    EXPECT_NE(e.find("check failed"), std::string::npos) << e;
    EXPECT_EQ(read_text(b.d, "hello world\n", &e), -1);
    EXPECT_NE(e.find("mem.txt:1: not a line of a known benchmark"), std::string::npos) << e;
    EXPECT_EQ(read_text(b.d, "# OSU MPI Latency Test v5.8\n# Size          Latency (us)\n", &e), -1);
    EXPECT_NE(e.find("no measurements"), std::string::npos) << e;
    EXPECT_EQ(read_text(b.d, "# OSU MPI Latency Test v5.8\n# Size          Latency (us)\n8 x\n", &e), -1);
    EXPECT_NE(e.find("mem.txt:3: expected 'SIZE VALUE'"), std::string::npos) << e;
    // OSU 7's extra columns: the average is read
    Data c;
    EXPECT_EQ(read_text(c.d, "# OSU MPI Latency Test v7.3\n# Datatype: MPI_CHAR.\n# Size       Avg Latency(us)   Min "
                             "Latency(us)   Max Latency(us)  Iterations\n1 1.50 1.20 1.90 10000\n"),
              1);
    cal_data_estimate(c.d);
    EXPECT_NEAR(cal_find(c.d, CAL_PINGPONG, "send", 0)->p[0].est, 1.5e-6, 1e-12);
}

// calibench's rounds (--rounds, --spread): each sample's round, each round's probes; a round
// whose probe took more than CAL_SLOW_ROUND x the best one's is left out of the estimates
TEST(CalibRead, CalibenchRoundsLeaveOutSlowSpells)
{
    Data a;
    char err[512];
    ASSERT_GT(cal_read_file(a.d, data("calibench_rounds.txt").c_str(), -1, err, sizeof err), 40) << err;
    ASSERT_EQ(a.d->nrounds, 4);
    cal_series *pp = cal_find(a.d, CAL_PINGPONG, "send", 0);
    ASSERT_TRUE(pp);
    EXPECT_EQ(pp->p[0].nv, 12);
    EXPECT_EQ(pp->p[0].rd[0], 0);
    EXPECT_EQ(pp->p[0].rd[11], 3);
    for (int k = 0; k < 4; k++) EXPECT_GT(a.d->rounds[k].before_s, 0);
    // a second run read after it numbers its rounds after the first run's
    ASSERT_GT(cal_read_file(a.d, data("calibench_rounds.txt").c_str(), -1, err, sizeof err), 40) << err;
    EXPECT_EQ(a.d->nrounds, 8);
    EXPECT_EQ(pp->p[0].nv, 24);
    EXPECT_EQ(cal_find(a.d, CAL_PINGPONG, "send", 0)->p[0].rd[23], 7);

    // four rounds of 3 samples, round 2 in a slow spell (its probe and its samples at 3x)
    const char *head = "# calibench procs=2 same_host=1\ntest,mode,bytes,window,batch,samples,values_s,rounds\n";
    std::string text = std::string(head) +
                       "pingpong,send,8,1,4,12,1.00e-7 1.01e-7 1.02e-7 1.00e-7 1.01e-7 1.02e-7 3.0e-7 3.1e-7 3.2e-7 "
                       "1.00e-7 1.01e-7 1.02e-7,0 0 0 1 1 1 2 2 2 3 3 3\n"
                       "pingpong,send,16,1,4,3,3.0e-7 3.1e-7 3.2e-7,2 2 2\n"
                       "pingpong,send,32,1,4,5,1.0e-7 1.0e-7 3.0e-7 3.1e-7 3.2e-7,0 1 2 2 2\n"
                       "# round=0 start_s=0 probe_before_s=1.0e-7 probe_after_s=1.1e-7\n"
                       "# round=1 start_s=1 probe_before_s=1.2e-7 probe_after_s=1.0e-7\n"
                       "# round=2 start_s=2 probe_before_s=1.1e-7 probe_after_s=3.3e-7\n"
                       "# round=3 start_s=3 probe_before_s=1.4e-7 probe_after_s=1.3e-7\n";
    Data b;
    ASSERT_EQ(read_text(b.d, text), 20);
    cal_data_estimate(b.d);
    EXPECT_EQ(b.d->rounds_out, 1);
    EXPECT_FALSE(b.d->rounds[2].kept);
    EXPECT_NEAR(b.d->best_probe, 1.1e-7, 1e-12);
    EXPECT_NEAR(b.d->worst_kept_probe, 1.4e-7, 1e-12);
    EXPECT_NEAR(b.d->best_out_probe, 3.3e-7, 1e-12);
    cal_series *s = cal_find(b.d, CAL_PINGPONG, "send", 0);
    EXPECT_LT(s->p[0].est, 1.03e-7);   // the slow round's samples left out
    EXPECT_EQ(s->p[0].slow_out, 3);
    // sizes with under 3 samples outside the slow round are taken out of their series, and said
    ASSERT_EQ(s->np, 1);
    EXPECT_EQ(b.d->points_out, 2);
    EXPECT_STREQ(b.d->points_out_text, "pingpong send 16 B, pingpong send 32 B");
    // estimating again (after a second pass) keeps what is left
    cal_data_estimate(b.d);
    EXPECT_EQ(cal_find(b.d, CAL_PINGPONG, "send", 0)->np, 1);
    EXPECT_EQ(b.d->points_out, 2);

    // all rounds slow but one: a quarter of the rounds (the fastest) still count
    std::string slow = std::string(head) + "pingpong,send,8,1,4,4,1e-7 2e-7 2e-7 2e-7,0 1 2 3\n"
                       "# round=0 start_s=0 probe_before_s=1e-7 probe_after_s=1e-7\n"
                       "# round=1 start_s=1 probe_before_s=3e-7 probe_after_s=3e-7\n"
                       "# round=2 start_s=2 probe_before_s=4e-7 probe_after_s=4e-7\n"
                       "# round=3 start_s=3 probe_before_s=5e-7 probe_after_s=5e-7\n";
    Data c;
    ASSERT_EQ(read_text(c.d, slow), 4);
    cal_data_estimate(c.d);
    EXPECT_EQ(c.d->rounds_out, 3);
    // no probes (a quick run, an older file): every round counts
    Data d;
    ASSERT_EQ(read_text(d.d, std::string(head) + "pingpong,send,8,1,4,2,1e-7 3e-7,0 1\n"
                                                 "# round=0 start_s=0 probe_before_s=0 probe_after_s=0\n"), 2);
    cal_data_estimate(d.d);
    EXPECT_EQ(d.d->rounds_out, 0);
    EXPECT_TRUE(d.d->rounds[0].kept);

    // malformed: rounds that do not match the samples, a round that is no number, a bad round line
    std::string e;
    Data x;
    EXPECT_EQ(read_text(x.d, std::string(head) + "pingpong,send,8,1,4,2,1e-7 2e-7,0\n", &e), -1);
    EXPECT_NE(e.find("mem.txt:3: 2 samples but 1 rounds"), std::string::npos) << e;
    EXPECT_EQ(read_text(x.d, std::string(head) + "pingpong,send,8,1,4,2,1e-7 2e-7,0 1.5\n", &e), -1);
    EXPECT_NE(e.find("mem.txt:3: round '1.5' of sample 2"), std::string::npos) << e;
    EXPECT_EQ(read_text(x.d, std::string(head) + "pingpong,send,8,1,4,1,1e-7,0\n# round=0 start_s=0 probe_before_s=x\n", &e), -1);
    EXPECT_NE(e.find("mem.txt:4: expected '# round=K"), std::string::npos) << e;
}

// a deterministic generator: the same noise every run
static double urand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffffff) / (double)0x1000000;
}

TEST(CalibStats, LocationOfSamplesDisturbedUpwards)
{
    unsigned seed = 7;
    // 31 samples: 12 around 1.00 us (1 % noise), 19 disturbed by 10 % to 50x (a busy machine)
    std::vector<double> v;
    for (int i = 0; i < 12; i++) v.push_back(1e-6 * (1 + 0.01 * (urand(&seed) - 0.5)));
    for (int i = 0; i < 19; i++) v.push_back(1e-6 * (1.1 + 49 * urand(&seed)));
    double spread;
    int rej;
    double est = cal_location(v.data(), (int)v.size(), &spread, &rej);
    EXPECT_NEAR(est, 1e-6, 0.01e-6);
    EXPECT_LT(spread, 0.05);
    EXPECT_GE(rej, 15);
    // few samples: the median
    double three[3] = {3, 1, 2};
    EXPECT_EQ(cal_location(three, 3, nullptr, nullptr), 2);
}

// Synthetic ping-pong: a + b x per range with breaks at 512 (a step), 4096 (the protocol switch:
// a step) and 1 MiB (the slope changes: a cache), 3 % noise and every seventh size disturbed by 2-4x.
static double truth(double x)
{
    if (x < 512) return 0.30e-6 + x * 0.2e-12 * 1000;
    if (x < 4096) return 0.70e-6 + x * 0.25e-9;
    if (x < 1048576) return 1.60e-6 + x * 0.045e-9;
    return -150e-6 + x * 0.19e-9;
}

TEST(CalibFit, SegmentsFindKnownBreakpointsThroughNoise)
{
    std::vector<double> x, y;
    unsigned seed = 11;
    for (double b = 16; b <= 4 * 1048576; b *= 1.41421356) {
        double xb = std::floor(b);
        x.push_back(xb);
        double noise = 1 + 0.03 * (2 * urand(&seed) - 1);
        double disturbed = x.size() % 7 == 3 ? 2 + 2 * urand(&seed) : 1;
        y.push_back(truth(xb) * noise * disturbed);
    }
    cal_seg seg[CAL_MAX_SEG];
    int ns = cal_segments(x.data(), y.data(), (int)x.size(), 8, 3, seg);
    for (int j = 0; j < ns; j++) printf("segment %d: %.0f..%.0f, %.1f %% rms\n", j, seg[j].from, seg[j].to, 100 * seg[j].rms);
    ASSERT_GE(ns, 4);
    ASSERT_LE(ns, 5);
    // each true break is at a segment start, to the size step
    for (double br : {512.0, 4096.0, 1048576.0}) {
        bool found = false;
        for (int j = 1; j < ns; j++) found |= seg[j].from >= br && seg[j - 1].to < br;
        EXPECT_TRUE(found) << "no breakpoint at " << br;
    }
    // the lines follow the truth (not the disturbed points) within 5 %
    for (int j = 0; j < ns; j++)
        for (int i = seg[j].first; i <= seg[j].last; i++)
            EXPECT_NEAR((seg[j].a + seg[j].b * x[i]) / truth(x[i]), 1, 0.06) << "size " << x[i];
}

// A machine made up from the model's own formulas: calibench-like ping-pong, send and receive
// calls from known parameters; the fit must find the threshold and give back the parameters.
TEST(CalibFit, ModelParametersFromSyntheticBenchmarks)
{
    const double L = 150e-9, os = 60e-9, orr = 70e-9, cp_e = 0.30e-9, or_pb = 0.02e-9, T = 4096, cp_r = 0.04e-9,
                 cp_sh = 0.11e-9;
    Data a;
    unsigned seed = 3;
    std::vector<double> sizes = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 16384,
                                 32768, 65536, 131072, 262144, 524288, 1048576};
    for (double b : sizes) {
        for (int k = 0; k < 9; k++) {
            double n = 1 + 0.01 * (2 * urand(&seed) - 1), d = k == 4 ? 5 : 1;   // one disturbed sample in 9
            double P, S, R;
            if (b < T) {
                S = os + cp_e * b, R = orr + or_pb * b, P = S + L + R;
            } else {
                double C = cp_r * b + 100e-9;   // the receiver's copy and a constant
                R = orr + 2 * L + C, S = os + 200e-9 + orr + 3 * L + C, P = S + 20e-9;
            }
            cal_add_sample(a.d, CAL_PINGPONG, "send", 1, 0, "calibench pingpong", b, P * n * d);
            cal_add_sample(a.d, CAL_SENDCALL, "send", 1, 0, "calibench sendcall", b, S * n);
            cal_add_sample(a.d, CAL_RECVCALL, "send", 1, 0, "calibench recvcall", b, R * n);
            // forwarding: the rendezvous copy into lines the other core holds costs cp_sh per byte
            if (b >= 2048) cal_add_sample(a.d, CAL_FORWARD, "send", 1, 0, "calibench forward", b,
                                          (P + (b >= T ? (cp_sh - cp_r) * b : 0)) * n);
        }
    }
    // collectives against the same by hand: allreduce 90 ns of its own path, bcast none, barrier
    // 10 ns faster than its exchange (fitted as 0)
    for (double b : {8.0, 64.0, 512.0})
        for (int k = 0; k < 9; k++) {
            double n = 1 + 0.01 * (2 * urand(&seed) - 1), x = 2 * L + 3e-10 * b;
            cal_add_sample(a.d, CAL_COLL, "allreduce", 1, 0, "calibench coll", b, x + 90e-9);
            cal_add_sample(a.d, CAL_COLL, "allreduce_p2p", 1, 0, "calibench coll", b, x * n);
            cal_add_sample(a.d, CAL_COLL, "bcast", 1, 0, "calibench coll", b, x * n);
            cal_add_sample(a.d, CAL_COLL, "bcast_p2p", 1, 0, "calibench coll", b, x * n);
        }
    for (int k = 0; k < 9; k++) {
        cal_add_sample(a.d, CAL_COLL, "barrier", 1, 0, "calibench coll", 0, 2 * L - 10e-9);
        cal_add_sample(a.d, CAL_COLL, "barrier_p2p", 1, 0, "calibench coll", 0, 2 * L);
    }
    cal_data_estimate(a.d);
    cal_fit f;
    char err[256];
    ASSERT_EQ(cal_fit_run(a.d, "2000-01-01", &f, err, sizeof err), 0) << err;
    EXPECT_NEAR(f.coll_own[0], 90000, 8000);
    EXPECT_NEAR(f.coll_own[1], 0, 8000);
    EXPECT_EQ(f.coll_own[2], 0);
    EXPECT_EQ(f.eager_threshold, 4096);
    {
        int jr = cal_fit_segment_of(&f, 65536);
        EXPECT_NEAR(f.copy_shared_pb[jr], cp_sh * 1e12, 0.10 * cp_sh * 1e12);
        EXPECT_LT(f.copy_shared_pb[0], 0) << "eager ranges have none";
    }
    EXPECT_EQ(f.threshold_resolution, 1024);
    EXPECT_NEAR(f.shm_latency, L * 1e12, 0.05 * L * 1e12);
    EXPECT_NEAR(f.os[0], os * 1e12, 8000);
    EXPECT_NEAR(f.or_[0], orr * 1e12, 8000);
    EXPECT_NEAR(f.copy_pb[0], cp_e * 1e12, 0.05 * cp_e * 1e12);
    int j = cal_fit_segment_of(&f, 65536);
    EXPECT_TRUE(f.rndv[j]);
    EXPECT_NEAR(f.copy_pb[j], cp_r * 1e12, 0.10 * cp_r * 1e12);
    EXPECT_EQ(f.ack[0], 0);
    // cal_refine_sizes: 15 sizes inside the protocol switch's bracket (3072, 4096), none elsewhere
    // (nothing disturbed: the ping-pong's disturbed sample was one in nine)
    long sizes_again[64];
    int nr = cal_refine_sizes(a.d, &f, sizes_again, 64), inside = 0;
    for (int i = 0; i < nr; i++) inside += sizes_again[i] > 3072 && sizes_again[i] < 4096;
    EXPECT_EQ(inside, 15);

    // the profile: every fitted key with its source, loadable as mpisim run loads it, and the
    // model accepts its size ranges
    char *buf = nullptr;
    size_t len = 0;
    FILE *o = open_memstream(&buf, &len);
    ASSERT_EQ(cal_write_profile(&f, o, "test profile\nsecond line", "default", 2, 1), 0);
    fclose(o);
    std::string prof(buf, len);
    free(buf);
    EXPECT_NE(prof.find("eager_threshold = 4096 B\neager_threshold.source = calibrated: calibench pingpong and recvcall"),
              std::string::npos)
        << prof;
    EXPECT_NE(prof.find("shm_latency.source = calibrated:"), std::string::npos);
    EXPECT_NE(prof.find("COPY_SHARED_PB calibrated: calibench forward"), std::string::npos) << prof;
    for (size_t p = 0, q; p < prof.size(); p = q + 1) {
        q = prof.find('\n', p);
        if (q == std::string::npos) q = prof.size();
        EXPECT_LT(q - p, 199u) << "a line inih would refuse: " << prof.substr(p, q - p);
    }
    char path[] = "/tmp/test_calib_XXXXXX.ini";
    int fd = mkstemps(path, 4);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, prof.data(), prof.size()), (ssize_t)prof.size());
    close(fd);
    nm_config *cfg = nm_config_create();
    char e2[1024];
    ASSERT_EQ(ms_driver_register_keys(cfg, e2, sizeof e2), 0) << e2;
    ASSERT_EQ(nm_config_load_profile(cfg, path, MPISIM_SOURCE_PROFILE_DIR, e2, sizeof e2), 0) << e2 << "\n" << prof;
    unlink(path);
    EXPECT_EQ(nm_config_int(cfg, "mpi.eager_threshold"), 4096);
    EXPECT_NEAR((double)nm_config_int(cfg, "mpi.allreduce_overhead"), 90000, 8000);
    EXPECT_EQ(std::string(nm_config_note(cfg, "mpi.allreduce_overhead")).substr(0, 35), "calibrated: calibench coll allreduc");
    EXPECT_EQ(std::string(nm_config_note(cfg, "host.shm_latency")).substr(0, 11), "calibrated:");
    EXPECT_STREQ(nm_config_kind(cfg, "host.shm_latency"), "calibrated");
    EXPECT_EQ(nm_config_int(cfg, "host.ranks_per_node"), 2);
    nm_topology *t = nm_topology_load("crossbar:2", cfg, e2, sizeof e2);
    ASSERT_NE(t, nullptr) << e2;
    nm_network *n = nm_network_create(cfg, t, e2, sizeof e2);
    ASSERT_NE(n, nullptr) << e2;
    int hosts[2] = {0, 0};
    ms_model *m = ms_model_create(cfg, n, 2, hosts, e2, sizeof e2);
    EXPECT_NE(m, nullptr) << e2;
    ms_model_destroy(m);
    nm_network_destroy(n);
    nm_topology_destroy(t);
    nm_config_destroy(cfg);
}

// Property: any prefix of a real file, and a file with bytes changed at random, reads without a
// crash: either values or an error naming the file and a line.
TEST(CalibRead, TruncatedAndMutatedFilesFailCleanly)
{
    const char *files[] = {"osu_latency.txt", "osu_bw.txt", "imb_pingpong_pingping.txt", "netpipe_np.out",
                           "netpipe_stdout.txt", "calibench_raw.txt", "calibench_rounds.txt"};
    unsigned seed = 5;
    for (const char *name : files) {
        FILE *f = fopen(data(name).c_str(), "r");
        ASSERT_NE(f, nullptr);
        std::string text;
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
        fclose(f);
        for (size_t cut = 0; cut < text.size(); cut += 1 + text.size() / 61) {
            Data a;
            std::string e;
            int r = read_text(a.d, text.substr(0, cut), &e);
            EXPECT_TRUE(r > 0 || (r == -1 && e.find("mem.txt") == 0)) << name << " cut at " << cut << ": " << e;
        }
        for (int k = 0; k < 40; k++) {
            std::string t = text;
            for (int j = 0; j < 4; j++) t[(size_t)(urand(&seed) * (double)t.size())] = (char)(urand(&seed) * 256);
            Data a;
            std::string e;
            int r = read_text(a.d, t, &e);
            EXPECT_TRUE(r > 0 || (r == -1 && e.find("mem.txt") == 0)) << name << ": " << e;
            if (r > 0) cal_data_estimate(a.d);
        }
    }
}
