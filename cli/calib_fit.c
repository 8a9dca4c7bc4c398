/* The calibration's fit: the model's piecewise costs from the estimates (cal_fit_run), and the
 * sizes worth measuring next (cal_refine_sizes). */
#define _GNU_SOURCE
#include "calib_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fit --------------------------------------------------------------------------------- */

static void warnf(cal_fit *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(cal_fit *f, const char *fmt, ...)
{
    if (f->nwarn >= (int)(sizeof f->warn / sizeof f->warn[0])) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->warn[f->nwarn++], sizeof f->warn[0], fmt, ap);
    va_end(ap);
}

static void size_text(double b, char *out, size_t len)
{
    if (b >= 1048576 && fmod(b, 1048576) == 0) snprintf(out, len, "%.0f MiB", b / 1048576);
    else if (b >= 1024 && fmod(b, 1024) == 0) snprintf(out, len, "%.0f KiB", b / 1024);
    else snprintf(out, len, "%.0f B", b);
}

/* the estimate of series s at exactly `bytes`, or < 0 */
static double est_at(const cal_series *s, double bytes)
{
    if (!s) return -1;
    for (int i = 0; i < s->np; i++)
        if (s->p[i].bytes == bytes) return s->p[i].est;
    return -1;
}

int cal_fit_segment_of(const cal_fit *f, double bytes)
{
    int k = 0;
    for (int j = 0; j < f->nseg; j++)
        if (bytes >= f->from[j]) k = j;
    return k;
}

/* The extra per byte of a rendezvous into lines the other core holds (calibench forward). */
static void fit_forward(const cal_data *d, cal_fit *f, const cal_series *P, const char *date)
{
    /* Rendezvous into lines the other core holds: the forwarding ping-pong against the ping-pong
     * of the same sizes. Both play the same protocol; what differs is the receiver's copy, so the
     * difference per byte is the extra cost of that copy (per size range; a range without a size
     * takes the median ratio of all). */
    const cal_series *Fw = cal_find(d, CAL_FORWARD, "send", 0);
    if (Fw && f->eager_threshold > 0) {
        double ratio[512];
        int nr = 0, used = 0;
        for (int i = 0; i < Fw->np && nr < 512; i++) {
            double b = Fw->p[i].bytes, sv = est_at(P, b);
            if (b >= f->eager_threshold && sv > 0) ratio[nr++] = (Fw->p[i].est - sv) / b;
        }
        double pooled = nr ? cal_median(ratio, nr) : 0;
        if (pooled < 0) pooled = 0;
        for (int j = 0; j < f->nseg && nr; j++) {
            if (!f->rndv[j]) continue;
            double dx[512], dy[512], w[512];
            int m = 0;
            double hi = j + 1 < f->nseg ? f->from[j + 1] : INFINITY;
            for (int i = 0; i < Fw->np && m < 512; i++) {
                double b = Fw->p[i].bytes, sv = est_at(P, b);
                if (b < f->from[j] || b >= hi || sv <= 0) continue;
                dx[m] = b, dy[m] = Fw->p[i].est - sv, w[m] = 1.0 / (Fw->p[i].est * Fw->p[i].est);
                m++;
            }
            /* through the origin (the extra is per byte), least squares relative to the forwarding
             * time itself, so that its error is balanced over the range */
            double extra = pooled, num = 0, den = 0;
            for (int k = 0; k < m; k++) num += w[k] * dx[k] * dy[k], den += w[k] * dx[k] * dx[k];
            if (m && den > 0) extra = num > 0 ? num / den : 0;
            f->copy_shared_pb[j] = f->copy_pb[j] + extra * 1e12;
            used += m;
        }
        snprintf(f->src_fwd, sizeof f->src_fwd,
                 "calibrated: calibench forward - pingpong, %d rendezvous sizes (copy into lines the other core holds: "
                 "+%.4f ns/B median), on %s", used, pooled * 1e9, date);
    }
}

/* The send modes (bsend, rsend, ssend), against standard sends of the same sizes (P); L: the
 * intra-node latency. */
