// Traces read stretch by stretch as the replay plays them (ms_trace_stream, ms_replay_run_stream):
// the same records as the whole read, the same replay results, memory bounded by the
// ranks and a stretch whatever the trace's length, and a trace whose records cannot be read from
// some point on reported with the file and the rank after replaying what could be read.
#include <gtest/gtest.h>

#include <ftw.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ms_replay.h"
#include "ms_trace.h"
#include "ms_trace_internal.h"
#include "synth_trace.h"
#include "test_tmpdir.h"

namespace {

std::string write(ms_trace *t, const std::string &name)
{
    std::string path = tmpdir() + "/" + name;
    char err[512];
    EXPECT_EQ(ms_trace_write_h5(t, path.c_str(), err, sizeof err), 0) << err;
    return path;
}

nm_config *config(const ms_trace *t, const std::vector<std::string> &sets)
{
    std::vector<const char *> s;
    for (auto &x : sets) s.push_back(x.c_str());
    char err[1024];
    nm_config *cfg = ms_replay_config(t, sets.empty() ? nullptr : "default", s.data(), (int)s.size(), nullptr, 0, err,
                                      sizeof err);
    EXPECT_NE(cfg, nullptr) << err;
    return cfg;
}

// Replay a trace file read whole, then streamed: every result must be the same.
void expect_same_replay(const std::string &path, const std::vector<std::string> &sets)
{
    char err[1024];
    ms_trace *t = ms_trace_read_h5(path.c_str(), err, sizeof err);
    ASSERT_NE(t, nullptr) << err;
    ms_trace_stream *s = ms_trace_stream_open(path.c_str(), err, sizeof err);
    ASSERT_NE(s, nullptr) << err;
    nm_config *cfg = config(t, sets);
    ms_replay_opts o = {1.0, MS_WILDCARDS_RECORDED, nullptr, nullptr, nullptr, nullptr, nullptr};
    ms_replay_result a, b;
    ASSERT_EQ(ms_replay_run(t, cfg, &o, &a, err, sizeof err), 0) << err;
    ASSERT_EQ(ms_replay_run_stream(s, cfg, &o, &b, err, sizeof err), 0) << err;
    EXPECT_EQ(a.outcome, b.outcome) << path;
    EXPECT_STREQ(a.outcome_text, b.outcome_text);
    EXPECT_EQ(a.virtual_time_ps, b.virtual_time_ps) << path;
    EXPECT_EQ(a.mean_end_ps, b.mean_end_ps);
    EXPECT_EQ(a.msgs_sent, b.msgs_sent);
    EXPECT_EQ(a.events, b.events);
    EXPECT_EQ(a.resumes, b.resumes);
    EXPECT_EQ(a.resumes_checked, b.resumes_checked);
    EXPECT_EQ(a.resumes_differ, b.resumes_differ);
    EXPECT_STREQ(a.first_difference, b.first_difference);
    ASSERT_EQ(a.nranks, b.nranks);
    for (int i = 0; i < a.nranks; i++) {
        const ms_replay_rank_result &x = a.ranks[i], &y = b.ranks[i];
        EXPECT_EQ(x.virtual_end_ps, y.virtual_end_ps) << path << " rank " << i;
        EXPECT_EQ(x.compute_ps, y.compute_ps);
        EXPECT_EQ(x.calls, y.calls);
        EXPECT_EQ(x.msgs_recv, y.msgs_recv);
        EXPECT_EQ(x.bytes_recv, y.bytes_recv);
        EXPECT_EQ(x.unmodelled, y.unmodelled);
        EXPECT_EQ(x.status, y.status);
        EXPECT_EQ(x.recorded_end_known, y.recorded_end_known);
        EXPECT_EQ(x.recorded_end_ps, y.recorded_end_ps);
    }
    EXPECT_GT(b.trace_bytes_peak, 0u);
    ms_replay_result_free(&a);
    ms_replay_result_free(&b);
    nm_config_destroy(cfg);
    ms_trace_stream_close(s);
    ms_trace_free(t);
}

}  // namespace

