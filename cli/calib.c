/* Calibration from microbenchmarks: reading, robust estimates, the piecewise fit, the profile.
 * See calib.h; how the fit maps onto the model: libmpisim/model/README.md ("Piecewise costs by
 * size") and README.md ("Model your own cluster"). */
#define _GNU_SOURCE
#include "calib.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const test_names[CAL_NTESTS] = {"pingpong", "stream",  "bothway", "sendcall", "recvcall",
                                                   "forward",  "empty",   "reduce",  "compute"};

const char *cal_test_name(cal_test t) { return (unsigned)t < CAL_NTESTS ? test_names[t] : "?"; }
int cal_test_lookup(const char *name)
{
    for (int i = 0; i < CAL_NTESTS; i++)
        if (!strcmp(name, test_names[i])) return i;
    return -1;
}

static void set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
    if (!err || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

/* ---- data ----------------------------------------------------------------------------------- */

cal_data *cal_data_create(void)
{
    cal_data *d = calloc(1, sizeof *d);
    if (d) d->same_host = -1;
    return d;
}

void cal_data_destroy(cal_data *d)
{
    if (!d) return;
    for (int i = 0; i < d->ns; i++) {
        for (int j = 0; j < d->s[i].np; j++) free(d->s[i].p[j].v);
        free(d->s[i].p);
    }
    free(d->s);
    free(d);
}

cal_series *cal_find(const cal_data *d, cal_test t, const char *mode, int off_node)
{
    for (int i = 0; i < d->ns; i++)
        if (d->s[i].test == t && !strcmp(d->s[i].mode, mode) && d->s[i].off_node == off_node) return &d->s[i];
    return NULL;
}

int cal_add_sample(cal_data *d, cal_test t, const char *mode, long window, int off_node, const char *origin,
                   double bytes, double seconds)
{
    if (!(seconds >= 0) || !isfinite(seconds) || !(bytes >= 0)) return -1;
    cal_series *s = cal_find(d, t, mode, off_node);
    if (!s) {
        if (d->ns == d->caps) {
            int nc = d->caps ? 2 * d->caps : 16;
            cal_series *ns = realloc(d->s, (size_t)nc * sizeof *ns);
            if (!ns) return -1;
            d->s = ns;
            d->caps = nc;
        }
        s = &d->s[d->ns++];
        memset(s, 0, sizeof *s);
        s->test = t;
        snprintf(s->mode, sizeof s->mode, "%s", mode);
        s->window = window;
        s->off_node = off_node;
        snprintf(s->origin, sizeof s->origin, "%s", origin);
    }
    cal_point *p = NULL;
    for (int i = 0; i < s->np && !p; i++)
        if (s->p[i].bytes == bytes) p = &s->p[i];
    if (!p) {
        if (s->np == s->capp) {
            int nc = s->capp ? 2 * s->capp : 32;
            cal_point *np = realloc(s->p, (size_t)nc * sizeof *np);
            if (!np) return -1;
            s->p = np;
            s->capp = nc;
        }
        p = &s->p[s->np++];
        memset(p, 0, sizeof *p);
        p->bytes = bytes;
    }
    if (p->nv == p->capv) {
        int nc = p->capv ? 2 * p->capv : 32;
        double *nv = realloc(p->v, (size_t)nc * sizeof *nv);
        if (!nv) return -1;
        p->v = nv;
        p->capv = nc;
    }
    p->v[p->nv++] = seconds;
    return 0;
}

/* ---- reading ------------------------------------------------------------------------------- */

/* the numbers of a line (up to max); a token that is not a number stops it */
static int numbers(const char *line, double *v, int max)
{
    int n = 0;
    const char *p = line;
    while (n < max) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        char *e;
        errno = 0;
        double x = strtod(p, &e);
        if (e == p || errno || !isfinite(x) || (*e && !isspace((unsigned char)*e))) break;
        v[n++] = x;
        p = e;
    }
    return n;
}

static int has_other_text(const char *line, int nnum)
{
    /* after nnum numbers, anything left that is not space */
    const char *p = line;
    for (int i = 0; i < nnum; i++) {
        while (*p && isspace((unsigned char)*p)) p++;
        while (*p && !isspace((unsigned char)*p)) p++;
    }
    while (*p && isspace((unsigned char)*p)) p++;
    return *p != 0;
}