static void fit_send_modes(const cal_data *d, cal_fit *f, const cal_series *P, double L, const char *date)
{
    /* send modes, against standard sends of the same sizes */
    const cal_series *Pb = cal_find(d, CAL_PINGPONG, "bsend", 0), *Pr = cal_find(d, CAL_PINGPONG, "rsend", 0),
                     *Ps = cal_find(d, CAL_PINGPONG, "ssend", 0);
    if (Pb) {
        double dx[512], dy[512];
        int m = 0;
        for (int i = 0; i < Pb->np && m < 512; i++) {
            double sv = est_at(P, Pb->p[i].bytes);
            if (sv > 0) {
                dx[m] = Pb->p[i].bytes;
                dy[m] = Pb->p[i].est - sv;
                m++;
            }
        }
        if (m >= 2) {
            /* a difference may be 0 or negative: least squares weighted by the buffered send's own
             * time (its relative error), not relative to the difference */
            double a, b, w[512];
            for (int i = 0; i < m; i++) {
                double t = est_at(Pb, dx[i]);
                w[i] = 1.0 / (t * t);
            }
            cal_wls(dx, dy, w, m, 1, &a, &b);
            f->bsend = a > 0 ? a * 1e12 : 0;
            f->bsend_pb = b > 0 ? b * 1e12 : 0;
            snprintf(f->src_bsend, sizeof f->src_bsend, "calibrated: calibench pingpong bsend - send, %d sizes, on %s", m, date);
        }
    }
    if (Pr) {
        double dy[512];
        int m = 0;
        for (int i = 0; i < Pr->np && m < 512; i++) {
            double sv = est_at(P, Pr->p[i].bytes);
            if (sv > 0 && (f->eager_threshold == 0 || Pr->p[i].bytes < f->eager_threshold)) dy[m++] = Pr->p[i].est - sv;
        }
        if (m) {
            double md = cal_median(dy, m);
            f->rsend = md > 0 ? md * 1e12 : 0;
            snprintf(f->src_rsend, sizeof f->src_rsend, "calibrated: calibench pingpong rsend - send, %d eager sizes, median %+.0f ns, on %s",
                     m, md * 1e9, date);
        }
    }
    if (Ps && f->eager_threshold > 0) {
        /* synchronous sends below the threshold: as standard ones plus an acknowledgement the
         * ping-pong does not wait for (eager_ack), or the rendezvous handshake (rendezvous) */
        double e0[512], e1[512];
        int m = 0;
        for (int i = 0; i < Ps->np && m < 512; i++) {
            double b = Ps->p[i].bytes;
            if (b >= f->eager_threshold) continue;
            int j = cal_fit_segment_of(f, b);
            double os = (f->os[j] + f->os_pb[j] * b) * 1e-12, orr = (f->or_[j] + f->or_pb[j] * b) * 1e-12,
                   cp = f->copy_pb[j] * b * 1e-12, or0s = f->or_[0] * 1e-12;
            double pe = os + cp + L + orr, pr = os + or0s + 3 * L + cp + orr;
            e0[m] = fabs(pe / Ps->p[i].est - 1);
            e1[m] = fabs(pr / Ps->p[i].est - 1);
            m++;
        }
        if (m) {
            f->sync_err[0] = cal_median(e0, m), f->sync_err[1] = cal_median(e1, m);
            f->sync_rendezvous = f->sync_err[1] < f->sync_err[0];
            snprintf(f->src_sync, sizeof f->src_sync,
                     "calibrated: calibench pingpong ssend below the threshold, %d sizes: eager_ack off by %.0f %%, "
                     "rendezvous by %.0f %% (median), on %s",
                     m, 100 * f->sync_err[0], 100 * f->sync_err[1], date);
            if (fmin(f->sync_err[0], f->sync_err[1]) > 0.15)
                warnf(f, "synchronous sends: neither protocol of the model follows them (%.0f %% off at best)",
                      100 * fmin(f->sync_err[0], f->sync_err[1]));
        }
    }
}

