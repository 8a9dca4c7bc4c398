// ms_trace: raw reader (truncation, corruption, fuzz), HDF5 round trip, corrupt HDF5, conversion.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <ftw.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_trace.h"
#include "ms_trace_internal.h"
#include "protocol.h"
#include "synth_trace.h"
#include "test_tmpdir.h"
#include "trace_raw.h"

namespace {

// A trace using every record kind.
ms_trace *rich_trace()
{
    synth *s = synth_new(3);
    int32_t mem[2] = {0, 2};
    for (int r = 0; r < 3; r++) {
        synth_call(s, r, SY_COMM_SPLIT, 1000);
        uint64_t q = synth_icoll(s, r, 3 /* allreduce */, 0, 16, 0);
        synth_wait(s, r, 0, 1, &q, MS_WAIT_FLAG_SYNC);
        ms_trace_result res = {q, 5000, 16, 1, -1, -1, 0};
        synth_resume(s, r, 5000, 1, &res);
        synth_exit(s, r, SY_COMM_SPLIT);
        if (r != 1) synth_comm_add(s, r, 0x1234, 2, mem);
    }
    synth_send(s, 0, 2000, 1, 5, 100);
    synth_post_details(s, 0, 0x7ffd12345000ull, 0);
    synth_call(s, 1, SY_RECV, 0);
    uint64_t q = synth_irecv(s, 1, -1, -1, 100, 0);
    synth_post_details(s, 1, 0x55aa00001000ull, MS_TRACE_FLAG_NOTIFY);   // (the format's round trip)
    synth_wait(s, 1, 0, 1, &q, 0);
    synth_resolve(s, 1, q, 0, 5, 100);
    ms_trace_result res = {q, 9000, 100, 1, 0, 5, 0};
    synth_resume(s, 1, 9000, 1, &res);
    synth_exit(s, 1, SY_RECV);
    synth_call(s, 2, SY_PROBE, 0);
    synth_probe(s, 2, -1, -1, 0, 0);
    ms_trace_result pr = {0, 0, 0, 0, -1, -1, 0};
    synth_resume(s, 2, 7000, 1, &pr);
    synth_exit(s, 2, SY_PROBE);
    for (int r = 0; r < 3; r++) synth_finalize(s, r);
    ms_trace *t = synth_finish(s);
    // an unmodelled-call text on rank 2
    ms_trace_rank *r2 = &t->ranks[2];
    const char *txt = "MPI_Win_create";
    r2->text = (char *)realloc(r2->text, strlen(txt) + 1);
    strcpy(r2->text, txt);
    r2->ntext = strlen(txt) + 1;
    r2->ev = (ms_trace_event *)realloc(r2->ev, sizeof *r2->ev * (r2->nev + 1));
    memmove(r2->ev + 1, r2->ev, sizeof *r2->ev * r2->nev);
    memset(r2->ev, 0, sizeof *r2->ev);
    r2->ev[0].kind = MS_MSG_UNMODELLED;
    r2->ev[0].fn = -1;
    r2->ev[0].list_n = (int32_t)strlen(txt);
    r2->ev[0].matched_source = r2->ev[0].matched_tag = MS_TRACE_UNKNOWN;
    r2->ev[0].complete_ps = MS_TRACE_UNKNOWN_TIME;
    r2->nev++;
    return t;
}

void expect_same_events(const ms_trace_rank &a, const ms_trace_rank &b, bool derived_fields)
{
    ASSERT_EQ(a.nev, b.nev);
    for (size_t k = 0; k < a.nev; k++) {
        const ms_trace_event &x = a.ev[k], &y = b.ev[k];
        EXPECT_EQ(x.kind, y.kind) << k;
        EXPECT_EQ(x.fn, y.fn) << k;
        EXPECT_EQ(x.t_ps, y.t_ps) << k;
        EXPECT_EQ(x.compute_ps, y.compute_ps) << k;
        EXPECT_EQ(x.comm, y.comm) << k;
        EXPECT_EQ(x.bytes, y.bytes) << k;
        EXPECT_EQ(x.req, y.req) << k;
        EXPECT_EQ(x.peer, y.peer) << k;
        EXPECT_EQ(x.tag, y.tag) << k;
        EXPECT_EQ(x.mode, y.mode) << k;
        EXPECT_EQ(x.flags, y.flags) << k;
        EXPECT_EQ(x.callsite, y.callsite) << k;   // ISEND/IRECV: the user's buffer
        if (x.kind != MS_MSG_COMM_ADD) {
            EXPECT_EQ(x.list_n, y.list_n) << k;
        }
        if (derived_fields) {
            EXPECT_EQ(x.matched_source, y.matched_source) << k;
            EXPECT_EQ(x.matched_tag, y.matched_tag) << k;
            EXPECT_EQ(x.complete_ps, y.complete_ps) << k;
        }
    }
}

std::vector<unsigned char> raw_of(const ms_trace *t, int rank)
{
    size_t n;
    unsigned char *d = synth_raw_bytes(t, rank, &n);
    std::vector<unsigned char> v(d, d + n);
    free(d);
    return v;
}

int parse(const std::vector<unsigned char> &v, ms_trace_rank *r, std::string *err)
{
    char e[512] = "";
    int32_t nr = 0;
    int32_t *mem = nullptr;
    size_t nmem = 0;
    int rc = ms_trace_parse_raw(v.data(), v.size(), "rank-0.mstrace", r, &nr, &mem, &nmem, e, sizeof e);
    free(mem);
    if (err) *err = e;
    return rc;
}

void rank_free(ms_trace_rank *r)
{
    free(r->ev);
    free(r->lists);
    free(r->results);
    free(r->text);
    memset(r, 0, sizeof *r);
}

}  // namespace