TEST(Stream, StretchesHoldTheSameRecordsAsTheWholeRead)
{
    ms_trace *t = synth_stencil(4, 400, 256, 1000);   // ~10 k records per rank: several chunks
    std::string path = write(t, "st.h5");
    char err[1024];
    ms_trace_stream *s = ms_trace_stream_open(path.c_str(), err, sizeof err);
    ASSERT_NE(s, nullptr) << err;
    const ms_trace *h = ms_trace_stream_trace(s);
    ASSERT_EQ(h->nranks, 4);
    EXPECT_EQ(ms_trace_validate_shape(h, "x", err, sizeof err), 0) << err;
    ms_trace_window w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < 4; i++) {
        const ms_trace_rank &r = t->ranks[i];
        const ms_trace_rank_size *sz = ms_trace_stream_size(s, i);
        ASSERT_EQ(sz->nev, r.nev);
        ASSERT_EQ(sz->nlists, r.nlists);
        ASSERT_GT(sz->nev, 4 * sz->chunk);
        EXPECT_EQ(h->ranks[i].nev, 0u);   // no records in memory
        for (size_t step : {(size_t)1, (size_t)333, sz->chunk, (size_t)5000}) {
            for (size_t a = 0; a < r.nev; a += step) {
                size_t b = a + step < r.nev ? a + step : r.nev;
                ASSERT_EQ(ms_trace_stream_read(s, i, a, b, &w, err, sizeof err), 0) << err;
                ASSERT_EQ(w.from, a);
                ASSERT_EQ(w.n, b - a);
                ASSERT_EQ(ms_trace_validate_window(h, i, sz, &w, a, b, "x", err, sizeof err), 0) << err;
                ASSERT_EQ(memcmp(w.ev, r.ev + a, (b - a) * sizeof *w.ev), 0) << i << " " << a;
                for (size_t k = a; k < b; k++) {
                    const ms_trace_event &e = r.ev[k];
                    if ((e.kind == MS_TRACE_WAIT || e.kind == MS_TRACE_ICOLL) && e.list_n > 0) {
                        ASSERT_EQ(memcmp(w.lists + (e.list_off - (int64_t)w.lists_from), r.lists + e.list_off,
                                         8 * (size_t)e.list_n),
                                  0);
                    }
                }
            }
        }
    }
    // out of range: an error naming the file and the rank, and the stream stays usable
    EXPECT_LT(ms_trace_stream_read(s, 2, 0, t->ranks[2].nev + 1, &w, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("rank 2"), std::string::npos) << err;
    EXPECT_EQ(ms_trace_stream_read(s, 2, 0, 10, &w, err, sizeof err), 0) << err;
    ms_trace_window_free(&w);
    ms_trace_stream_close(s);
    ms_trace_free(t);
}

TEST(Stream, OpenErrorsNameTheFile)
{
    char err[1024];
    std::string none = tmpdir() + "/none.h5";
    EXPECT_EQ(ms_trace_stream_open(none.c_str(), err, sizeof err), nullptr);
    EXPECT_NE(std::string(err).find("none.h5"), std::string::npos) << err;
    std::string junk = tmpdir() + "/junk.h5";
    FILE *f = fopen(junk.c_str(), "wb");
    for (int i = 0; i < 1000; i++) fputc('x', f);
    fclose(f);
    EXPECT_EQ(ms_trace_stream_open(junk.c_str(), err, sizeof err), nullptr);
    EXPECT_NE(std::string(err).find("junk.h5: not an HDF5 file"), std::string::npos) << err;
}

TEST(Stream, ReplayGivesTheSameResultsAsTheWholeTrace)
{
    struct Case {
        ms_trace *t;
        const char *name;
        std::vector<std::string> sets;
    } cases[] = {
        {synth_stencil(16, 300, 1024, 2000000), "stencil.h5", {"network.engine=analytic"}},
        {synth_stencil(8, 40, 512, 200000), "stencil_myri.h5", {"network.engine=myrinet"}},
        {synth_fan(64, 20, 2048), "fan.h5", {"network.engine=analytic"}},
        {synth_pingpong(5000, 64, 1000), "pp.h5", {"network.engine=analytic"}},
    };
    for (Case &c : cases) {
        expect_same_replay(write(c.t, c.name), c.sets);
        ms_trace_free(c.t);
    }
    // captures of real runs (co-simulation traces: resume times compared with the recording)
    expect_same_replay(MPISIM_SOURCE_DIR "/tests/golden/data/collectives_np4.h5", {});
    expect_same_replay(MPISIM_SOURCE_DIR "/results/casestudy_matmul64.h5", {});
}

// What the replay holds of the trace is a stretch per rank: a ping-pong ten times longer holds
// no more (the whole trace would be 10 x 8 MB here).
TEST(Stream, MemoryDoesNotGrowWithTheTrace)
{
    uint64_t peak[2] = {0, 0};
    size_t records[2] = {0, 0};
    int k = 0;
    for (int iters : {4000, 40000}) {
        ms_trace *t = synth_pingpong(iters, 64, 1000);
        records[k] = t->ranks[0].nev + t->ranks[1].nev;
        std::string path = write(t, "long.h5");
        char err[1024];
        ms_trace_stream *s = ms_trace_stream_open(path.c_str(), err, sizeof err);
        ASSERT_NE(s, nullptr) << err;
        nm_config *cfg = config(t, {"network.engine=analytic"});
        ms_replay_result r;
        ASSERT_EQ(ms_replay_run_stream(s, cfg, nullptr, &r, err, sizeof err), 0) << err;
        EXPECT_EQ(r.outcome, 0) << r.outcome_text;
        EXPECT_EQ(r.ranks[1].msgs_recv, (uint64_t)iters);
        peak[k++] = r.trace_bytes_peak;
        ms_replay_result_free(&r);
        nm_config_destroy(cfg);
        ms_trace_stream_close(s);
        ms_trace_free(t);
    }
    EXPECT_GT(records[1] * sizeof(ms_trace_event), 50u << 20);   // the long trace: > 50 MB of records
    // per rank at most three stretches of 1024 records (the one it plays, which a wait's look-ahead
    // may extend by one, and the next one read ahead), with the parts of its lists they point into
    const uint64_t bound = 2 * 3 * 1024 * (sizeof(ms_trace_event) + 64);
    EXPECT_LE(peak[0], bound);
    EXPECT_LE(peak[1], bound);
    EXPECT_EQ(peak[0], peak[1]);
}