/* Local costs: a call with nothing to do (polls), the local reduction per byte, computation. */
static void fit_local_costs(const cal_data *d, cal_fit *f, const char *date)
{
    /* a call with nothing to do, polls */
    const cal_series *Ei = cal_find(d, CAL_EMPTY, "iprobe", 0), *Et = cal_find(d, CAL_EMPTY, "test", 0);
    if (Ei && Ei->np) f->poll_iprobe = Ei->p[0].est * 1e12;
    if (Et && Et->np) f->poll_test = Et->p[0].est * 1e12;
    if (f->poll_iprobe >= 0 || f->poll_test >= 0) {
        f->poll = f->poll_iprobe >= 0 && f->poll_test >= 0 ? 0.5 * (f->poll_iprobe + f->poll_test)
                                                            : fmax(f->poll_iprobe, f->poll_test);
        snprintf(f->src_poll, sizeof f->src_poll,
                 "calibrated: calibench empty MPI_Iprobe %.0f ns and MPI_Test %.0f ns (their mean) on %s",
                 f->poll_iprobe * 1e-3, f->poll_test * 1e-3, date);
    }
    /* reductions: the local MPI_SUM per byte */
    const cal_series *Ri = cal_find(d, CAL_REDUCE, "int", 0), *Rd = cal_find(d, CAL_REDUCE, "double", 0);
    {
        double rx[512], ry[512];
        int m = 0;
        const cal_series *rs[2] = {Ri, Rd};
        for (int k = 0; k < 2; k++)
            for (int i = 0; rs[k] && i < rs[k]->np && m < 512; i++)
                if (rs[k]->p[i].bytes >= 1024) {
                    rx[m] = rs[k]->p[i].bytes;
                    ry[m] = rs[k]->p[i].est;
                    m++;
                }
        if (m >= 2) {
            double a, b;
            f->reduce_rms = cal_line(rx, ry, m, 1, &a, &b, NULL);
            f->reduce_pb = b * 1e12;
            snprintf(f->src_reduce, sizeof f->src_reduce,
                     "calibrated: calibench MPI_Reduce_local MPI_SUM int and double, 1 KiB and up, on %s (residual %.1f %%)",
                     date, 100 * f->reduce_rms);
        }
    }
    const cal_series *C = cal_find(d, CAL_COMPUTE, "mac", 0);
    if (C && C->np) {
        f->ns_per_mac = C->p[0].est * 1e9;
        snprintf(f->src_cpu, sizeof f->src_cpu,
                 "calibrated: calibench compute kernel (int32 multiply-add, both ranks at once): %.3f ns per "
                 "multiply-add on %s",
                 f->ns_per_mac, date);
    }
}

/* A collective call's own path (mpi.allreduce_overhead, bcast_overhead, barrier_overhead): the
 * collective less the same messages and reduction by hand (calibench coll), the median of the
 * differences over its sizes; none below 0 (the library's path is not faster than its messages). */
static void fit_collectives(const cal_data *d, cal_fit *f, const char *date)
{
    const char *const *kinds = cal_coll_kinds;
    for (int k = 0; k < 3; k++) {
        f->coll_own[k] = -1;
        char hand[32];
        snprintf(hand, sizeof hand, "%s_p2p", kinds[k]);
        const cal_series *C = cal_find(d, CAL_COLL, kinds[k], 0), *H = cal_find(d, CAL_COLL, hand, 0);
        if (!C || !H) continue;
        double dy[64], lo = 0, hi = 0;
        int m = 0;
        for (int i = 0; i < C->np && m < 64; i++) {
            double h = est_at(H, C->p[i].bytes);
            if (h <= 0 || C->p[i].est <= 0) continue;
            if (!m || C->p[i].bytes < lo) lo = C->p[i].bytes;
            if (!m || C->p[i].bytes > hi) hi = C->p[i].bytes;
            dy[m++] = C->p[i].est - h;
        }
        if (!m) continue;
        double md = cal_median(dy, m);
        f->coll_own[k] = md > 0 ? md * 1e12 : 0;
        snprintf(f->src_coll[k], sizeof f->src_coll[k],
                 "calibrated: calibench coll %s - %s, %d size(s) %.0f..%.0f B, median %+.1f ns, on %s", kinds[k], hand,
                 m, lo, hi, md * 1e9, date);
    }
}