TEST(RawReader, ReadsEveryKindAndDerivesMatches)
{
    ms_trace *t = rich_trace();
    for (int rank = 0; rank < 3; rank++) {
        std::vector<unsigned char> v = raw_of(t, rank);
        ms_trace_rank r;
        std::string err;
        ASSERT_EQ(parse(v, &r, &err), 0) << err;
        EXPECT_EQ(r.truncated, 0);
        expect_same_events(t->ranks[rank], r, false);
        if (rank == 1) {
            // the wildcard receive learned its sender and completion time from RESOLVE/RESUME
            bool found = false;
            for (size_t k = 0; k < r.nev; k++)
                if (r.ev[k].kind == MS_MSG_IRECV) {
                    EXPECT_EQ(r.ev[k].matched_source, 0);
                    EXPECT_EQ(r.ev[k].matched_tag, 5);
                    EXPECT_EQ(r.ev[k].complete_ps, 9000);
                    found = true;
                }
            EXPECT_TRUE(found);
        }
        rank_free(&r);
    }
    ms_trace_free(t);
}

TEST(RawReader, TruncationAtEveryOffsetKeepsCompleteRecords)
{
    ms_trace *t = rich_trace();
    std::vector<unsigned char> v = raw_of(t, 0);
    size_t prev = 0, boundaries = 0;
    for (size_t cut = 0; cut <= v.size(); cut++) {
        std::vector<unsigned char> w(v.begin(), v.begin() + (long)cut);
        ms_trace_rank r;
        std::string err;
        int rc = parse(w, &r, &err);
        if (cut < sizeof(ms_trace_file_header)) {
            EXPECT_LT(rc, 0);
            EXPECT_NE(err.find("rank-0.mstrace: offset 0"), std::string::npos) << err;
            continue;
        }
        ASSERT_EQ(rc, 0) << "cut " << cut << ": " << err;
        EXPECT_GE(r.nev, prev);
        prev = r.nev;
        if (cut == v.size()) {
            EXPECT_EQ(r.truncated, 0);
        }
        if (r.nev < t->ranks[0].nev && r.truncated == 0) boundaries++;
        rank_free(&r);
    }
    EXPECT_EQ(prev, t->ranks[0].nev);
    EXPECT_EQ(boundaries, t->ranks[0].nev);   // cuts between records are clean ends (header one included)
    ms_trace_free(t);
}

