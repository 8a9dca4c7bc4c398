/* Calibration of a host profile from microbenchmarks (`mpisim calibrate`): the measurements
 * (calibench's samples, or the tables of OSU micro-benchmarks, Intel MPI Benchmarks and NetPIPE),
 * robust estimates per size, a piecewise fit by size with the breakpoints found in the data, the
 * model parameters of the fit, and the profile INI written from them. No MPI and no processes
 * here: cli/calibrate.c runs the benchmarks. */
#ifndef MPISIM_CALIB_H
#define MPISIM_CALIB_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CAL_PINGPONG,   /* half round trip */
    CAL_STREAM,     /* one-way window: time per message */
    CAL_BOTHWAY,    /* both ways at once: time per pair of messages */
    CAL_SENDCALL,   /* duration of MPI_Send */
    CAL_RECVCALL,   /* duration of MPI_Recv of an arrived message */
    CAL_FORWARD,    /* half round trip, each rank sending on what it received (into lines the peer holds) */
    CAL_EMPTY,      /* a call with nothing to do (mode: iprobe, test, procnull, wtime) */
    CAL_REDUCE,     /* MPI_Reduce_local (mode int, double) */
    CAL_COMPUTE,    /* the reference kernel: seconds per multiply-add */
    CAL_COLL,       /* a collective per call, and the same by hand (mode: allreduce, allreduce_p2p, ...) */
    CAL_NTESTS
} cal_test;

const char *cal_test_name(cal_test t);
/* The collectives whose own path is fitted (calibench coll; key mpi.<kind>_overhead) */
extern const char *const cal_coll_kinds[3];
int cal_test_lookup(const char *name);   /* -1 if unknown */

typedef struct cal_point {
    double bytes;
    double est;      /* robust estimate (seconds per operation), after cal_data_estimate */
    double spread;   /* relative width of the samples kept around it */
    int rejected;    /* samples left out as disturbed */
    double *v;       /* samples */
    int *rd;         /* each sample's round (cal_data.rounds), -1: none */
    int nv;
    size_t capv, caprd;
    int slow_out;    /* samples left out as taken in a slow round (cal_data_estimate) */
} cal_point;

typedef struct cal_series {
    cal_test test;
    char mode[16];
    long window;
    int off_node;          /* 0 on one node, 1 between nodes */
    char origin[96];       /* benchmark, as in sources: "calibench pingpong", "OSU osu_latency", ... */
    cal_point *p;          /* sorted by bytes after cal_data_estimate */
    int np;
    size_t capp;
} cal_series;

/* One round of calibench (`# round=` lines): the probe framing it, the ping-pong of 0 B before
 * and after (seconds, 0 unknown). Rounds of every run read are numbered together. */
typedef struct cal_round {
    double start_s, before_s, after_s;
    int kept;   /* cal_data_estimate: its samples count */
} cal_round;

/* A round is slow, and its samples left out, when its probe took more than this times the best
 * round's: this machine's slow spells put the ping-pong of 0 B at 2.5-3x its usual time, while
 * the usual times scatter by up to 1.5x (apps/calibench.c, --spread). */
#define CAL_SLOW_ROUND 2.0

typedef struct cal_data {
    cal_series *s;
    int ns;
    size_t caps;
    cal_round *rounds;
    int nrounds;
    size_t caprounds;
    int round_base;        /* the first round of the run being read */
    int rounds_out;        /* rounds left out as slow (cal_data_estimate) */
    int points_out;        /* sizes measured (nearly) only in slow rounds, taken out of their series */
    char points_out_text[160];   /* some of them: "pingpong send 288 B, ..." */
    double best_probe, worst_kept_probe, best_out_probe;   /* seconds; 0 none */
    char inputs[512];      /* the files or runs read, for the profile's header */
    int same_host;         /* calibench's report: 1, 0, or -1 unknown */
    double elapsed_s;      /* calibench's measuring time (0 unknown) */
} cal_data;

cal_data *cal_data_create(void);
void cal_data_destroy(cal_data *d);
/* one sample of (test, mode, window, off_node) at `bytes`; origin names the benchmark */
int cal_add_sample(cal_data *d, cal_test t, const char *mode, long window, int off_node, const char *origin,
                   double bytes, double seconds);
/* the same, taken in round `round` of d->rounds (-1: none) */
int cal_add_sample_round(cal_data *d, cal_test t, const char *mode, long window, int off_node, const char *origin,
                         double bytes, double seconds, int round);
/* round k's probes, k counted in d->rounds */
int cal_set_round(cal_data *d, int k, double start_s, double before_s, double after_s);
cal_series *cal_find(const cal_data *d, cal_test t, const char *mode, int off_node);
/* Read a results file: calibench's raw output, OSU osu_latency / osu_bw / osu_bibw, IMB-MPI1
 * PingPong / PingPing (several benchmarks in one file too), NetPIPE's np.out or its terminal
 * output. The format is recognised from the text. off_node: 0 or 1 (what the file measured), -1
 * to take calibench's own report (others: 0). Several files of one benchmark add samples to the
 * same sizes (repetitions). Returns the number of values read, or -1 with a message naming the
 * file and line. */
int cal_read_file(cal_data *d, const char *path, int off_node, char *err, size_t errlen);
int cal_read_stream(cal_data *d, FILE *f, const char *name, int off_node, char *err, size_t errlen);
/* Sort each series by size and compute each point's robust estimate, leaving out the samples of
 * slow rounds: those whose probe (the larger of before and after) took more than CAL_SLOW_ROUND
 * times the best round's, while at least a quarter of the probed rounds are kept (else the
 * fastest quarter). A size with fewer than 3 samples outside slow rounds (a short second pass
 * inside a slow spell) is taken out of its series: it would fit the spell, not the machine. */