typedef enum { F_NONE, F_CALIBENCH, F_OSU_LAT, F_OSU_BW, F_OSU_BIBW, F_IMB_PP, F_IMB_PI, F_IMB_OTHER, F_NP_OUT, F_NP_TERM } fmt_t;

int cal_read_stream(cal_data *d, FILE *f, const char *name, int off_node, char *err, size_t errlen)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, values = 0, ncsv_header = 0;
    fmt_t fmt = F_NONE;
    int node = off_node < 0 ? 0 : off_node;
    int rc = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        const char *l = line;
        while (*l && isspace((unsigned char)*l)) l++;
        if (!*l) continue;
        /* format headers, wherever they stand (files may hold several benchmarks) */
        if (!strncmp(l, "# calibench", 11)) {
            fmt = F_CALIBENCH;
            const char *sh = strstr(l, "same_host=");
            if (sh) {
                d->same_host = atoi(sh + 10);
                if (off_node < 0) node = d->same_host == 0;
            }
            continue;
        }
        if (!strncmp(l, "# OSU MPI", 9)) {
            if (strstr(l, "Bi-Directional Bandwidth")) fmt = F_OSU_BIBW;
            else if (strstr(l, "Bandwidth Test")) fmt = F_OSU_BW;
            else if (strstr(l, "Latency Test") && !strstr(l, "Multi") && !strstr(l, "Broadcast") &&
                     !strstr(l, "All") && !strstr(l, "Reduce"))
                fmt = F_OSU_LAT;
            else fmt = F_IMB_OTHER;   /* another OSU test: not read */
            continue;
        }
        if (!strncmp(l, "# Benchmarking", 14)) {
            const char *b = l + 14;
            while (*b == ' ') b++;
            fmt = !strncmp(b, "PingPong", 8) && !isalnum((unsigned char)b[8]) ? F_IMB_PP
                  : !strncmp(b, "PingPing", 8) && !isalnum((unsigned char)b[8]) ? F_IMB_PI
                                                                               : F_IMB_OTHER;
            continue;
        }
        if (l[0] == '#') {
            if (fmt == F_CALIBENCH) {
                const char *e = strstr(l, "elapsed_s=");
                if (e) d->elapsed_s += atof(e + 10);
                if (strstr(l, "check=FAIL")) {
                    set_err(err, errlen, "%s:%d: the benchmark's own check failed (%s)", name, lineno, l);
                    rc = -1;
                    break;
                }
            }
            continue;
        }
        if (fmt == F_CALIBENCH) {
            if (!strncmp(l, "test,", 5)) {
                ncsv_header++;
                continue;
            }
            char test[32], mode[32];
            long bytes, window, batch;
            int ns, off = 0;
            if (sscanf(l, "%31[^,],%31[^,],%ld,%ld,%ld,%d,%n", test, mode, &bytes, &window, &batch, &ns, &off) < 6 ||
                off == 0) {
                set_err(err, errlen, "%s:%d: expected test,mode,bytes,window,batch,samples,values", name, lineno);
                rc = -1;
                break;
            }
            int t = cal_test_lookup(test);
            if (t < 0) {
                set_err(err, errlen, "%s:%d: unknown test '%s'", name, lineno, test);
                rc = -1;
                break;
            }
            double v[4096];
            int n = numbers(l + off, v, 4096);
            if (n != ns || has_other_text(l + off, n)) {
                set_err(err, errlen, "%s:%d: %d samples announced, %d read", name, lineno, ns, n);
                rc = -1;
                break;
            }
            char origin[96];
            snprintf(origin, sizeof origin, "calibench %s", test);
            for (int i = 0; i < n; i++)
                if (cal_add_sample(d, (cal_test)t, mode, window, node, origin, (double)bytes, v[i]) == 0) values++;
            continue;
        }
        double v[8];
        int n = numbers(l, v, 8);
        if (fmt == F_OSU_LAT || fmt == F_OSU_BW || fmt == F_OSU_BIBW) {
            if (n < 2 || v[0] < 0 || v[0] != floor(v[0])) {
                set_err(err, errlen, "%s:%d: expected 'SIZE VALUE' in an OSU table, got '%s'", name, lineno, l);
                rc = -1;
                break;
            }
            if (fmt == F_OSU_LAT) {
                if (cal_add_sample(d, CAL_PINGPONG, "send", 1, node, "OSU osu_latency", v[0], v[1] * 1e-6) == 0) values++;
            } else if (v[0] > 0 && v[1] > 0) {
                /* MB/s of 10^6 bytes; bibw counts both directions */
                double per = (fmt == F_OSU_BIBW ? 2.0 : 1.0) * v[0] / (v[1] * 1e6);
                if (cal_add_sample(d, fmt == F_OSU_BW ? CAL_STREAM : CAL_BOTHWAY, "isend", 64, node,
                                   fmt == F_OSU_BW ? "OSU osu_bw" : "OSU osu_bibw", v[0], per) == 0)
                    values++;
            }
            continue;
        }
        if (fmt == F_IMB_PP || fmt == F_IMB_PI || fmt == F_IMB_OTHER) {
            if (n == 0) continue;   /* column headers, notes */
            if (fmt == F_IMB_OTHER) continue;
            if (n < 3) {
                set_err(err, errlen, "%s:%d: expected '#bytes #repetitions t[usec] Mbytes/sec', got '%s'", name, lineno, l);
                rc = -1;
                break;
            }
            if (cal_add_sample(d, fmt == F_IMB_PP ? CAL_PINGPONG : CAL_BOTHWAY, fmt == F_IMB_PP ? "send" : "isend", 1, node,
                               fmt == F_IMB_PP ? "IMB PingPong" : "IMB PingPing", v[0], v[2] * 1e-6) == 0)
                values++;
            continue;
        }
        /* NetPIPE: its terminal lines, or np.out's three columns (bytes, Mbps, seconds) */
        int idx;
        double b, reps, mbps, us;
        if (sscanf(l, "%d: %lf bytes %lf times --> %lf Mbps in %lf usec", &idx, &b, &reps, &mbps, &us) == 5) {
            fmt = F_NP_TERM;
            if (cal_add_sample(d, CAL_PINGPONG, "send", 1, node, "NetPIPE", b, us * 1e-6) == 0) values++;
            continue;
        }
        if (fmt == F_NP_TERM) continue;   /* its other lines: "Now starting...", host names */
        if ((fmt == F_NONE || fmt == F_NP_OUT) && n >= 3 && v[0] >= 1 && v[0] == floor(v[0]) && v[2] > 0) {
            /* np.out: Mbps = 8 bytes / seconds / 2^20 (NetPIPE's mega), which tells it from other
             * tables; the seconds have 8 decimals */
            double lo = 8.0 * v[0] / (v[2] + 5e-9) / 1048576.0, hi = 8.0 * v[0] / fmax(v[2] - 5e-9, 1e-12) / 1048576.0;
            if ((v[1] >= 0.98 * lo && v[1] <= 1.02 * hi) || (v[1] >= 0.98 * lo * 1.048576 && v[1] <= 1.02 * hi * 1.048576)) {
                fmt = F_NP_OUT;
                if (cal_add_sample(d, CAL_PINGPONG, "send", 1, node, "NetPIPE", v[0], v[2]) == 0) values++;
                continue;
            }
        }
        if (fmt == F_NONE && (!strncmp(l, "Sending output", 14) || !strncmp(l, "Now starting", 12) ||
                              (strchr(l, ':') && n == 0)))
            continue;   /* NetPIPE's preamble */
        set_err(err, errlen, "%s:%d: not a line of a known benchmark's output: '%.80s'", name, lineno, l);
        rc = -1;
        break;
    }
    free(line);
    if (rc == 0 && values == 0) {
        set_err(err, errlen, "%s: no measurements found (calibench, OSU latency/bw/bibw, IMB PingPong/PingPing or "
                             "NetPIPE output expected)", name);
        rc = -1;
    }
    (void)ncsv_header;
    return rc < 0 ? -1 : values;
}

