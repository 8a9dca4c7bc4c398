/* `mpisim report FILE.json`: a run report (mpisim-report/1, from `mpisim run` or `mpisim
 * replay`) as the text summary mpiP prints: per-rank App / MPI / MPI%, the call sites that took
 * the most virtual time with their spread across ranks, MPI_Pcontrol regions, and the message
 * sizes per call. All times are virtual. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "exit_codes.h"
#include "nm_cmdline.h"
#include "report_text.h"

static double num(const json_t *obj, const char *key)
{
    return json_number_value(json_object_get(obj, key));   /* 0 when absent or not a number */
}

/* A string of the report as it may be printed to a terminal: control characters (a program path
 * or argument can hold ESC sequences) shown as \xNN, not sent raw. In one of a few rotating
 * buffers: valid until that many more calls. */
static const char *printable(const char *s)
{
    static char pool[8][2048];
    static unsigned next;
    char *b = pool[next++ % 8];
    size_t o = 0;
    for (; s && *s && o + 5 < sizeof pool[0]; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) o += (size_t)snprintf(b + o, sizeof pool[0] - o, "\\x%02x", c);
        else b[o++] = (char)c;
    }
    b[o] = 0;
    return b;
}

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return printable(s ? s : "");
}

static int is_region(const char *call) { return !strcmp(call, "MPI_Pcontrol region"); }

typedef struct call_sum {
    const char *call;
    double calls, bytes, time_ps;
} call_sum;