void cal_data_estimate(cal_data *d);

/* The location of samples disturbed only upwards (a loaded machine adds time, never takes it):
 * the median of the densest third of the samples (the shortest interval holding a third of them;
 * Rousseeuw's shorth), the median of all when there are fewer than 4. *spread: that interval's
 * width relative to the estimate; *rejected: samples above it by more than 3 widths and 5 %. */
double cal_location(const double *v, int n, double *spread, int *rejected);

/* Robust straight line y = a + b x minimising relative residuals (Tukey's biweight on
 * (y - a - b x) / y), b >= 0 when nonneg_slope. Returns the rms relative residual of the points
 * it kept; *kept: how many. */
double cal_line(const double *x, const double *y, int n, int nonneg_slope, double *a, double *b, int *kept);

typedef struct cal_seg {
    int first, last;       /* point indices */
    double from, to;       /* first and last size */
    double a, b;
    double rms;            /* rms relative residual of the points kept */
} cal_seg;

/* Piecewise-linear fit by size: segments of at least min_pts consecutive points, breakpoints
 * chosen to minimise the truncated relative squared error plus a penalty per segment (n (2 %)^2:
 * a breakpoint must explain more than 2 % rms over all points). Returns the number of segments. */
int cal_segments(const double *x, const double *y, int n, int max_seg, int min_pts, cal_seg *out);

/* The same over several series of the same sizes at once (ys[0]'s lines are returned): a
 * breakpoint any of them shows. noise: the points' relative scatter (cal_noise). */
int cal_segments_multi(const double *x, const double *const *ys, int nser, int n, int max_seg, int min_pts,
                       double noise, cal_seg *out);
/* The relative scatter of points about the lines through their neighbours (a robust sigma). */
double cal_noise(const double *x, const double *y, int n);

#define CAL_MAX_SEG 10

/* The fitted profile: model parameters and where each came from. */
typedef struct cal_fit {
    int nseg;
    double from[CAL_MAX_SEG];            /* bytes */
    double os[CAL_MAX_SEG], os_pb[CAL_MAX_SEG], or_[CAL_MAX_SEG], or_pb[CAL_MAX_SEG], copy_pb[CAL_MAX_SEG];  /* ps, ps/B */
    double copy_shared_pb[CAL_MAX_SEG];  /* ps/B into lines the other core holds (forward); < 0 not measured */
    int ack[CAL_MAX_SEG], rndv[CAL_MAX_SEG];
    double seg_rms[CAL_MAX_SEG];         /* ping-pong line's residual */
    double pa[CAL_MAX_SEG], pb[CAL_MAX_SEG];   /* the ping-pong line of each segment (s, s per byte) */
    double seg_lo[CAL_MAX_SEG], seg_hi[CAL_MAX_SEG];   /* measured sizes in the segment */
    int npts[CAL_MAX_SEG];
    double eager_threshold;              /* bytes; 0: no rendezvous seen */
    double threshold_resolution;         /* bytes between the last eager and the first rendezvous size */
    double shm_latency, shm_latency_rms; /* ps */
    int sync_rendezvous;                 /* host.sync_protocol; -1 not measured */
    double sync_err[2];                  /* median error of eager_ack, rendezvous */
    double bsend, bsend_pb, rsend;       /* ps, ps/B, ps; < 0 not measured */
    double bsend_rms, rsend_rms;
    double poll, poll_iprobe, poll_test; /* ps; < 0 not measured */
    double reduce_pb, reduce_rms;        /* ps/B; < 0 not measured */
    double unexp, unexp_pb, unexp_rms;   /* an unexpected eager receive's extra: ps, ps/B; < 0 not measured */
    double ns_per_mac;                   /* < 0 not measured */
    double coll_own[3];                  /* by cal_coll_kinds: a call's own path, ps; < 0 not measured */
    int have_calls;                      /* send/recv call durations measured: the split is measured */
    double noise;                        /* the ping-pong's relative scatter between sizes */
    char warn[16][240];
    int nwarn;
    char src_seg[240], src_lat[240], src_thr[240], src_sync[240], src_bsend[240], src_rsend[240], src_poll[240],
        src_reduce[240], src_cpu[240], src_fwd[240], src_unexp[240], src_coll[3][240];
} cal_fit;

/* Fit on-node parameters from the data (estimated). date: "YYYY-MM-DD" for the sources.
 * 0, or -1 with a message (no ping-pong to fit). */
int cal_fit_run(const cal_data *d, const char *date, cal_fit *f, char *err, size_t errlen);
/* Sizes to measure again: dense ones inside each breakpoint's bracket where it is still wider
 * than 1/16 of its upper size, and sizes whose ping-pong is far off its segment (disturbed).
 * Returns how many (at most max). */
int cal_refine_sizes(const cal_data *d, const cal_fit *f, long *sizes, int max);
/* The segment (index) a size belongs to. */
int cal_fit_segment_of(const cal_fit *f, double bytes);
/* The profile INI. header: comment lines (without ';'), base: the profile it includes for what
 * was not measured (the network between nodes), ranks_per_node: ranks that share a node. */
int cal_write_profile(const cal_fit *f, FILE *out, const char *header, const char *base, int ranks_per_node,
                      int cpu_measured_here);

#ifdef __cplusplus
}
#endif
#endif