TEST(RawReader, CorruptionIsAnErrorNamingFileAndOffset)
{
    ms_trace *t = rich_trace();
    std::vector<unsigned char> v = raw_of(t, 0);
    const size_t H = sizeof(ms_trace_file_header);
    ms_trace_rank r;
    std::string err;
    {
        auto w = v;
        w[0] = 'X';
        EXPECT_LT(parse(w, &r, &err), 0);
        EXPECT_NE(err.find("bad magic"), std::string::npos) << err;
    }
    {
        auto w = v;
        uint32_t bad = 999;
        memcpy(&w[8], &bad, 4);
        EXPECT_LT(parse(w, &r, &err), 0);
        EXPECT_NE(err.find("protocol version"), std::string::npos) << err;
    }
    {
        auto w = v;
        uint32_t type = 77;
        memcpy(&w[H], &type, 4);
        EXPECT_LT(parse(w, &r, &err), 0);
        EXPECT_NE(err.find("offset " + std::to_string(H) + ": unknown record type 77"), std::string::npos) << err;
    }
    {
        auto w = v;
        uint32_t len = 3;   // TR_CALL with a short payload
        memcpy(&w[H + 4], &len, 4);
        EXPECT_LT(parse(w, &r, &err), 0);
        EXPECT_NE(err.find("has length 3"), std::string::npos) << err;
    }
    {
        auto w = v;
        uint32_t len = 0x7fffffff;   // absurd length, even though it runs past the end
        memcpy(&w[H + 4], &len, 4);
        EXPECT_LT(parse(w, &r, &err), 0);
    }
    ms_trace_free(t);
}

TEST(RawReader, FuzzNeverCrashes)
{
    ms_trace *t = rich_trace();
    std::vector<unsigned char> v = raw_of(t, 1);
    std::mt19937_64 rng(12345);
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 20000; iter++) {
        auto w = v;
        int flips = 1 + (int)(rng() % 8);
        for (int f = 0; f < flips; f++) {
            size_t pos = rng() % w.size();
            switch (rng() % 3) {
            case 0: w[pos] ^= (unsigned char)(1u << (rng() % 8)); break;
            case 1: w[pos] = (unsigned char)rng(); break;
            default: {
                // plausible small integers in length/count fields
                uint32_t x = (uint32_t)(rng() % 70000) - 10;
                if (pos + 4 <= w.size()) memcpy(&w[pos], &x, 4);
            }
            }
        }
        if (rng() % 4 == 0) w.resize(rng() % (w.size() + 1));
        ms_trace_rank r;
        std::string err;
        if (parse(w, &r, &err) == 0) {
            ok++;
            rank_free(&r);
        } else {
            bad++;
            EXPECT_FALSE(err.empty());
        }
    }
    EXPECT_GT(ok, 0);
    EXPECT_GT(bad, 0);
    // pure garbage after a valid header
    for (int iter = 0; iter < 2000; iter++) {
        std::vector<unsigned char> w(v.begin(), v.begin() + sizeof(ms_trace_file_header));
        size_t n = rng() % 512;
        for (size_t i = 0; i < n; i++) w.push_back((unsigned char)rng());
        ms_trace_rank r;
        std::string err;
        if (parse(w, &r, &err) == 0) rank_free(&r);
    }
    ms_trace_free(t);
}