/* The eager/rendezvous switch seen in recvcall: the largest rise from one size to the next beyond
 * what growing with the size could give (a line through the origin at most), at least 2.5-fold,
 * and still there at the two sizes after (a disturbed point is not a step). The index of the first
 * rendezvous point, or -1. */
static int recvcall_step(const double *x, const double *ys_r, int n)
{
    int split = -1;
    double best = 2.5;
    for (int i = 1; i < n; i++) {
        if (ys_r[i] <= 0 || ys_r[i - 1] <= 0 || x[i - 1] <= 0) continue;
        double grow = x[i] / x[i - 1], jump = ys_r[i] / (ys_r[i - 1] * grow);
        int stays = 1;   /* the sizes after do not fall back towards the level before */
        for (int k = i + 1; k < n && k <= i + 2; k++)
            if (ys_r[k] > 0 && ys_r[k] < 0.6 * ys_r[i]) stays = 0;
        if (jump > best && stays) best = jump, split = i;
    }
    return split;
}

/* Above the switch a ping-pong, a send call and a received message's receive all carry the
 * transfer and stay within a small factor of each other; one far above its partners was disturbed
 * (they were measured at different moments): it takes the others' ratio. */
static void repair_disturbed(cal_fit *f, double *y, double *ys_s, double *ys_r, int split, int n)
{
    double *ser[3] = {y, ys_s, ys_r};
    int fixed = 0;
    for (int a = 0; a < 3; a++) {
        double ra[512];
        int na = 0;
        int b = a == 0 ? 1 : 0;   /* its partner: the send call (the ping-pong for the others) */
        for (int i = split; i < n; i++) ra[na++] = ser[a][i] / ser[b][i];
        double mr = cal_median(ra, na);
        for (int i = split; i < n; i++) {
            if (ser[a][i] > 1.5 * mr * ser[b][i]) {
                ser[a][i] = mr * ser[b][i];
                fixed++;
            }
        }
    }
    if (fixed) warnf(f, "%d disturbed measurements above the protocol switch taken from their partners' ratio", fixed);
}

/* The ping-pong's size ranges, a line each (below and above the switch, when there is one: then
 * *thr_seg is the first range above it); their number. */
static int fit_segments(cal_fit *f, const double *x, const double *y, const double *ys_s, const double *ys_r, int n,
                        int split, int joint, double noise, cal_seg *seg, int *thr_seg)
{
    const double *ys3[3] = {y, ys_s, ys_r};
    int nser = joint ? 3 : 1;
    int ns = 0;
    *thr_seg = -1;
    if (split > 0) {
        int nl = split, nr = n - split;
        ns = cal_segments_multi(x, ys3, nser, nl, 5, nl >= 6 ? 3 : 1, noise, seg);
        const double *ysr[3] = {y + split, ys_s + split, ys_r + split};
        int k = cal_segments_multi(x + split, ysr, nser, nr, CAL_MAX_SEG - ns > 5 ? 5 : CAL_MAX_SEG - ns,
                                   nr >= 6 ? 3 : 1, noise, seg + ns);
        for (int j = ns; j < ns + k; j++) seg[j].first += split, seg[j].last += split;
        *thr_seg = ns;
        ns += k;
    } else {
        ns = cal_segments_multi(x, ys3, nser, n, 8, n >= 6 ? 3 : 1, noise, seg);
    }
    f->nseg = ns;
    for (int j = 0; j < ns; j++) {
        f->from[j] = j == 0 ? 0 : seg[j].from;
        f->seg_lo[j] = seg[j].from;
        f->seg_hi[j] = seg[j].to;
        f->seg_rms[j] = seg[j].rms;
        f->pa[j] = seg[j].a;
        f->pb[j] = seg[j].b;
        f->npts[j] = seg[j].last - seg[j].first + 1;
        if (seg[j].rms > 0.05)
            warnf(f, "ping-pong from %.0f to %.0f B: the line misses its points by %.1f %% rms (a busy machine, "
                     "or costs the model's line cannot follow)", seg[j].from, seg[j].to, 100 * seg[j].rms);
    }
    return ns;
}

/* The eager threshold: the recvcall step's range, else (no call durations) the ping-pong's largest
 * upward step, else none (every size eager). */