int cal_read_file(cal_data *d, const char *path, int off_node, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int n = cal_read_stream(d, f, path, off_node, err, errlen);
    fclose(f);
    if (n > 0) {
        size_t l = strlen(d->inputs);
        snprintf(d->inputs + l, sizeof d->inputs - l, "%s%s", l ? ", " : "", path);
    }
    return n;
}

/* ---- robust statistics ----------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_sorted(const double *t, int n) { return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]); }

static double median(const double *v, int n)
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

void cal_data_estimate(cal_data *d)
{
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
            p->est = cal_location(p->v, p->nv, &p->spread, &p->rejected);
        }
    }
}

/* weighted least squares of y = a + b x with weights w; b >= 0 if asked */
static void wls(const double *x, const double *y, const double *w, int n, int nonneg, double *a, double *b)
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
        wls(x, y, u, n, nonneg_slope, a, b);
        for (int i = 0; i < n; i++) r[i] = fabs((y[i] - *a - *b * x[i]) / fmax(fabs(y[i]), 1e-300));
        double s = 1.4826 * median(r, n);
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
    return m ? 1.4826 * median(d, m) / sqrt(1.5) : 0;
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

int cal_fit_run(const cal_data *d, const char *date, cal_fit *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->sync_rendezvous = -1;
    f->bsend = f->bsend_pb = f->rsend = f->poll = f->poll_iprobe = f->poll_test = f->reduce_pb = f->ns_per_mac = -1;
    for (int j = 0; j < CAL_MAX_SEG; j++) f->copy_shared_pb[j] = -1;
    const cal_series *P = cal_find(d, CAL_PINGPONG, "send", 0);
    if (!P || P->np < 2) {
        set_err(err, errlen, "no on-node ping-pong (test pingpong, mode send) with two sizes or more to fit");
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
    if (f->have_calls) {
        /* the step of recvcall: the largest rise from one size to the next beyond what growing with
         * the size could give (a line through the origin at most), at least 2.5-fold, and still
         * there at the two sizes after (a disturbed point is not a step) */
        double best = 2.5;
        for (int i = 1; i < n; i++) {
            if (ys_r[i] <= 0 || ys_r[i - 1] <= 0 || x[i - 1] <= 0) continue;
            double grow = x[i] / x[i - 1], jump = ys_r[i] / (ys_r[i - 1] * grow);
            int stays = 1;   /* the sizes after do not fall back towards the level before */
            for (int k = i + 1; k < n && k <= i + 2; k++)
                if (ys_r[k] > 0 && ys_r[k] < 0.6 * ys_r[i]) stays = 0;
            if (jump > best && stays) best = jump, split = i;
        }
    }
    if (split > 0 && joint) {
        /* above the switch a ping-pong, a send call and a received message's receive all carry the
         * transfer and stay within a small factor of each other; one far above its partners was
         * disturbed (they were measured at different moments): it takes the others' ratio */
        double *ser[3] = {y, ys_s, ys_r};
        int fixed = 0;
        for (int a = 0; a < 3; a++) {
            double ra[512];
            int na = 0;
            int b = a == 0 ? 1 : 0;   /* its partner: the send call (the ping-pong for the others) */
            for (int i = split; i < n; i++) ra[na++] = ser[a][i] / ser[b][i];
            double mr = median(ra, na);
            for (int i = split; i < n; i++) {
                if (ser[a][i] > 1.5 * mr * ser[b][i]) {
                    ser[a][i] = mr * ser[b][i];
                    fixed++;
                }
            }
        }
        if (fixed) warnf(f, "%d disturbed measurements above the protocol switch taken from their partners' ratio", fixed);
    }
    double noise = cal_noise(x, y, n);
    f->noise = noise;
    const double *ys3[3] = {y, ys_s, ys_r};
    int nser = joint ? 3 : 1;
    cal_seg seg[CAL_MAX_SEG];
    int ns = 0, thr_seg = -1;
    if (split > 0) {
        int nl = split, nr = n - split;
        ns = cal_segments_multi(x, ys3, nser, nl, 5, nl >= 6 ? 3 : 1, noise, seg);
        const double *ysr[3] = {y + split, ys_s + split, ys_r + split};
        int k = cal_segments_multi(x + split, ysr, nser, nr, CAL_MAX_SEG - ns > 5 ? 5 : CAL_MAX_SEG - ns,
                                   nr >= 6 ? 3 : 1, noise, seg + ns);
        for (int j = ns; j < ns + k; j++) seg[j].first += split, seg[j].last += split;
        thr_seg = ns;
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
    char lo_t[32], hi_t[32];
    size_text(x[0], lo_t, sizeof lo_t);
    size_text(x[n - 1], hi_t, sizeof hi_t);
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

    /* the intra-node latency: ping-pong = o_s + copy + L + o_r where the send call returns after its
     * copy (o_s + copy) and an arrived message's receive takes o_r */
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
        f->ack[j] = m > 0 && median(sr, m) > 0.7;
        if (f->ack[j]) continue;
        for (int i = seg[j].first; i <= seg[j].last && nL < 512; i++) {
            double sv = est_at(S, x[i]), rv = est_at(R, x[i]);
            if (sv > 0 && rv > 0) Ls[nL++] = y[i] - sv - rv;
        }
    }
    double L;
    if (nL) {
        L = median(Ls, nL);
        double dev[512];
        for (int i = 0; i < nL; i++) dev[i] = fabs(Ls[i] - L);
        f->shm_latency_rms = nL > 1 && L > 0 ? 1.4826 * median(dev, nL) / L : 0;
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

    /* Per segment, each point's share of its ping-pong, then a line through each share (least
     * squares relative to the ping-pong, so that the shares add up to it):
     *   eager:      P = o_s + copy + L + o_r     o_r = R (an arrived message's receive), the sender
     *               o_s + copy = P - L - R (its copy per byte, o_s the constant)
     *   rendezvous: P = o_s + o_r(0) + 3L + copy + o_r(B), S = P - o_r(B) (the send ends when the
     *               data is in), R = o_r(0) + 2L + copy + o_r(B): o_r(B) = P - S, copy = R - o_r(0)
     *               - 2L - o_r(B) (its constant part goes to o_r), o_s = P - o_r(0) - 3L - (R -
     *               o_r(0) - 2L). Without call durations: o_s, o_r as below the switch.
     * Without call durations at all: o_s = o_r = L = a third of the smallest ping-pong. */
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
                double orr = f->have_calls && Rv > 0 ? Rv : L;
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
        wls(sx, v2, w, m, 1, &a2, &b2);
        if (f->rndv[j] && f->have_calls) {
            /* the receiver's side C = copy + o_r(B): a line; the copy is its slope beyond o_r(B)'s,
             * o_r(B) takes its constant. Where that constant would be negative (a line over a narrow
             * range of sizes swings) the copy goes through the origin instead. Then o_s takes what
             * is left of the ping-pong. */
            double Cv[512], aC, bC;
            for (int k = 0; k < m; k++) Cv[k] = v2[k] + v3[k];
            wls(sx, Cv, w, m, 1, &aC, &bC);
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
        wls(sx, v1, w, m, 1, &a1, &b1);
        if (f->rndv[j] && !f->have_calls) wls(sx, v3, w, m, 1, &a3, &b3);
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
    char segs_txt[160] = "";
    snprintf(segs_txt, sizeof segs_txt, "%d size ranges", ns);
    snprintf(f->src_seg, sizeof f->src_seg, "calibrated: %s%s %s..%s (%s) on %s", P->origin,
             f->have_calls ? ", sendcall, recvcall" : "", lo_t, hi_t, segs_txt, date);

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
        double pooled = nr ? median(ratio, nr) : 0;
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
            wls(dx, dy, w, m, 1, &a, &b);
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
            double md = median(dy, m);
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
            f->sync_err[0] = median(e0, m), f->sync_err[1] = median(e1, m);
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

/* ---- the profile ----------------------------------------------------------------------------- */

static void src_line(FILE *o, const char *key, const char *src)
{
    if (src && *src) fprintf(o, "%s.source = %s\n", key, src);
}

static int write_profile_raw(const cal_fit *f, FILE *o, const char *header, const char *base, int ranks_per_node,
                             int cpu_measured_here);

/* Lines of a profile stay below inih's 200 bytes: a long comment goes on in another comment,
 * a long value on indented lines (which continue it). */
static void wrap_lines(const char *text, FILE *o)
{
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        int comment = p[0] == ';';
        const char *q = p;
        size_t left = l, width = 160;
        int first = 1;
        while (left > 0) {
            size_t take = left;
            if (left > width) {
                take = width;
                while (take > 40 && q[take] != ' ') take--;
                if (take <= 40) take = width;
            }
            if (!first) fputs(comment ? ";   " : "    ", o);
            fwrite(q, 1, take, o);
            fputc('\n', o);
            q += take;
            left -= take;
            while (left > 0 && *q == ' ') q++, left--;
            first = 0;
        }
        if (l == 0) fputc('\n', o);
        p += l + (e ? 1 : 0);
    }
}

int cal_write_profile(const cal_fit *f, FILE *o, const char *header, const char *base, int ranks_per_node,
                      int cpu_measured_here)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return -1;
    int rc = write_profile_raw(f, m, header, base, ranks_per_node, cpu_measured_here);
    if (fclose(m) != 0 || rc != 0) {
        free(buf);
        return -1;
    }
    wrap_lines(buf, o);
    free(buf);
    return ferror(o) ? -1 : 0;
}

static int write_profile_raw(const cal_fit *f, FILE *o, const char *header, const char *base, int ranks_per_node,
                             int cpu_measured_here)
{
    if (header) {
        const char *p = header;
        while (*p) {
            const char *e = strchr(p, '\n');
            int l = e ? (int)(e - p) : (int)strlen(p);
            fprintf(o, "; %.*s\n", l, p);
            p += l + (e ? 1 : 0);
        }
    }
    fprintf(o, "\n[profile]\ninclude = %s\n", base && *base ? base : "default");
    fprintf(o, "description = calibrated host profile (mpisim calibrate): ranks on one node measured; between nodes "
               "the network of '%s', not measured\n",
            base && *base ? base : "default");
    fprintf(o, "\n[host]\nranks_per_node = %d\n", ranks_per_node);
    fprintf(o, "ranks_per_node.source = the node's cores (ranks that share a node in the runs predicted)\n");
    fprintf(o, "nodes = 0\nmap_by = slot\n");
    fprintf(o, "shm_latency = %.0f ps\n", f->shm_latency);
    src_line(o, "shm_latency", f->src_lat);
    fprintf(o, "shm_copy_rate = 0 b/s\nshm_copy_rate.source = calibrated: per size range in mpi.size_segments\n");
    fprintf(o, "shm_memory_rate = 0 b/s\nshm_memory_rate.source = assumed: not separated from the copies (both-way runs check it)\n");
    if (f->sync_rendezvous >= 0) {
        fprintf(o, "sync_protocol = %s\n", f->sync_rendezvous ? "rendezvous" : "eager_ack");
        src_line(o, "sync_protocol", f->src_sync);
    }
    if (f->bsend >= 0) {
        fprintf(o, "bsend_overhead = %.0f ps\n", f->bsend);
        src_line(o, "bsend_overhead", f->src_bsend);
        fprintf(o, "bsend_overhead_per_byte = %.0f\n", f->bsend_pb);
        src_line(o, "bsend_overhead_per_byte", f->src_bsend);
    }
    if (f->rsend >= 0) {
        fprintf(o, "rsend_overhead = %.0f ps\n", f->rsend);
        src_line(o, "rsend_overhead", f->src_rsend);
    }
    fprintf(o, "\n[mpi]\n");
    if (f->eager_threshold > 0) fprintf(o, "eager_threshold = %.0f B\n", f->eager_threshold);
    else fprintf(o, "eager_threshold = %.0f B\n", f->seg_hi[f->nseg - 1] + 1);
    src_line(o, "eager_threshold", f->src_thr);
    /* the scalar o_s is what a sender's clock takes at once (the shim knows it): no more than any
     * size range's own o_s, whose rest the model charges inside the call */
    double os_min = f->os[0];
    for (int j = 1; j < f->nseg; j++)   /* eager ranges: a rendezvous sender's own o_s is small beside its transfer */
        if (!f->rndv[j]) os_min = fmin(os_min, f->os[j] + f->os_pb[j] * f->from[j]);
    if (os_min < 0) os_min = 0;
    fprintf(o, "send_overhead = %.0f ps\n", floor(os_min));
    src_line(o, "send_overhead", f->src_seg);
    fprintf(o, "recv_overhead = %.0f ps\n", f->or_[0]);
    src_line(o, "recv_overhead", f->src_seg);
    fprintf(o, "send_overhead_per_byte = 0\nrecv_overhead_per_byte = 0\n");
    fprintf(o, "recv_overhead_per_byte.source = not used: mpi.size_segments gives o_r at every size\n");
    fprintf(o, "; FROM:OS:OS_PB:OR:OR_PB:COPY_PB[:COPY_SHARED_PB][:ack] per size range (bytes, ps, ps per byte), README 'Piecewise costs by size':\n");
    for (int j = 0; j < f->nseg; j++)
        fprintf(o, ";   from %.0f B%s: o_s %.1f ns + %.4f ns/B, o_r %.1f ns + %.4f ns/B, copy %.4f ns/B (%.2f GB/s)%s; "
                   "ping-pong line %.1f %% rms over %d sizes\n",
                f->from[j], f->rndv[j] ? " (rendezvous)" : "", f->os[j] * 1e-3, f->os_pb[j] * 1e-3, f->or_[j] * 1e-3,
                f->or_pb[j] * 1e-3, f->copy_pb[j] * 1e-3, f->copy_pb[j] > 0 ? 1e3 / f->copy_pb[j] : 0,
                f->ack[j] ? ", sends complete when the receiver has the message" : "", 100 * f->seg_rms[j], f->npts[j]);
    fprintf(o, "size_segments =");   /* one segment a line: the lines that follow, indented, continue it */
    for (int j = 0; j < f->nseg; j++) {
        /* as printed (4 decimals per byte, 1 per constant), never below 0 from FROM on */
        double osb = round(f->os_pb[j] * 1e4) / 1e4, orb = round(f->or_pb[j] * 1e4) / 1e4;
        double osa = fmax(f->os[j], ceil((-osb * f->from[j]) * 10 + 1) / 10);
        double ora = fmax(f->or_[j], ceil((-orb * f->from[j]) * 10 + 1) / 10);
        char shared[48] = "";
        if (f->rndv[j] && f->copy_shared_pb[j] >= 0) snprintf(shared, sizeof shared, ":%.4f", f->copy_shared_pb[j]);
        fprintf(o, "%s%.0f:%.1f:%.4f:%.1f:%.4f:%.4f%s%s\n", j ? "    " : " ", f->from[j], osa, osb, ora, orb,
                f->copy_pb[j] > 0 ? f->copy_pb[j] : 0, shared, f->ack[j] ? ":ack" : "");
    }
    {
        char both[520];
        snprintf(both, sizeof both, "%s%s%s", f->src_seg, f->src_fwd[0] ? "; COPY_SHARED_PB " : "", f->src_fwd);
        src_line(o, "size_segments", both);
    }
    fprintf(o, "recv_overhead_serial = 1\nrecv_overhead_serial.source = assumed: one thread per rank runs the MPI "
               "library (Open MPI progresses on the calling thread), so receives are taken in turn; the streams "
               "and both-way runs of the check test it\n");
    if (f->poll >= 0) {
        fprintf(o, "poll_cost = %.0f ps\n", f->poll);
        src_line(o, "poll_cost", f->src_poll);
    }
    if (f->reduce_pb >= 0) {
        fprintf(o, "reduce_cost_per_byte = %.0f\n", f->reduce_pb);
        src_line(o, "reduce_cost_per_byte", f->src_reduce);
    }
    if (f->ns_per_mac >= 0) {
        fprintf(o, "\n[shim]\n");
        if (cpu_measured_here) {
            fprintf(o, "cpu_factor = 1\ncpu_factor.source = %s; the profile is of the machine that measured it, "
                       "whose computation is charged as it is\n",
                    f->src_cpu);
        } else {
            fprintf(o, "; %s: runs on another machine need --cpu-factor (that machine's time per multiply-add / this one's)\n",
                    f->src_cpu);
        }
    }
    return ferror(o) ? -1 : 0;
}
