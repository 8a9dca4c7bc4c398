/* One command-line parser for every subcommand (cm_cmdline.h): getopt_long over a table that
 * also writes the subcommand's --help, so that what is parsed and what is documented cannot part. */
#define _GNU_SOURCE
#include "cm_cmdline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int cm_cmdline_init(cm_cmdline *c, const char *prog, const cm_opt *opts, int argc, char **argv, int stop_at_operand)
{
    memset(c, 0, sizeof *c);
    c->prog = prog;
    c->opts = opts;
    c->argc = argc;
    c->argv = argv;
    size_t n = 0, s = 0;
    if (stop_at_operand) c->so[s++] = '+';
    c->so[s++] = ':';   /* a missing value is reported as such, not as an unknown option */
    for (const cm_opt *o = opts; o->name; o++, n++) {
        if (n == CM_CMDLINE_MAX) return -1;
        c->lo[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
        if (o->key > 0 && o->key < 128) {
            c->so[s++] = (char)o->key;
            if (o->arg) c->so[s++] = ':';
        }
    }
    c->so[s] = '\0';
    optind = 0;   /* glibc: start afresh */
    opterr = 0;   /* the messages are ours */
    return 0;
}

static const cm_opt *opt_of(const cm_opt *opts, int key)
{
    for (const cm_opt *o = opts; o->name; o++)
        if (o->key == key) return o;
    return NULL;
}

/* The long option nearest to a mistyped word ("--rotuing", "--routing=x"), NULL if none is close. */
static const char *suggest(const cm_opt *opts, const char *word)
{
    while (*word == '-') word++;
    char w[128];
    snprintf(w, sizeof w, "%.*s", (int)strcspn(word, "="), word);
    size_t len = strlen(w), bestd = SIZE_MAX;
    const char *best = NULL;
    for (const cm_opt *o = opts; o->name; o++) {
        size_t d = cm_edit_distance(w, o->name);
        if (d < bestd) {
            bestd = d;
            best = o->name;
        }
    }
    /* a typo: two letters off in a short name (a swap counts two), a quarter of a longer one */
    return best && len >= 2 && bestd <= (len < 8 ? 2 : 1 + len / 4) ? best : NULL;
}

int cm_cmdline_next(cm_cmdline *c, const char **val)
{
    int li = -1;
    int k = getopt_long(c->argc, c->argv, c->so, c->lo, &li);
    *val = optarg;
    if (k == -1) return -1;
    if (k == ':') {
        const cm_opt *o = opt_of(c->opts, optopt);
        if (o) fprintf(stderr, "%s: --%s needs a value (%s)\n", c->prog, o->name, o->arg);
        else fprintf(stderr, "%s: %s needs a value\n", c->prog, c->argv[optind - 1]);
        return '?';
    }
    if (k == '?') {
        const char *word = optopt && optopt < 128 ? NULL : c->argv[optind - 1];
        char shortw[3] = {'-', (char)optopt, 0};
        /* a prefix of several options (--rep: --report, --replace-trace) is named as such, with them */
        if (word && !strncmp(word, "--", 2)) {
            size_t len = strcspn(word + 2, "=");
            char list[512] = "";
            size_t off = 0;
            int n = 0, key0 = 0;
            for (const cm_opt *o = c->opts; o->name; o++)
                if (len && !strncmp(o->name, word + 2, len) && off < sizeof list) {
                    if (n && o->key == key0) continue;   /* two names of one option */
                    off += (size_t)snprintf(list + off, sizeof list - off, "%s--%s", n ? ", " : "", o->name);
                    if (!n) key0 = o->key;
                    n++;
                }
            if (n > 1) {
                fprintf(stderr, "%s: option '%.*s' is ambiguous: %s; see %s --help\n", c->prog, (int)(len + 2), word,
                        list, c->prog);
                return '?';
            }
        }
        const char *s = word ? suggest(c->opts, word) : NULL;
        fprintf(stderr, "%s: unknown option '%s'", c->prog, word ? word : shortw);
        if (s) fprintf(stderr, " (did you mean '--%s'?)", s);
        fprintf(stderr, "; see %s --help\n", c->prog);
        return '?';
    }
    return k;
}

int cm_cmdline_operand(const cm_cmdline *c)
{
    (void)c;
    return optind;
}

void cm_cmdline_print_options(const cm_opt *opts, FILE *out)
{
    fputs("Options:\n", out);
    for (const cm_opt *o = opts; o->name; o++) {
        if (!o->help) continue;   /* parsed, to be refused with a reason of its own, not offered */
        char head[96];
        int has_short = o->key > 0 && o->key < 128;
        int n = snprintf(head, sizeof head, "  %c%c%c --%s%s%s", has_short ? '-' : ' ', has_short ? o->key : ' ',
                         has_short ? ',' : ' ', o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if (n < 30) fprintf(out, "%s%*s", head, 30 - n, "");
        else fprintf(out, "%s\n%30s", head, "");   /* a long placeholder: the help on the next line */
        for (const char *h = o->help; *h;) {   /* continuation lines under the help column */
            size_t l = strcspn(h, "\n");
            fprintf(out, "%.*s\n", (int)l, h);
            h += l;
            if (*h == '\n' && *++h) fprintf(out, "%30s", "");
        }
        if (!*o->help) fputc('\n', out);
    }
}

static void blame(const cm_cmdline *c, int key, char *out, size_t len)
{
    const cm_opt *o = opt_of(c->opts, key);
    snprintf(out, len, "--%s", o ? o->name : "?");
}

int cm_cmdline_bad(const cm_cmdline *c, int key, const char *val, const char *fmt, ...)
{
    char who[80], m[512];
    blame(c, key, who, sizeof who);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s '%s': %s\n", c->prog, who, val ? val : "", m);
    return 2;
}

int cm_cmdline_choice(const cm_cmdline *c, int key, cm_registry r, const char *val)
{
    if (cm_registry_find(r, val)) return 0;
    char who[80], m[768];
    blame(c, key, who, sizeof who);
    cm_registry_unknown(r, who, val, m, sizeof m);
    fprintf(stderr, "%s: %s\n", c->prog, m);
    return 2;
}

int cm_cmdline_operands(const cm_cmdline *c, int min, int max, const char *what)
{
    int n = c->argc - optind;
    if (n > max) {
        fprintf(stderr, "%s: unexpected argument '%s' (%s); see %s --help\n", c->prog, c->argv[optind + max],
                max == 0 ? "it takes none" : max == 1 ? "one at a time" : "too many", c->prog);
        return -1;
    }
    if (n < min) {
        fprintf(stderr, "%s: no %s given; see %s --help\n", c->prog, what, c->prog);
        return -1;
    }
    return n;
}

int cm_cmdline_long(const cm_cmdline *c, int key, const char *val, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (!*val || *end || errno || v < lo || v > hi)
        return cm_cmdline_bad(c, key, val, "expected a whole number from %ld to %ld", lo, hi);
    *out = v;
    return 0;
}

int cm_cmdline_double(const cm_cmdline *c, int key, const char *val, double lo, double *out)
{
    char *end;
    double v = strtod(val, &end);
    if (!*val || *end || !(v >= lo) || v > 1e300) return cm_cmdline_bad(c, key, val, "expected a number >= %g", lo);
    *out = v;
    return 0;
}