static void fit_threshold(cal_fit *f, const cal_series *P, const cal_seg *seg, int ns, int thr_seg, const char *hi_t,
                          const char *date)
{
    if (thr_seg < 0 && !f->have_calls) {
        /* no call durations: the largest upward step of the ping-pong */
        double bestj = 0.10;
        for (int j = 1; j < ns; j++) {
            double xr = seg[j].from, left = seg[j - 1].a + seg[j - 1].b * xr, right = seg[j].a + seg[j].b * xr;
            if (left > 0 && right / left - 1 > bestj) {
                bestj = right / left - 1;
                thr_seg = j;
            }
        }
        if (thr_seg > 0)
            warnf(f, "no send/recv call durations: the eager threshold is the ping-pong's largest step (%.0f %% at "
                     "%.0f B), an inference", 100 * bestj, seg[thr_seg].from);
    }
    if (thr_seg > 0) {
        f->eager_threshold = seg[thr_seg].from;
        f->threshold_resolution = seg[thr_seg].from - seg[thr_seg - 1].to;
        snprintf(f->src_thr, sizeof f->src_thr, "calibrated: %s%s, the protocol switch between %.0f and %.0f B, on %s",
                 P->origin, f->have_calls ? " and recvcall" : "", seg[thr_seg - 1].to, seg[thr_seg].from, date);
    } else {
        f->eager_threshold = 0;
        warnf(f, "no eager/rendezvous switch seen up to %s: every size is fitted as eager", hi_t);
        snprintf(f->src_thr, sizeof f->src_thr, "calibrated: %s shows no protocol switch up to %s on %s", P->origin,
                 hi_t, date);
    }
    for (int j = 0; j < ns; j++) f->rndv[j] = thr_seg > 0 && j >= thr_seg;
}

/* An unexpected eager receive's extra, seconds at b bytes (0 when not measured). */
static double unexp_at(const cal_fit *f, double b) { return f->unexp > 0 || f->unexp_pb > 0 ? (fmax(f->unexp, 0) + fmax(f->unexp_pb, 0) * b) * 1e-12 : 0; }

/* The receive of a message that arrived first (recvcall: the library queued it unexpected and
 * copies it out again) against one posted before its message (the ping-pong's, the streams'):
 * the both-way stream takes, per pair, a send call and a posted receive on each rank's CPU, so
 * e(B) = R(B) - (BW(B) - S(B)) at the eager sizes all three measured, each e between 0 and R; a
 * line e = a + b B through them (weighted relative to R). */
static void fit_unexpected(cal_fit *f, const cal_data *d, const cal_series *S, const cal_series *R, const char *date)
{
    f->unexp = f->unexp_pb = f->unexp_rms = -1;
    const cal_series *B = cal_find(d, CAL_BOTHWAY, "send", 0);
    if (!B || !f->have_calls) return;
    double x[512], e[512], w[512];
    int n = 0;
    for (int i = 0; i < B->np && n < 512; i++) {
        double b = B->p[i].bytes, sv = est_at(S, b), rv = est_at(R, b), bw = B->p[i].est;
        if (f->eager_threshold > 0 && b >= f->eager_threshold) continue;
        if (sv <= 0 || rv <= 0 || bw <= 0) continue;
        double posted = fmin(fmax(bw - sv, 0), rv);
        x[n] = b, e[n] = rv - posted, w[n] = 1.0 / (rv * rv);
        n++;
    }
    if (n < 3) return;
    double a, bb;
    cal_wls(x, e, w, n, 1, &a, &bb);
    if (a < 0) a = 0;
    double ss = 0;
    for (int i = 0; i < n; i++) {
        double rv = est_at(R, x[i]), r = (a + bb * x[i] - e[i]) / rv;
        ss += r * r;
    }
    f->unexp = a * 1e12, f->unexp_pb = bb * 1e12, f->unexp_rms = sqrt(ss / n);
    snprintf(f->src_unexp, sizeof f->src_unexp,
             "calibrated: calibench recvcall - (bothway - sendcall), %d eager sizes, on %s (%.0f %% rms of the receive)", n,
             date, 100 * f->unexp_rms);
}