// A rank whose records cannot be read from some point on (here: one stretch of its compact records
// in the middle of the file overwritten): the replay plays everything up to there, then stops with
// the error naming the file, the rank and the records; the result holds what was replayed.
TEST(Stream, UnreadableRecordsStopTheReplayWithWhatWasPlayed)
{
    const int iters = 3000;
    ms_trace *t = synth_pingpong(iters, 64, 1000);
    std::string path = write(t, "cut.h5");
    // where rank 1's 10th stretch of records lies in the file (schema 2: /records, /stretches)
    haddr_t addr = 0;
    hsize_t size = 0, first = 0;
    {
        hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        ASSERT_GE(f, 0);
        hid_t d = H5Dopen2(f, "records", H5P_DEFAULT), st = H5Dopen2(f, "stretches", H5P_DEFAULT);
        ASSERT_GE(d, 0);
        ASSERT_GE(st, 0);
        hid_t sp = H5Dget_space(st);
        hsize_t n = 0;
        H5Sget_simple_extent_dims(sp, &n, NULL);
        std::vector<uint64_t> off(n);
        ASSERT_GE(H5Dread(st, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, off.data()), 0);
        size_t rank1 = (t->ranks[0].nev + MS_TRACE_STRETCH - 1) / MS_TRACE_STRETCH, j = rank1 + 10;
        ASSERT_LT(j + 1, n);
        addr = H5Dget_offset(d) + off[j];
        size = off[j + 1] - off[j];
        first = 10 * MS_TRACE_STRETCH;
        H5Sclose(sp);
        H5Dclose(st);
        H5Dclose(d);
        H5Fclose(f);
    }
    {
        FILE *f = fopen(path.c_str(), "r+b");
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(fseek(f, (long)addr, SEEK_SET), 0);
        std::vector<unsigned char> junk(size, 0x5a);
        ASSERT_EQ(fwrite(junk.data(), 1, size, f), size);
        fclose(f);
    }
    char err[1024];
    ms_trace *whole = ms_trace_read_h5(path.c_str(), err, sizeof err);   // the whole read: nothing
    EXPECT_EQ(whole, nullptr);
    ms_trace_free(whole);
    ms_trace_stream *s = ms_trace_stream_open(path.c_str(), err, sizeof err);
    ASSERT_NE(s, nullptr) << err;   // the damage is in the records, not the metadata
    nm_config *cfg = config(t, {"network.engine=analytic"});
    ms_replay_result r;
    ASSERT_EQ(ms_replay_run_stream(s, cfg, nullptr, &r, err, sizeof err), 0) << err;
    EXPECT_EQ(r.outcome, 2);
    std::string text = r.outcome_text;
    EXPECT_NE(text.find(path), std::string::npos) << text;
    EXPECT_NE(text.find("of rank 1"), std::string::npos) << text;
    EXPECT_NE(text.find("records [" + std::to_string(first) + ","), std::string::npos) << text;
    EXPECT_NE(text.find("what was replayed up to that point"), std::string::npos) << text;
    // rank 1 played its records before the damaged chunk: about first / (records per round)
    // rounds of the ping-pong, rank 0 as far as rank 1 let it
    size_t per_round = t->ranks[1].nev / iters;
    uint64_t rounds = r.ranks[1].msgs_recv;
    EXPECT_GT(rounds + 2, first / per_round - 2) << rounds;
    EXPECT_LT(rounds, (uint64_t)iters);
    EXPECT_GT(r.ranks[0].calls, 0u);
    EXPECT_GT(r.virtual_time_ps, 0);
    ms_replay_result_free(&r);
    // those records are that error again; the others can still be read
    ms_trace_window w;
    memset(&w, 0, sizeof w);
    EXPECT_LT(ms_trace_stream_read(s, 1, first, first + 10, &w, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("of rank 1"), std::string::npos) << err;
    EXPECT_EQ(ms_trace_stream_read(s, 1, 0, 10, &w, err, sizeof err), 0) << err;
    EXPECT_EQ(ms_trace_stream_read(s, 0, 0, t->ranks[0].nev, &w, err, sizeof err), 0) << err;
    ms_trace_window_free(&w);
    nm_config_destroy(cfg);
    ms_trace_stream_close(s);
    ms_trace_free(t);
}