static int by_bytes(const void *a, const void *b)
{
    const call_sum *x = a, *y = b;
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

int mpisim_report_text(const char *text, size_t len, FILE *out, int top, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root) {
        snprintf(err, errlen, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        return -1;
    }
    if (!json_is_object(root) || strcmp(str(root, "schema"), "mpisim-report/1")) {
        snprintf(err, errlen, "not an mpisim report (schema mpisim-report/1)");
        json_decref(root);
        return -1;
    }
    const json_t *prog = json_object_get(root, "program");
    const json_t *ranks = json_object_get(root, "ranks");
    const json_t *sites = json_object_get(root, "callsites");
    const json_t *summary = json_object_get(root, "summary");

    fputs("@ mpisim report (virtual time)\n@ Command        :", out);
    for (size_t i = 0; i < json_array_size(prog); i++)
        if (json_is_string(json_array_get(prog, i))) fprintf(out, " %s", printable(json_string_value(json_array_get(prog, i))));
    fprintf(out, "\n@ Ranks          : %d\n@ Network        : %s (%s engine)\n", (int)num(root, "nranks"),
            str(root, "topology"), str(root, "engine"));
    if (summary) {
        fprintf(out, "@ Virtual time   : %.6f s\n@ Outcome        : %s\n", num(summary, "virtual_time_ps") * 1e-12,
                str(summary, "outcome"));
        /* what went wrong, or which calls ran untimed: the report's own words */
        if (strcmp(str(summary, "outcome"), "ok") && str(summary, "outcome_text")[0])
            fprintf(out, "@ Outcome text   : %s\n", str(summary, "outcome_text"));
        fprintf(out, "@ Wall time      : %.3f s\n", num(summary, "wall_s"));
    }

    /* per rank: App = the rank's virtual time, MPI = virtual time inside MPI calls */
    double app_sum = 0, mpi_sum = 0;
    fputs("\n---------------------------------------------------------------------------\n"
          "@--- MPI Time (seconds) ----------------------------------------------------\n"
          "---------------------------------------------------------------------------\n"
          "Task    AppTime    MPITime     MPI%   Compute      Calls  Status\n", out);
    size_t nr = json_array_size(ranks);   /* 0 when absent or not an array */
    for (size_t i = 0; i < nr; i++) {
        const json_t *r = json_array_get(ranks, i);
        double app = num(r, "virtual_end_ps") * 1e-12, mpi = num(r, "mpi_ps") * 1e-12;
        app_sum += app;
        mpi_sum += mpi;
        fprintf(out, "%4d %10.6f %10.6f %8.2f %9.6f %10.0f  %s\n", (int)num(r, "rank"), app, mpi,
                app > 0 ? 100.0 * mpi / app : 0.0, num(r, "compute_ps") * 1e-12, num(r, "calls"), str(r, "status"));
    }
    if (nr) fprintf(out, "   * %10.6f %10.6f %8.2f\n", app_sum, mpi_sum, app_sum > 0 ? 100.0 * mpi_sum / app_sum : 0.0);

    /* call sites, most virtual time first (the report is sorted so) */
    size_t ns = json_array_size(sites);
    fputs("\n---------------------------------------------------------------------------\n"
          "@--- Callsites: top by virtual time -------------------------------------\n"
          "---------------------------------------------------------------------------\n"
          "Call                     Calls   Time(ms)  App%   MPI%  Rank min/mean/max (ms)  Site\n", out);
    int shown = 0;
    for (size_t i = 0; i < ns && shown < top; i++) {
        const json_t *s = json_array_get(sites, i);
        if (is_region(str(s, "call"))) continue;
        double t = num(s, "time_ps") * 1e-9, nrk = num(s, "ranks");
        fprintf(out, "%-22s %7.0f %10.4f %5.2f %6.2f  %6.4f/%6.4f/%6.4f  %s\n", str(s, "call"), num(s, "calls"), t,
                app_sum > 0 ? 100.0 * t * 1e-3 / app_sum : 0.0, mpi_sum > 0 ? 100.0 * t * 1e-3 / mpi_sum : 0.0,
                num(s, "rank_min_ps") * 1e-9, nrk > 0 ? t / nrk : 0.0, num(s, "rank_max_ps") * 1e-9, str(s, "site"));
        shown++;
    }

    int regions = 0;
    for (size_t i = 0; i < ns; i++) {
        const json_t *s = json_array_get(sites, i);
        if (!is_region(str(s, "call"))) continue;
        if (!regions++)
            fputs("\n---------------------------------------------------------------------------\n"
                  "@--- MPI_Pcontrol regions (opened at site) -------------------------------\n"
                  "---------------------------------------------------------------------------\n"
                  "Regions   Time(ms)  Rank min/mean/max (ms)  Site\n", out);
        double t = num(s, "time_ps") * 1e-9, nrk = num(s, "ranks");
        fprintf(out, "%7.0f %10.4f  %6.4f/%6.4f/%6.4f  %s\n", num(s, "calls"), t, num(s, "rank_min_ps") * 1e-9,
                nrk > 0 ? t / nrk : 0.0, num(s, "rank_max_ps") * 1e-9, str(s, "site"));
    }

    /* message sizes per MPI function (sum over its sites) */
    call_sum *cs = calloc(ns ? ns : 1, sizeof *cs);
    size_t nc = 0;
    if (!cs) {
        snprintf(err, errlen, "out of memory");
        json_decref(root);
        return -1;
    }
    for (size_t i = 0; i < ns; i++) {
        const json_t *s = json_array_get(sites, i);
        if (num(s, "bytes") <= 0) continue;
        size_t k;
        const char *call = json_string_value(json_object_get(s, "call"));   /* kept: the report's own string */
        if (!call) call = "";
        for (k = 0; k < nc && strcmp(cs[k].call, call); k++) {}
        if (k == nc) cs[nc++].call = call;
        cs[k].calls += num(s, "calls");
        cs[k].bytes += num(s, "bytes");
        cs[k].time_ps += num(s, "time_ps");
    }
    qsort(cs, nc, sizeof *cs, by_bytes);
    double all = 0;
    for (size_t k = 0; k < nc; k++) all += cs[k].bytes;
    fputs("\n---------------------------------------------------------------------------\n"
          "@--- Aggregate message sizes (bytes, sends and receives) -------------------\n"
          "---------------------------------------------------------------------------\n"
          "Call                     Count        Total       Avrg   %Total\n", out);
    for (size_t k = 0; k < nc; k++)
        fprintf(out, "%-22s %7.0f %12.0f %10.1f %8.2f\n", printable(cs[k].call), cs[k].calls, cs[k].bytes,
                cs[k].calls > 0 ? cs[k].bytes / cs[k].calls : 0.0, all > 0 ? 100.0 * cs[k].bytes / all : 0.0);
    free(cs);
    json_decref(root);
    return ferror(out) ? -1 : 0;
}

static const cm_opt report_opts[] = {
    {"top", 't', "N", "how many call sites (default 20)"},
    CM_OPT_HELP,
    CM_OPT_END,
};

#define REPORT_MAX ((size_t)256 << 20)

int mpisim_report_main(int argc, char **argv)
{
    const char *path = NULL;
    int top = 20;
    cm_cmdline c;
    cm_cmdline_init(&c, "mpisim report", report_opts, argc, argv, 0);
    const char *v;
    for (int k; (k = cm_cmdline_next(&c, &v)) != -1;) {
        long n;
        if (k == 't') {
            if (cm_cmdline_long(&c, k, v, 1, 1000000, &n) != 0) return 2;
            top = (int)n;
        } else if (k == 'h') {
            printf("usage: mpisim report [--top N] FILE.json\n"
                   "Prints a run report (mpisim run --report, mpisim replay --report) as mpiP's text\n"
                   "summary: per-rank App/MPI time and MPI%%, the N call sites with the most virtual time\n"
                   "with their least/mean/most over ranks, MPI_Pcontrol regions, and the message sizes per\n"
                   "MPI call. Times are virtual.\n");
            cm_cmdline_print_options(report_opts, stdout);
            return 0;
        } else return 2;
    }
    if (cm_cmdline_operands(&c, 1, 1, "report") < 0) return 2;
    path = argv[cm_cmdline_operand(&c)];
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "mpisim report: cannot read %s: %s\n", path, strerror(errno));
        return MS_EXIT_USAGE;
    }
    /* read with a bound: a report of 4096 ranks is a few MB; /dev/zero or a trace named by mistake
     * must not be read without end */
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            if (cap >= REPORT_MAX) {
                free(text);
                fclose(f);
                fprintf(stderr, "mpisim report: %s: larger than %d MiB: not an mpisim report\n", path,
                        (int)(REPORT_MAX >> 20));
                return MS_EXIT_USAGE;
            }
            cap = cap ? cap * 2 : 1 << 20;
            char *q = realloc(text, cap + 1);
            if (!q) {
                free(text);
                fclose(f);
                fprintf(stderr, "mpisim report: %s: out of memory\n", path);
                return MS_EXIT_NO_MEMORY;   /* README.md "Exit codes" */
            }
            text = q;
        }
        size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
    }
    int rerr = ferror(f);
    fclose(f);
    char err[1024] = "";
    int rc = rerr ? -1 : mpisim_report_text(text, len, stdout, top, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "mpisim report: %s: %s\n", path, rerr ? "read error" : err);
        return MS_EXIT_USAGE;   /* an unreadable input (README.md "Exit codes") */
    }
    return 0;
}