/* The intra-node latency: ping-pong = o_s + copy + L + o_r where the send call returns after its
 * copy (o_s + copy) and an arrived message's receive takes o_r. L in seconds. */
static double fit_latency(cal_fit *f, const cal_series *P, const cal_series *S, const cal_series *R, const cal_seg *seg,
                          int ns, const double *x, const double *y, const char *date)
{
    double Ls[512];
    int nL = 0;
    for (int j = 0; j < ns; j++) {
        if (f->rndv[j] || !f->have_calls) continue;
        double sr[512];
        int m = 0;
        for (int i = seg[j].first; i <= seg[j].last; i++) {
            double sv = est_at(S, x[i]);
            if (sv > 0) sr[m++] = sv / y[i];
        }
        f->ack[j] = m > 0 && cal_median(sr, m) > 0.7;
        if (f->ack[j]) continue;
        for (int i = seg[j].first; i <= seg[j].last && nL < 512; i++) {
            /* the ping-pong's receive is posted before its message: o_r without the unexpected extra */
            double sv = est_at(S, x[i]), rv = est_at(R, x[i]) - unexp_at(f, x[i]);
            if (sv > 0 && rv > 0) Ls[nL++] = y[i] - sv - rv;
        }
    }
    double L;
    if (nL) {
        L = cal_median(Ls, nL);
        double dev[512];
        for (int i = 0; i < nL; i++) dev[i] = fabs(Ls[i] - L);
        f->shm_latency_rms = nL > 1 && L > 0 ? 1.4826 * cal_median(dev, nL) / L : 0;
        if (L < 0) {
            warnf(f, "the send and receive calls take longer than the ping-pong (%.0f ns): the latency is set to 0", -L * 1e9);
            L = 0;
        }
        snprintf(f->src_lat, sizeof f->src_lat,
                 "calibrated: calibench pingpong - sendcall - recvcall, %d eager sizes, on %s (spread %.0f %%)", nL, date,
                 100 * f->shm_latency_rms);
    } else {
        L = y[0] / 3;
        warnf(f, "no send/recv call durations: o_s, L and o_r are each taken as a third of the %.0f ns ping-pong (assumed)",
              y[0] * 1e9);
        snprintf(f->src_lat, sizeof f->src_lat, "assumed: a third of the %s at %.0f B on %s", P->origin, x[0], date);
    }
    f->shm_latency = L * 1e12;
    return L;
}

/* Per segment, each point's share of its ping-pong, then a line through each share (least
 * squares relative to the ping-pong, so that the shares add up to it):
 *   eager:      P = o_s + copy + L + o_r     o_r = R (an arrived message's receive), the sender
 *               o_s + copy = P - L - R (its copy per byte, o_s the constant)
 *   rendezvous: P = o_s + o_r(0) + 3L + copy + o_r(B), S = P - o_r(B) (the send ends when the
 *               data is in), R = o_r(0) + 2L + copy + o_r(B): o_r(B) = P - S, copy = R - o_r(0)
 *               - 2L - o_r(B) (its constant part goes to o_r), o_s = P - o_r(0) - 3L - (R -
 *               o_r(0) - 2L). Without call durations: o_s, o_r as below the switch.
 * Without call durations at all: o_s = o_r = L = a third of the smallest ping-pong. */