TEST(Hdf5, RoundTripKeepsEverything)
{
    ms_trace *t = rich_trace();
    t->config_json = strdup("{\"network.engine\": {\"value\": \"analytic\"}}");
    t->machine = strdup("Machine\n  Package L#0");
    t->bindings_json = strdup("[[0],[1],[2]]");
    std::string path = tmpdir() + "/rt.h5";
    char err[512];
    ASSERT_EQ(ms_trace_write_h5(t, path.c_str(), err, sizeof err), 0) << err;
    ms_trace *u = ms_trace_read_h5(path.c_str(), err, sizeof err);
    ASSERT_NE(u, nullptr) << err;
    ASSERT_EQ(u->nranks, 3);
    for (int r = 0; r < 3; r++) {
        expect_same_events(t->ranks[r], u->ranks[r], true);
        ASSERT_EQ(t->ranks[r].nlists, u->ranks[r].nlists);
        ASSERT_EQ(t->ranks[r].nresults, u->ranks[r].nresults);
        ASSERT_EQ(t->ranks[r].ntext, u->ranks[r].ntext);
        if (t->ranks[r].nlists) {
            EXPECT_EQ(memcmp(t->ranks[r].lists, u->ranks[r].lists, 8 * t->ranks[r].nlists), 0);
        }
        for (size_t k = 0; k < t->ranks[r].nresults; k++) {
            EXPECT_EQ(t->ranks[r].results[k].req, u->ranks[r].results[k].req);
            EXPECT_EQ(t->ranks[r].results[k].complete_time, u->ranks[r].results[k].complete_time);
            EXPECT_EQ(t->ranks[r].results[k].source, u->ranks[r].results[k].source);
        }
        EXPECT_STREQ(t->ranks[r].hostname, u->ranks[r].hostname);
        EXPECT_EQ(t->ranks[r].pid, u->ranks[r].pid);
    }
    EXPECT_STREQ(u->ranks[2].text, "MPI_Win_create");
    ASSERT_EQ(u->ncomms, 1u);
    EXPECT_EQ(u->comms[0].id, 0x1234u);
    EXPECT_EQ(u->members[0], 0);
    EXPECT_EQ(u->members[1], 2);
    EXPECT_STREQ(u->config_json, t->config_json);
    EXPECT_STREQ(u->machine, t->machine);
    EXPECT_STREQ(u->bindings_json, t->bindings_json);
    ASSERT_EQ(u->nprogram, 1);
    EXPECT_STREQ(u->program[0], "synthetic");
    EXPECT_STREQ(ms_trace_fn_name(u, SY_RECV), "MPI_Recv");
    ms_trace_free(u);
    ms_trace_free(t);
}

TEST(Hdf5, CorruptOrTruncatedFilesGiveClearErrors)
{
    ms_trace *t = synth_stencil(16, 50, 256, 1000);
    std::string path = tmpdir() + "/big.h5";
    char err[512];
    ASSERT_EQ(ms_trace_write_h5(t, path.c_str(), err, sizeof err), 0) << err;
    ms_trace_free(t);
    FILE *f = fopen(path.c_str(), "rb");
    std::vector<unsigned char> v;
    int c;
    while ((c = fgetc(f)) != EOF) v.push_back((unsigned char)c);
    fclose(f);
    std::string bad = tmpdir() + "/bad.h5";
    auto write = [&](const std::vector<unsigned char> &w) {
        FILE *g = fopen(bad.c_str(), "wb");
        fwrite(w.data(), 1, w.size(), g);
        fclose(g);
    };
    // missing file, not HDF5, truncated at several points
    EXPECT_EQ(ms_trace_read_h5((tmpdir() + "/none.h5").c_str(), err, sizeof err), nullptr);
    EXPECT_NE(std::string(err).find("none.h5"), std::string::npos) << err;
    write(std::vector<unsigned char>(1000, 'x'));
    EXPECT_EQ(ms_trace_read_h5(bad.c_str(), err, sizeof err), nullptr);
    EXPECT_NE(std::string(err).find("not an HDF5 file"), std::string::npos) << err;
    for (double frac : {0.1, 0.5, 0.9, 0.99}) {
        write(std::vector<unsigned char>(v.begin(), v.begin() + (long)(v.size() * frac)));
        ms_trace *u = ms_trace_read_h5(bad.c_str(), err, sizeof err);
        EXPECT_EQ(u, nullptr) << frac;
        EXPECT_NE(std::string(err).find("bad.h5"), std::string::npos) << err;
        ms_trace_free(u);
    }
    // byte flips in the data part: an error or a trace that passes validation, never a crash
    std::mt19937_64 rng(7);
    for (int i = 0; i < 40; i++) {
        auto w = v;
        for (int k = 0; k < 4; k++) w[4096 + rng() % (w.size() - 4096)] ^= (unsigned char)(1 + rng() % 255);
        write(w);
        ms_trace *u = ms_trace_read_h5(bad.c_str(), err, sizeof err);
        ms_trace_free(u);
    }
    // an HDF5 file that is not a trace
    {
        ms_trace *tt = synth_pingpong(1, 8, 0);
        ASSERT_EQ(ms_trace_write_h5(tt, bad.c_str(), err, sizeof err), 0);
        ms_trace_free(tt);
    }
}

