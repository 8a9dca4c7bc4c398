/* Robust statistics of the calibration: locations (median and spread), weighted line fits and
 * piecewise segments by dynamic programming. */
#define _GNU_SOURCE
#include "calib_internal.h"
#include "cm_grow.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- robust statistics ----------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_sorted(const double *t, int n) { return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]); }

double cal_median(const double *v, int n)
{
    if (n <= 0) return 0;
    double *t = malloc((size_t)n * sizeof *t);
    if (!t) return v[0];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    double m = median_sorted(t, n);
    free(t);
    return m;
}

double cal_location(const double *v, int n, double *spread, int *rejected)
{
    if (spread) *spread = 0;
    if (rejected) *rejected = 0;
    if (n <= 0) return 0;
    double *t = malloc((size_t)n * sizeof *t);
    if (!t) return v[0];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    double est;
    int lo = 0, h = n;
    if (n < 4) {
        est = median_sorted(t, n);
    } else {
        h = (n + 2) / 3;
        if (h < 3) h = 3;
        double best = HUGE_VAL;
        for (int i = 0; i + h <= n; i++)
            if (t[i + h - 1] - t[i] < best) {
                best = t[i + h - 1] - t[i];
                lo = i;
            }
        est = median_sorted(t + lo, h);
    }
    double width = t[lo + h - 1] - t[lo];
    if (spread) *spread = est > 0 ? width / est : 0;
    if (rejected) {
        double cut = t[lo + h - 1] + fmax(3 * width, 0.05 * est);
        int r = 0;
        for (int i = 0; i < n; i++) r += t[i] > cut;
        *rejected = r;
    }
    free(t);
    return est;
}

static int cmp_round_probe(const void *a, const void *b, void *ctx)
{
    const cal_round *r = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    double px = fmax(r[x].before_s, r[x].after_s), py = fmax(r[y].before_s, r[y].after_s);
    return (px > py) - (px < py);
}

/* Which rounds count: the probed ones within CAL_SLOW_ROUND of the best, at least a quarter of
 * them; a round without probes always counts (nothing says it was slow). */
static void classify_rounds(cal_data *d)
{
    d->rounds_out = 0;
    d->best_probe = d->worst_kept_probe = d->best_out_probe = 0;
    int *ord = malloc((size_t)(d->nrounds ? d->nrounds : 1) * sizeof *ord);
    if (!ord) return;
    int np = 0;
    for (int k = 0; k < d->nrounds; k++) {
        cal_round *r = &d->rounds[k];
        r->kept = 1;
        if (r->before_s > 0 && r->after_s > 0) ord[np++] = k;
    }
    if (np >= 2) {
        qsort_r(ord, (size_t)np, sizeof *ord, cmp_round_probe, d->rounds);
        double best = fmax(d->rounds[ord[0]].before_s, d->rounds[ord[0]].after_s);
        int least = (np + 3) / 4;
        d->best_probe = best;
        for (int i = 0; i < np; i++) {
            cal_round *r = &d->rounds[ord[i]];
            double p = fmax(r->before_s, r->after_s);
            if (i >= least && p > CAL_SLOW_ROUND * best) {
                r->kept = 0;
                d->rounds_out++;
                if (d->best_out_probe == 0) d->best_out_probe = p;
            } else {
                d->worst_kept_probe = p;
            }
        }
    }
    free(ord);
}

/* sample k of p counts: no round, a round not read, or a round kept */
static int sample_counts(const cal_data *d, const cal_point *p, int k)
{
    return p->rd[k] < 0 || p->rd[k] >= d->nrounds || d->rounds[p->rd[k]].kept;
}