static void fit_shares(cal_fit *f, const cal_seg *seg, int ns, const double *x, const double *y, const double *ys_s,
                       const double *ys_r, double L)
{
    double or0 = 0, os0 = 0;
    for (int j = 0; j < ns; j++) {
        int i0 = seg[j].first, i1 = seg[j].last, m = i1 - i0 + 1;
        double sx[512], w[512], v1[512], v2[512], v3[512];
        for (int i = i0; i <= i1; i++) {
            int k = i - i0;
            sx[k] = x[i];
            w[k] = 1.0 / (y[i] * y[i]);
            double Rv = ys_r[i] > 0 ? ys_r[i] : -1, Sv = ys_s[i] > 0 ? ys_s[i] : -1;
            if (!f->rndv[j]) {
                double orr = f->have_calls && Rv > 0 ? fmax(Rv - unexp_at(f, x[i]), 0) : L;
                v1[k] = y[i] - L - orr;   /* sender: o_s + copy */
                v2[k] = orr;              /* o_r */
            } else if (f->have_calls && Rv > 0 && Sv > 0) {
                double orb = fmax(0, y[i] - Sv), C = Rv - or0 - 2 * L;
                if (orb > C) orb = fmax(C, 0);
                v1[k] = y[i] - or0 - 3 * L - C;   /* o_s */
                v2[k] = orb;                      /* o_r(B) (with the copy's constant below) */
                v3[k] = C - orb;                  /* copy */
            } else {
                v1[k] = os0;
                v2[k] = or0;
                v3[k] = y[i] - os0 - or0 - 3 * L - or0;
            }
        }
        double a1, b1, a2, b2, a3 = 0, b3 = 0;
        cal_wls(sx, v2, w, m, 1, &a2, &b2);
        if (f->rndv[j] && f->have_calls) {
            /* the receiver's side C = copy + o_r(B): a line; the copy is its slope beyond o_r(B)'s,
             * o_r(B) takes its constant. Where that constant would be negative (a line over a narrow
             * range of sizes swings) the copy goes through the origin instead. Then o_s takes what
             * is left of the ping-pong. */
            double Cv[512], aC, bC;
            for (int k = 0; k < m; k++) Cv[k] = v2[k] + v3[k];
            cal_wls(sx, Cv, w, m, 1, &aC, &bC);
            b3 = bC - b2 > 0 ? bC - b2 : 0;
            a2 = aC;
            if (a2 + b2 * seg[j].from < 0) {
                double num = 0, den = 0;
                for (int k = 0; k < m; k++) num += w[k] * Cv[k] * sx[k], den += w[k] * sx[k] * sx[k];
                b3 = den > 0 && num > 0 ? num / den - b2 : 0;
                if (b3 < 0) b3 = 0;
                a2 = 0;
            }
            for (int i = i0; i <= i1; i++) v1[i - i0] = y[i] - or0 - 3 * L - b3 * x[i] - (a2 + b2 * x[i]);
        }
        cal_wls(sx, v1, w, m, 1, &a1, &b1);
        if (f->rndv[j] && !f->have_calls) cal_wls(sx, v3, w, m, 1, &a3, &b3);
        if (!f->rndv[j]) {
            /* the sender's constant is o_s, its slope the copy into shared memory */
            if (a1 + b1 * seg[j].from < 0) a1 = -b1 * seg[j].from;
            if (a2 + b2 * seg[j].from < 0) a2 = -b2 * seg[j].from;
            f->os[j] = a1 * 1e12, f->os_pb[j] = 0, f->copy_pb[j] = b1 * 1e12;
            f->or_[j] = a2 * 1e12, f->or_pb[j] = b2 * 1e12;
            if (j == 0) or0 = a2 + b2 * 0, os0 = a1;
        } else {
            if (!f->have_calls) a2 += a3;   /* the model's copy is per byte: its constant is the receiver's */
            double lo = seg[j].from;
            if (a1 + b1 * lo < 0) {
                warnf(f, "ping-pong from %.0f B: the handshake the model plays (3 latencies) is longer than measured; "
                         "the sender's overhead is set to 0 there", lo);
                a1 = -b1 * lo;
            }
            if (a2 + b2 * lo < 0) a2 = -b2 * lo;
            f->os[j] = a1 * 1e12, f->os_pb[j] = b1 * 1e12, f->or_[j] = a2 * 1e12, f->or_pb[j] = b2 * 1e12;
            f->copy_pb[j] = b3 * 1e12;
        }
    }
}

