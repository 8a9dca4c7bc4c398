/* Calibration from microbenchmarks: reading, robust estimates, the piecewise fit, the profile.
 * See calib.h; how the fit maps onto the model: libmpisim/model/README.md ("Piecewise costs by
 * size") and README.md ("Model your own cluster"). */
#define _GNU_SOURCE
#include "calib_internal.h"
#include "cm_grow.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const test_names[CAL_NTESTS] = {"pingpong", "stream",  "bothway", "sendcall", "recvcall",
                                                   "forward",  "empty",   "reduce",  "compute", "coll"};

const char *const cal_coll_kinds[3] = {"allreduce", "bcast", "barrier"};

const char *cal_test_name(cal_test t) { return (unsigned)t < CAL_NTESTS ? test_names[t] : "?"; }
int cal_test_lookup(const char *name)
{
    for (int i = 0; i < CAL_NTESTS; i++)
        if (!strcmp(name, test_names[i])) return i;
    return -1;
}

void cal_set_err(char *err, size_t len, const char *fmt, ...)
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
        for (int j = 0; j < d->s[i].np; j++) free(d->s[i].p[j].v), free(d->s[i].p[j].rd);
        free(d->s[i].p);
    }
    free(d->s);
    free(d->rounds);
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
    return cal_add_sample_round(d, t, mode, window, off_node, origin, bytes, seconds, -1);
}

int cal_set_round(cal_data *d, int k, double start_s, double before_s, double after_s)
{
    if (k < 0 || !(before_s >= 0) || !(after_s >= 0) || !isfinite(before_s) || !isfinite(after_s)) return -1;
    if (k >= d->nrounds) {
        if (cm_grow((void **)&d->rounds, &d->caprounds, (size_t)k + 1, sizeof *d->rounds, 16) < 0) return -1;
        memset(d->rounds + d->nrounds, 0, (size_t)(k + 1 - d->nrounds) * sizeof *d->rounds);
        d->nrounds = k + 1;
    }
    d->rounds[k] = (cal_round){.start_s = start_s, .before_s = before_s, .after_s = after_s, .kept = 1};
    return 0;
}