void cal_data_estimate(cal_data *d)
{
    classify_rounds(d);
    double *kept = NULL;
    size_t capk = 0;
    for (int i = 0; i < d->ns; i++) {
        cal_series *s = &d->s[i];
        int w = 0;
        for (int j = 0; j < s->np; j++) {
            cal_point *p = &s->p[j];
            int fast = 0;
            for (int k = 0; k < p->nv; k++) fast += sample_counts(d, p, k);
            if (fast >= 3 || fast == p->nv) {
                s->p[w++] = *p;
                continue;
            }
            if (d->points_out++ < 6) {
                size_t l = strlen(d->points_out_text);
                snprintf(d->points_out_text + l, sizeof d->points_out_text - l, "%s%s %s %.0f B", l ? ", " : "",
                         cal_test_name(s->test), s->mode, p->bytes);
            }
            free(p->v);
            free(p->rd);
        }
        s->np = w;
    }
    for (int i = 0; i < d->ns; i++) {
        cal_series *s = &d->s[i];
        for (int a = 1; a < s->np; a++)   /* insertion sort by size: few points */
            for (int b = a; b > 0 && s->p[b].bytes < s->p[b - 1].bytes; b--) {
                cal_point x = s->p[b];
                s->p[b] = s->p[b - 1];
                s->p[b - 1] = x;
            }
        for (int j = 0; j < s->np; j++) {
            cal_point *p = &s->p[j];
            int nk = 0;
            if (cm_grow((void **)&kept, &capk, (size_t)p->nv + 1, sizeof *kept, 64) == 0) {
                for (int k = 0; k < p->nv; k++)
                    if (sample_counts(d, p, k)) kept[nk++] = p->v[k];
            }
            int use = kept && nk > 0 && nk < p->nv;
            p->slow_out = use ? p->nv - nk : 0;
            p->est = use ? cal_location(kept, nk, &p->spread, &p->rejected) : cal_location(p->v, p->nv, &p->spread, &p->rejected);
        }
    }
    free(kept);
}

/* weighted least squares of y = a + b x with weights w; b >= 0 if asked */
void cal_wls(const double *x, const double *y, const double *w, int n, int nonneg, double *a, double *b)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        sw += w[i];
        sx += w[i] * x[i];
        sy += w[i] * y[i];
        sxx += w[i] * x[i] * x[i];
        sxy += w[i] * x[i] * y[i];
    }
    if (sw <= 0) {
        *a = n ? y[0] : 0;
        *b = 0;
        return;
    }
    double den = sw * sxx - sx * sx;
    if (fabs(den) <= 1e-12 * sw * sxx || n < 2) {
        *b = 0;
        *a = sy / sw;
    } else {
        *b = (sw * sxy - sx * sy) / den;
        *a = (sy - *b * sx) / sw;
    }
    if (nonneg && *b < 0) {
        *b = 0;
        *a = sy / sw;
    }
}

double cal_line(const double *x, const double *y, int n, int nonneg_slope, double *a, double *b, int *kept)
{
    *a = 0, *b = 0;
    if (kept) *kept = 0;
    if (n <= 0) return 0;
    double *w = malloc((size_t)n * sizeof *w), *u = malloc((size_t)n * sizeof *u), *r = malloc((size_t)n * sizeof *r);
    if (!w || !u || !r) {
        free(w), free(u), free(r);
        return 0;
    }
    for (int i = 0; i < n; i++) w[i] = 1;
    for (int it = 0; it < 8; it++) {
        for (int i = 0; i < n; i++) u[i] = w[i] / fmax(y[i] * y[i], 1e-300);   /* relative residuals */
        cal_wls(x, y, u, n, nonneg_slope, a, b);
        for (int i = 0; i < n; i++) r[i] = fabs((y[i] - *a - *b * x[i]) / fmax(fabs(y[i]), 1e-300));
        double s = 1.4826 * cal_median(r, n);
        double c = 4.685 * fmax(s, 0.01);   /* 1 %: noise below it is not told from the model's error */
        for (int i = 0; i < n; i++) w[i] = r[i] < c ? (1 - (r[i] / c) * (r[i] / c)) * (1 - (r[i] / c) * (r[i] / c)) : 0;
    }
    double ss = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (w[i] > 0) {
            ss += r[i] * r[i];
            k++;
        }
    if (kept) *kept = k;
    free(w), free(u), free(r);
    return k ? sqrt(ss / k) : 0;
}