int cal_fit_run(const cal_data *d, const char *date, cal_fit *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->sync_rendezvous = -1;
    f->bsend = f->bsend_pb = f->rsend = f->poll = f->poll_iprobe = f->poll_test = f->reduce_pb = f->ns_per_mac = -1;
    for (int j = 0; j < CAL_MAX_SEG; j++) f->copy_shared_pb[j] = -1;
    const cal_series *P = cal_find(d, CAL_PINGPONG, "send", 0);
    if (!P || P->np < 2) {
        cal_set_err(err, errlen, "no on-node ping-pong (test pingpong, mode send) with two sizes or more to fit");
        return -1;
    }
    const cal_series *S = cal_find(d, CAL_SENDCALL, "send", 0), *R = cal_find(d, CAL_RECVCALL, "send", 0);
    f->have_calls = S && R && S->np >= 2 && R->np >= 2;
    double x[512], y[512];
    int n = 0;
    for (int i = 0; i < P->np && n < 512; i++) {
        x[n] = P->p[i].bytes;
        y[n] = P->p[i].est;
        n++;
    }
    /* The eager/rendezvous switch, per size: an arrived message's MPI_Recv is short when the data
     * came with it (eager) and carries the transfer when it did not (rendezvous): recvcall /
     * pingpong jumps. The split minimising the sizes on the wrong side is the threshold. */
    int split = -1;   /* index of the first rendezvous point */
    double ys_s[512], ys_r[512];
    int joint = f->have_calls;
    for (int i = 0; i < n; i++) {
        ys_s[i] = est_at(S, x[i]);
        ys_r[i] = est_at(R, x[i]);
        if (ys_s[i] <= 0 || ys_r[i] <= 0) joint = 0;
    }
    if (f->have_calls) split = recvcall_step(x, ys_r, n);
    if (split > 0 && joint) repair_disturbed(f, y, ys_s, ys_r, split, n);
    double noise = cal_noise(x, y, n);
    f->noise = noise;
    cal_seg seg[CAL_MAX_SEG];
    int thr_seg;
    int ns = fit_segments(f, x, y, ys_s, ys_r, n, split, joint, noise, seg, &thr_seg);
    char lo_t[32], hi_t[32];
    size_text(x[0], lo_t, sizeof lo_t);
    size_text(x[n - 1], hi_t, sizeof hi_t);
    fit_threshold(f, P, seg, ns, thr_seg, hi_t, date);
    fit_unexpected(f, d, S, R, date);
    double L = fit_latency(f, P, S, R, seg, ns, x, y, date);
    fit_shares(f, seg, ns, x, y, ys_s, ys_r, L);
    char segs_txt[32] = "";   /* "N size ranges" */
    snprintf(segs_txt, sizeof segs_txt, "%d size ranges", ns);
    snprintf(f->src_seg, sizeof f->src_seg, "calibrated: %s%s %s..%s (%s) on %s", P->origin,
             f->have_calls ? ", sendcall, recvcall" : "", lo_t, hi_t, segs_txt, date);

    fit_forward(d, f, P, date);
    fit_send_modes(d, f, P, L, date);
    fit_local_costs(d, f, date);
    fit_collectives(d, f, date);
    return 0;
}

int cal_refine_sizes(const cal_data *d, const cal_fit *f, long *sizes, int max)
{
    int n = 0;
    /* inside each breakpoint's bracket, where it is wider than 1/8 of its upper size: 7 sizes
     * (the protocol switch: 15) */
    for (int j = 1; j < f->nseg && n < max; j++) {
        double lo = f->seg_hi[j - 1], hi = f->seg_lo[j];
        if (hi - lo <= hi / 8 || hi - lo < 2) continue;
        int parts = f->rndv[j] && !f->rndv[j - 1] ? 16 : 8;
        for (int k = 1; k < parts && n < max; k++) {
            long s = (long)(lo + (hi - lo) * k / parts);
            if (s > lo && s < hi) sizes[n++] = s;
        }
    }
    /* sizes whose ping-pong the segment's line misses by more than 10 % (disturbed): again */
    const cal_series *P = cal_find(d, CAL_PINGPONG, "send", 0);
    int again = 0;
    for (int i = 0; P && i < P->np && n < max && again < 12; i++) {
        int j = cal_fit_segment_of(f, P->p[i].bytes);
        double pred = f->pa[j] + f->pb[j] * P->p[i].bytes;
        if (P->p[i].est > 0 && fabs(pred / P->p[i].est - 1) > 0.10) {
            sizes[n++] = (long)P->p[i].bytes;
            again++;
        }
    }
    return n;
}