int cal_add_sample_round(cal_data *d, cal_test t, const char *mode, long window, int off_node, const char *origin,
                         double bytes, double seconds, int round)
{
    if (!(seconds >= 0) || !isfinite(seconds) || !(bytes >= 0)) return -1;
    cal_series *s = cal_find(d, t, mode, off_node);
    if (!s) {
        if (cm_grow((void **)&d->s, &d->caps, (size_t)d->ns + 1, sizeof *d->s, 16) < 0) return -1;
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
        if (cm_grow((void **)&s->p, &s->capp, (size_t)s->np + 1, sizeof *s->p, 32) < 0) return -1;
        p = &s->p[s->np++];
        memset(p, 0, sizeof *p);
        p->bytes = bytes;
    }
    if (cm_grow((void **)&p->v, &p->capv, (size_t)p->nv + 1, sizeof *p->v, 32) < 0 ||
        cm_grow((void **)&p->rd, &p->caprd, (size_t)p->nv + 1, sizeof *p->rd, 32) < 0)
        return -1;
    p->rd[p->nv] = round;
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

/* A benchmark's header line (files may hold several benchmarks): the format of the lines after it
 * into *fmt (calibench's also says whether its ranks shared a host: *node). 1 when l is one. */
static int format_header(cal_data *d, const char *l, fmt_t *fmt, int off_node, int *node)
{
    if (!strncmp(l, "# calibench", 11)) {
        *fmt = F_CALIBENCH;
        d->round_base = d->nrounds;   /* this run's rounds follow the runs read before */
        const char *sh = strstr(l, "same_host=");
        if (sh) {
            d->same_host = atoi(sh + 10);
            if (off_node < 0) *node = d->same_host == 0;
        }
        return 1;
    }
    if (!strncmp(l, "# OSU MPI", 9)) {
        if (strstr(l, "Bi-Directional Bandwidth")) *fmt = F_OSU_BIBW;
        else if (strstr(l, "Bandwidth Test")) *fmt = F_OSU_BW;
        else if (strstr(l, "Latency Test") && !strstr(l, "Multi") && !strstr(l, "Broadcast") &&
                 !strstr(l, "All") && !strstr(l, "Reduce"))
            *fmt = F_OSU_LAT;
        else *fmt = F_IMB_OTHER;   /* another OSU test: not read */
        return 1;
    }
    if (!strncmp(l, "# Benchmarking", 14)) {
        const char *b = l + 14;
        while (*b == ' ') b++;
        *fmt = !strncmp(b, "PingPong", 8) && !isalnum((unsigned char)b[8]) ? F_IMB_PP
              : !strncmp(b, "PingPing", 8) && !isalnum((unsigned char)b[8]) ? F_IMB_PI
                                                                           : F_IMB_OTHER;
        return 1;
    }
    return 0;
}

/* One line of calibench's table (test,mode,bytes,window,batch,samples,values[,rounds]): its
 * samples into d, counted in *values. 0, or -1 with err. */
static int read_calibench_line(cal_data *d, const char *l, const char *name, int lineno, int node, int *values,
                               char *err, size_t errlen)
{
    char test[32], mode[32];
    long bytes, window, batch;
    int ns, off = 0;
    if (sscanf(l, "%31[^,],%31[^,],%ld,%ld,%ld,%d,%n", test, mode, &bytes, &window, &batch, &ns, &off) < 6 ||
        off == 0) {
        cal_set_err(err, errlen, "%s:%d: expected test,mode,bytes,window,batch,samples,values", name, lineno);
        return -1;
    }
    int t = cal_test_lookup(test);
    if (t < 0) {
        cal_set_err(err, errlen, "%s:%d: unknown test '%s'", name, lineno, test);
        return -1;
    }
    static const int MAXV = 4096;
    double v[4096], r[4096];
    char vals[65536];
    const char *comma = strchr(l + off, ',');
    size_t vl = comma ? (size_t)(comma - (l + off)) : strlen(l + off);
    if (vl >= sizeof vals) vl = sizeof vals - 1;
    memcpy(vals, l + off, vl);
    vals[vl] = 0;
    int n = numbers(vals, v, MAXV);
    if (n != ns || has_other_text(vals, n)) {
        cal_set_err(err, errlen, "%s:%d: %d samples announced, %d read", name, lineno, ns, n);
        return -1;
    }
    int nr = comma ? numbers(comma + 1, r, MAXV) : 0;
    if (comma && (nr != n || has_other_text(comma + 1, nr))) {
        cal_set_err(err, errlen, "%s:%d: %d samples but %d rounds (the last column: each sample's round)", name, lineno,
                    n, nr);
        return -1;
    }
    for (int i = 0; i < nr; i++)
        if (r[i] < 0 || r[i] > 10000 || r[i] != floor(r[i])) {
            cal_set_err(err, errlen, "%s:%d: round '%g' of sample %d is not a round number", name, lineno, r[i], i + 1);
            return -1;
        }
    char origin[96];
    snprintf(origin, sizeof origin, "calibench %s", test);
    for (int i = 0; i < n; i++)
        if (cal_add_sample_round(d, (cal_test)t, mode, window, node, origin, (double)bytes, v[i],
                                 comma ? d->round_base + (int)r[i] : -1) == 0)
            (*values)++;
    return 0;
}

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
        if (format_header(d, l, &fmt, off_node, &node)) continue;
        if (l[0] == '#') {
            if (fmt == F_CALIBENCH && !strncmp(l, "# round=", 8)) {
                int k;
                double st, b, a;
                if (sscanf(l, "# round=%d start_s=%lf probe_before_s=%lf probe_after_s=%lf", &k, &st, &b, &a) != 4 ||
                    k < 0 || k > 10000 || cal_set_round(d, d->round_base + k, st, b, a) < 0) {
                    cal_set_err(err, errlen, "%s:%d: expected '# round=K start_s=S probe_before_s=S probe_after_s=S', "
                                "got '%.80s'", name, lineno, l);
                    rc = -1;
                    break;
                }
                continue;
            }
            if (fmt == F_CALIBENCH) {
                const char *e = strstr(l, "elapsed_s=");
                if (e) d->elapsed_s += atof(e + 10);
                if (strstr(l, "check=FAIL")) {
                    cal_set_err(err, errlen, "%s:%d: the benchmark's own check failed (%s)", name, lineno, l);
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
            if (read_calibench_line(d, l, name, lineno, node, &values, err, errlen) < 0) {
                rc = -1;
                break;
            }
            continue;
        }
        double v[8];
        int n = numbers(l, v, 8);
        if (fmt == F_OSU_LAT || fmt == F_OSU_BW || fmt == F_OSU_BIBW) {
            if (n < 2 || v[0] < 0 || v[0] != floor(v[0])) {
                cal_set_err(err, errlen, "%s:%d: expected 'SIZE VALUE' in an OSU table, got '%s'", name, lineno, l);
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
                cal_set_err(err, errlen, "%s:%d: expected '#bytes #repetitions t[usec] Mbytes/sec', got '%s'", name, lineno, l);
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
        cal_set_err(err, errlen, "%s:%d: not a line of a known benchmark's output: '%.80s'", name, lineno, l);
        rc = -1;
        break;
    }
    free(line);
    if (rc == 0 && values == 0) {
        cal_set_err(err, errlen, "%s: no measurements found (calibench, OSU latency/bw/bibw, IMB PingPong/PingPing or "
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
        cal_set_err(err, errlen, "%s: %s", path, strerror(errno));
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
    if (f->unexp >= 0) {
        fprintf(o, "recv_unexpected_overhead = %.0f ps\n", f->unexp);
        src_line(o, "recv_unexpected_overhead", f->src_unexp);
        fprintf(o, "recv_unexpected_overhead_per_byte = %.0f\n", fmax(f->unexp_pb, 0));
        src_line(o, "recv_unexpected_overhead_per_byte", f->src_unexp);
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
    for (int k = 0; k < 3; k++)
        if (f->coll_own[k] >= 0) {
            char key[40];
            snprintf(key, sizeof key, "%s_overhead", cal_coll_kinds[k]);
            fprintf(o, "%s = %.0f ps\n", key, f->coll_own[k]);
            src_line(o, key, f->src_coll[k]);
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