/* the truncated cost of a segment's line: relative residuals capped at 50 % (a disturbed point counts,
 * but no more than a handful of them can move a breakpoint) */
static double seg_cost(const double *x, const double *y, int n, double *a, double *b, double *rms)
{
    int kept;
    *rms = cal_line(x, y, n, 1, a, b, &kept);
    double c = 0;
    for (int i = 0; i < n; i++) {
        double r = (y[i] - *a - *b * x[i]) / fmax(fabs(y[i]), 1e-300);
        c += fmin(r * r, 0.5 * 0.5);
    }
    return c;
}

double cal_noise(const double *x, const double *y, int n)
{
    /* the scatter of each point about the line through its two neighbours (breakpoints spoil
     * few of these), as a relative standard deviation */
    double d[1024];
    int m = 0;
    for (int i = 1; i + 1 < n && m < 1024; i++) {
        double t = (x[i] - x[i - 1]) / (x[i + 1] - x[i - 1]);
        double interp = y[i - 1] + t * (y[i + 1] - y[i - 1]);
        if (y[i] > 0) d[m++] = fabs(y[i] - interp) / y[i];
    }
    return m ? 1.4826 * cal_median(d, m) / sqrt(1.5) : 0;
}

static int segments_dp(const double *x, const double *const *ys, int nser, int n, int max_seg, int min_pts,
                       double noise, cal_seg *out);

/* A size far above the line through its two neighbours in any series, where those two agree (no
 * step between them): one disturbed measurement. A step of the costs persists to the next size. */
static int spike(const double *x, const double *const *ys, int nser, int n, int i)
{
    if (i == 0 || i == n - 1) return 0;
    for (int k = 0; k < nser; k++) {
        const double *y = ys[k];
        double t = (x[i] - x[i - 1]) / (x[i + 1] - x[i - 1]), interp = y[i - 1] + t * (y[i + 1] - y[i - 1]);
        double ratio = y[i + 1] > y[i - 1] ? y[i + 1] / y[i - 1] : y[i - 1] / y[i + 1];
        if (y[i] > 1.5 * interp && ratio < 1.3 * (x[i + 1] / fmax(x[i - 1], 1)) + 0.3) return 1;
    }
    return 0;
}

int cal_segments_multi(const double *x, const double *const *ys, int nser, int n, int max_seg, int min_pts,
                       double noise, cal_seg *out)
{
    if (n <= 0 || nser < 1 || nser > 8) return 0;
    /* the breakpoints without the single disturbed sizes; the segments then span them again */
    int *keep = malloc((size_t)n * sizeof *keep);
    double *cx = malloc((size_t)n * sizeof *cx), *cy = malloc((size_t)n * (size_t)nser * sizeof *cy);
    if (!keep || !cx || !cy) {
        free(keep), free(cx), free(cy);
        return 0;
    }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!spike(x, ys, nser, n, i)) {
            keep[m] = i;
            cx[m] = x[i];
            for (int k = 0; k < nser; k++) cy[(size_t)k * (size_t)n + (size_t)m] = ys[k][i];
            m++;
        }
    const double *cys[8];
    for (int k = 0; k < nser; k++) cys[k] = cy + (size_t)k * (size_t)n;
    int ns = segments_dp(cx, cys, nser, m, max_seg, min_pts, noise, out);
    for (int j = 0; j < ns; j++) {
        int first = j == 0 ? 0 : keep[out[j].first], last = j == ns - 1 ? n - 1 : keep[out[j + 1].first] - 1;
        out[j].first = first, out[j].last = last, out[j].from = x[first], out[j].to = x[last];
    }
    free(keep), free(cx), free(cy);
    return ns;
}