TEST(Convert, RawDirectoryWithMetaBecomesHdf5)
{
    ms_trace *t = rich_trace();
    std::string dir = tmpdir() + "/raw";
    ASSERT_EQ(synth_write_raw_dir(t, dir.c_str()), 0);
    // rank 2 was killed: its file ends inside a record
    std::string r2 = dir + "/rank-000002.mstrace";
    struct stat st;
    ASSERT_EQ(stat(r2.c_str(), &st), 0);
    ASSERT_EQ(truncate(r2.c_str(), st.st_size - 5), 0);
    std::string out = tmpdir() + "/conv.h5";
    char err[512];
    // converted, and the rank whose file was cut is named
    ASSERT_EQ(ms_trace_convert(dir.c_str(), out.c_str(), err, sizeof err), 1) << err;
    EXPECT_NE(std::string(err).find("1 of 3 ranks' files were cut"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find("a full disk): 2"), std::string::npos) << err;
    ms_trace *u = ms_trace_read_h5(out.c_str(), err, sizeof err);
    ASSERT_NE(u, nullptr) << err;
    EXPECT_EQ(u->nranks, 3);
    EXPECT_EQ(u->ranks[2].truncated, 1);
    EXPECT_EQ(u->ranks[2].nev, t->ranks[2].nev - 1);
    EXPECT_EQ(u->ranks[0].nev, t->ranks[0].nev);
    ASSERT_EQ(u->nprogram, 2);
    EXPECT_STREQ(u->program[1], "a b");
    EXPECT_STREQ(u->machine, "Machine (1 GB)\n  Core 0");
    EXPECT_STREQ(u->bindings_json, "[[0], [1]]");
    EXPECT_NE(strstr(u->config_json, "analytic"), nullptr);
    ASSERT_EQ(u->ncomms, 1u);
    EXPECT_GT(u->nfn, 0u);   // this build's MPI function names
    ms_trace_free(u);
    // a rank that left no file, or an empty one (it died early): the others are converted, the
    // result names the ranks without records, which are in the trace marked missing
    unlink((dir + "/rank-000001.mstrace").c_str());
    ASSERT_EQ(ms_trace_convert(dir.c_str(), out.c_str(), err, sizeof err), 1) << err;
    EXPECT_NE(std::string(err).find("1 of 3 ranks left no records"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find(": 1"), std::string::npos) << err;
    u = ms_trace_read_h5(out.c_str(), err, sizeof err);
    ASSERT_NE(u, nullptr) << err;
    EXPECT_EQ(u->ranks[1].missing, 1);
    EXPECT_EQ(u->ranks[1].nev, 0u);
    EXPECT_EQ(u->ranks[0].missing, 0);
    EXPECT_EQ(u->ranks[0].nev, t->ranks[0].nev);
    ms_trace_free(u);
    FILE *e0 = fopen((dir + "/rank-000000.mstrace").c_str(), "w");   // rank 0: empty
    fclose(e0);
    ASSERT_EQ(ms_trace_convert(dir.c_str(), out.c_str(), err, sizeof err), 1) << err;
    EXPECT_NE(std::string(err).find("2 of 3 ranks left no records (raw file missing or empty): 0, 1"),
              std::string::npos) << err;
    unlink((dir + "/rank-000002.mstrace").c_str());   // none left: an error
    EXPECT_LT(ms_trace_convert(dir.c_str(), out.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("none of the 3 ranks"), std::string::npos) << err;
    // a bad meta.json is an error naming it
    FILE *f = fopen((dir + "/meta.json").c_str(), "w");
    fputs("{\"nranks\": 3, \"program\": [", f);
    fclose(f);
    EXPECT_LT(ms_trace_convert(dir.c_str(), out.c_str(), err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("meta.json"), std::string::npos) << err;
    // a claim of millions of ranks with no records is refused before a slot or a stat per rank
    f = fopen((dir + "/meta.json").c_str(), "w");
    fputs("{\"nranks\": 9000000}", f);
    fclose(f);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT_LT(ms_trace_convert(dir.c_str(), out.c_str(), err, sizeof err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    EXPECT_NE(std::string(err).find("none of the 9000000 ranks"), std::string::npos) << err;
    EXPECT_LT((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, 5.0);   // 87 s before, under load
    ms_trace_free(t);
}

TEST(Validate, SizesBeyondWhatTheModelTakesAreErrorsNamingRankAndRecord)
{
    char err[512];
    auto expect_bad = [&](ms_trace *t, const char *what) {
        EXPECT_LT(ms_trace_validate(t, "t.h5", err, sizeof err), 0) << what;
        EXPECT_NE(std::string(err).find(what), std::string::npos) << err;
    };
    ms_trace *t = synth_pingpong(2, 8, 0);
    ASSERT_EQ(ms_trace_validate(t, "t.h5", err, sizeof err), 0) << err;
    ms_trace_event *send = nullptr;
    size_t k = 0;
    for (; k < t->ranks[0].nev; k++)
        if (t->ranks[0].ev[k].kind == MS_MSG_ISEND) {
            send = &t->ranks[0].ev[k];
            break;
        }
    ASSERT_NE(send, nullptr);
    send->bytes = (uint64_t)INT64_MAX;   // a message of 2^63-1 bytes
    expect_bad(t, ("rank 0 event " + std::to_string(k) + " (MPI_Isend): 9223372036854775807 bytes").c_str());
    send->bytes = MS_TRACE_MAX_BYTES;   // the bound itself is allowed
    EXPECT_EQ(ms_trace_validate(t, "t.h5", err, sizeof err), 0) << err;
    send->bytes = 8;
    t->ranks[1].ev[0].compute_ps = -5;
    expect_bad(t, "rank 1 event 0");
    t->ranks[1].ev[0].compute_ps = 0;
    t->ranks[1].ev[0].raw_compute_ns = INT64_MAX;
    expect_bad(t, "rank 1 event 0");
    ms_trace_free(t);
}

TEST(Hdf5, DamagedStringHeapIsAnErrorInProcess)
{
    // /fn_names and /program are variable-length strings in a global heap collection ("GCOL"):
    // objects that claim more or fewer bytes than their descriptors are errors, read in this
    // process (HDF5's own conversion would copy the heap's size into the descriptor's buffer)
    ms_trace *t = rich_trace();
    const char *names[] = {"MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall"};
    ASSERT_EQ(ms_trace_set_fn_names(t, names, 5), 0);
    std::string path = tmpdir() + "/heap.h5", bad = tmpdir() + "/heap-bad.h5";
    char err[512];
    // schema 1: the string datasets are the same in both schemas, and in schema 2's file the
    // collection also holds attributes that follow the damaged object, which HDF5 itself reads
    // and loops on in this process (the guarded reader stops that: Hdf5.CorruptOrTruncated...)
    ASSERT_EQ(ms_trace_write_h5_v1(t, path.c_str(), err, sizeof err), 0) << err;
    ms_trace_free(t);
    std::vector<unsigned char> v;
    {
        FILE *f = fopen(path.c_str(), "rb");
        int c;
        while ((c = fgetc(f)) != EOF) v.push_back((unsigned char)c);
        fclose(f);
    }
    ms_trace *u = ms_trace_read_h5_direct(path.c_str(), err, sizeof err);
    ASSERT_NE(u, nullptr) << err;
    EXPECT_STREQ(ms_trace_fn_name(u, 4), "MPI_Waitall");
    ms_trace_free(u);
    // the heap object holding "MPI_Waitall" (its 16-byte header precedes the text); the string
    // attributes share the collection but HDF5 reads those itself (the guarded reader's child)
    size_t at = 0;
    for (size_t i = 16; i + 11 <= v.size() && !at; i++)
        if (!memcmp(&v[i], "MPI_Waitall", 11)) at = i - 16;
    ASSERT_NE(at, 0u);
    uint64_t was;
    memcpy(&was, &v[at + 8], 8);
    ASSERT_EQ(was, 11u);
    int errors = 0;
    for (uint64_t size : {(uint64_t)1 << 40, (uint64_t)3, (uint64_t)12, (uint64_t)0}) {
        auto w = v;
        memcpy(&w[at + 8], &size, 8);
        FILE *g = fopen(bad.c_str(), "wb");
        fwrite(w.data(), 1, w.size(), g);
        fclose(g);
        ms_trace *x = ms_trace_read_h5_direct(bad.c_str(), err, sizeof err);
        EXPECT_EQ(x, nullptr) << size;
        if (!x) {
            errors++;
            EXPECT_NE(std::string(err).find("heap-bad.h5"), std::string::npos) << err;
        }
        ms_trace_free(x);
    }
    EXPECT_GT(errors, 0);
}

// Schema 2's compact records (trace_compact.c): any records come back exactly (out-of-range kinds,
// unknown markers, values that wrap around), in at most ms_compact_bound bytes; a stretch cut short,
// with bytes left over or with damaged bytes is an error naming the record, never a read past it.
TEST(Compact, RandomRecordsComeBackExactly)
{
    std::mt19937_64 rng(11);
    const int32_t kinds[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17, 18, 32, 33, 34, 65, 66, 0, 200, 255, -3, 1000000};
    for (int round = 0; round < 200; round++) {
        size_t n = rng() % 300;
        std::vector<ms_trace_event> ev(n);
        uint64_t vals[4] = {0, 1, (uint64_t)INT64_MIN, rng()};
        for (size_t i = 0; i < n; i++) {
            ms_trace_event &e = ev[i];
            memset(&e, 0, sizeof e);
            e.kind = kinds[rng() % (sizeof kinds / sizeof kinds[0] - (round % 2 ? 0 : 5))];
            auto pick = [&]() { return rng() % 3 ? vals[rng() % 4] + rng() % 5 : rng(); };
            e.fn = (int32_t)pick();
            e.t_ps = (int64_t)pick();
            e.compute_ps = (int64_t)pick();
            e.raw_compute_ns = (int64_t)pick();
            e.real_entry_ns = (int64_t)pick();
            e.real_exit_ns = (int64_t)pick();
            e.complete_ps = rng() % 2 ? MS_TRACE_UNKNOWN_TIME : (int64_t)pick();
            e.comm = pick();
            e.bytes = pick();
            e.req = pick();
            e.callsite = pick();
            e.list_off = (int64_t)pick();
            e.list_n = (int32_t)pick();
            e.peer = (int32_t)pick();
            e.tag = (int32_t)pick();
            e.mode = (int32_t)pick();
            e.flags = (int32_t)pick();
            e.matched_source = rng() % 2 ? MS_TRACE_UNKNOWN : (int32_t)pick();
            e.matched_tag = (int32_t)pick();
            e.pad = (int32_t)pick();
            if (rng() % 2 && i) e = ev[i - 1];   // repeats: what traces are made of
        }
        std::vector<unsigned char> buf(ms_compact_bound(n));
        size_t m = ms_compact_encode(ev.data(), n, buf.data());
        ASSERT_LE(m, buf.size());
        std::vector<ms_trace_event> back(n + 1);
        size_t bad = 99;
        ASSERT_EQ(ms_compact_decode(buf.data(), m, n, back.data(), &bad), 0) << round;
        EXPECT_EQ(bad, n);
        if (n) { EXPECT_EQ(memcmp(ev.data(), back.data(), n * sizeof ev[0]), 0) << round; }
        if (!n) continue;
        // cut short at every length: an error at some record, never beyond the bytes
        for (size_t cut = 0; cut < m; cut += 1 + m / 50) {
            std::vector<unsigned char> part(buf.begin(), buf.begin() + (long)cut);
            EXPECT_EQ(ms_compact_decode(part.data(), cut, n, back.data(), &bad), -1) << cut;
            EXPECT_LT(bad, n);
        }
        // one byte more, or one record fewer asked for: bytes left over
        std::vector<unsigned char> more(buf.begin(), buf.begin() + (long)m);
        more.push_back(0);
        EXPECT_EQ(ms_compact_decode(more.data(), m + 1, n, back.data(), &bad), -1);
        EXPECT_EQ(ms_compact_decode(buf.data(), m, n - 1, back.data(), &bad), -1);
        // damaged bytes: an error or some records, never a crash (ASan builds watch the reads)
        for (int k = 0; k < 20; k++) {
            auto w = more;
            w[rng() % m] ^= (unsigned char)(1 + rng() % 255);
            ms_compact_decode(w.data(), m, n, back.data(), &bad);
            EXPECT_LE(bad, n);
        }
    }
}

// Old traces (schema 1) are still read, whole and as a stream, giving the same trace as schema 2;
// a schema this mpisim does not know is an error that says so.
TEST(Hdf5, SchemaOneStillReadAndAnUnknownSchemaNamed)
{
    ms_trace *t = rich_trace();
    std::string p1 = tmpdir() + "/v1.h5", p2 = tmpdir() + "/v2.h5";
    char err[512];
    ASSERT_EQ(ms_trace_write_h5_v1(t, p1.c_str(), err, sizeof err), 0) << err;
    ASSERT_EQ(ms_trace_write_h5(t, p2.c_str(), err, sizeof err), 0) << err;
    ms_trace *a = ms_trace_read_h5(p1.c_str(), err, sizeof err), *b = ms_trace_read_h5(p2.c_str(), err, sizeof err);
    ASSERT_NE(a, nullptr) << err;
    ASSERT_NE(b, nullptr) << err;
    for (int r = 0; r < 3; r++) {
        expect_same_events(a->ranks[r], b->ranks[r], true);
        expect_same_events(t->ranks[r], b->ranks[r], true);
        ASSERT_EQ(a->ranks[r].nlists, b->ranks[r].nlists);
        ASSERT_EQ(a->ranks[r].nresults, b->ranks[r].nresults);
        ASSERT_EQ(a->ranks[r].ntext, b->ranks[r].ntext);
        if (b->ranks[r].nlists) { EXPECT_EQ(memcmp(a->ranks[r].lists, b->ranks[r].lists, 8 * b->ranks[r].nlists), 0); }
        if (b->ranks[r].nresults) {
            EXPECT_EQ(memcmp(t->ranks[r].results, b->ranks[r].results, sizeof(ms_trace_result) * b->ranks[r].nresults), 0);
        }
        if (b->ranks[r].ntext) { EXPECT_EQ(memcmp(a->ranks[r].text, b->ranks[r].text, b->ranks[r].ntext), 0); }
        EXPECT_STREQ(a->ranks[r].hostname, b->ranks[r].hostname);
        EXPECT_EQ(a->ranks[r].start_real_ns, b->ranks[r].start_real_ns);
    }
    for (const std::string &p : {p1, p2}) {   // streamed: the same records stretch by stretch
        ms_trace_stream *s = ms_trace_stream_open(p.c_str(), err, sizeof err);
        ASSERT_NE(s, nullptr) << err;
        ms_trace_window w;
        memset(&w, 0, sizeof w);
        for (int r = 0; r < 3; r++) {
            size_t nev = ms_trace_stream_size(s, r)->nev;
            ASSERT_EQ(nev, b->ranks[r].nev);
            for (size_t a0 = 0; a0 < nev; a0 += 7) {
                size_t b0 = a0 + 7 < nev ? a0 + 7 : nev;
                ASSERT_EQ(ms_trace_stream_read(s, r, a0, b0, &w, err, sizeof err), 0) << err;
                ASSERT_EQ(ms_trace_validate_window(ms_trace_stream_trace(s), r, ms_trace_stream_size(s, r), &w, a0, b0,
                                                   "t", err, sizeof err), 0) << err;
                EXPECT_EQ(memcmp(w.ev, b->ranks[r].ev + a0, (b0 - a0) * sizeof(ms_trace_event)), 0) << p << " " << r;
            }
        }
        ms_trace_window_free(&w);
        ms_trace_stream_close(s);
    }
    ms_trace_free(a);
    ms_trace_free(b);
    ms_trace_free(t);
    // schema 3: "written by a newer mpisim?"
    hid_t f = H5Fopen(p2.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    ASSERT_GE(H5Adelete(f, "schema"), 0);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 14);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t at = H5Acreate2(f, "schema", st, sp, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Awrite(at, st, "mpisim-trace/3"), 0);
    H5Aclose(at);
    H5Sclose(sp);
    H5Tclose(st);
    H5Fclose(f);
    EXPECT_EQ(ms_trace_read_h5(p2.c_str(), err, sizeof err), nullptr);
    EXPECT_NE(std::string(err).find("mpisim-trace/3"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find("newer mpisim"), std::string::npos) << err;
    EXPECT_EQ(ms_trace_stream_open(p2.c_str(), err, sizeof err), nullptr);
    EXPECT_NE(std::string(err).find("newer mpisim"), std::string::npos) << err;
}