static int segments_dp(const double *x, const double *const *ys, int nser, int n, int max_seg, int min_pts,
                       double noise, cal_seg *out)
{
    if (n <= 0 || nser < 1) return 0;
    if (min_pts < 1) min_pts = 1;
    if (max_seg < 1) max_seg = 1;
    if (max_seg > CAL_MAX_SEG) max_seg = CAL_MAX_SEG;
    /* cost[i][j]: points i..j as one segment, over every series */
    double *cost = malloc((size_t)n * (size_t)n * sizeof *cost);
    double *best = malloc((size_t)(max_seg + 1) * (size_t)(n + 1) * sizeof *best);
    int *from = malloc((size_t)(max_seg + 1) * (size_t)(n + 1) * sizeof *from);
    if (!cost || !best || !from) {
        free(cost), free(best), free(from);
        return 0;
    }
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            double a, b, rms, c = 0;
            if (j - i + 1 < min_pts) c = HUGE_VAL;
            else
                for (int k = 0; k < nser; k++) c += seg_cost(x + i, ys[k] + i, j - i + 1, &a, &b, &rms);
            cost[i * n + j] = c;
        }
    /* best[k][j]: the first j points in k segments */
#define B(k, j) best[(size_t)(k) * (size_t)(n + 1) + (size_t)(j)]
#define F(k, j) from[(size_t)(k) * (size_t)(n + 1) + (size_t)(j)]
    for (int k = 0; k <= max_seg; k++)
        for (int j = 0; j <= n; j++) B(k, j) = HUGE_VAL, F(k, j) = -1;
    B(0, 0) = 0;
    for (int k = 1; k <= max_seg; k++)
        for (int j = 1; j <= n; j++)
            for (int i = 0; i < j; i++) {
                if (B(k - 1, i) == HUGE_VAL || cost[i * n + (j - 1)] == HUGE_VAL) continue;
                double c = B(k - 1, i) + cost[i * n + (j - 1)];
                if (c < B(k, j)) {
                    B(k, j) = c;
                    F(k, j) = i;
                }
            }
    /* a breakpoint must explain more than 2 % rms over all points, and more than noise does in
     * the Bayesian information criterion (3 parameters a segment) */
    double pen = 0, bestv = HUGE_VAL;
    for (int k = 0; k < nser; k++) {
        double sk = k == 0 ? fmax(noise, cal_noise(x, ys[0], n)) : cal_noise(x, ys[k], n);
        pen += fmax((double)n * 0.02 * 0.02, 3.0 * log((double)n) * sk * sk);
    }
    int kbest = 0;
    if (getenv("MPISIM_CALIB_DEBUG"))
        for (int k = 1; k <= max_seg; k++)
            fprintf(stderr, "calib: %d points, noise %.3f, penalty %.4f: %d segments cost %.4f\n", n, noise, pen, k, B(k, n));
    for (int k = 1; k <= max_seg; k++)
        if (B(k, n) < HUGE_VAL && B(k, n) + pen * k < bestv - 1e-15) {
            bestv = B(k, n) + pen * k;
            kbest = k;
        }
    if (kbest == 0) {   /* fewer points than min_pts: one segment anyway */
        double rms;
        out[0].first = 0, out[0].last = n - 1;
        seg_cost(x, ys[0], n, &out[0].a, &out[0].b, &rms);
        out[0].rms = rms, out[0].from = x[0], out[0].to = x[n - 1];
        free(cost), free(best), free(from);
        return 1;
    }
    int j = n;
    for (int k = kbest; k >= 1; k--) {
        int i = F(k, j);
        cal_seg *sg = &out[k - 1];
        sg->first = i, sg->last = j - 1, sg->from = x[i], sg->to = x[j - 1];
        seg_cost(x + i, ys[0] + i, j - i, &sg->a, &sg->b, &sg->rms);
        j = i;
    }
#undef B
#undef F
    free(cost), free(best), free(from);
    return kbest;
}

int cal_segments(const double *x, const double *y, int n, int max_seg, int min_pts, cal_seg *out)
{
    const double *ys[1] = {y};
    return cal_segments_multi(x, ys, 1, n, max_seg, min_pts, cal_noise(x, y, n), out);
}
