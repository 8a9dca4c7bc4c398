/* The study programs' command lines: a table of options parsed into the program's variables, with
 * the conventions of common.h (a usage error: rank 0 prints it with the usage line, every rank
 * exits with status 2; -h/--help prints the usage and exits 0). Header only, like common.h, so
 * that each program still builds from its one source file.
 *
 *   const app_opt opts[] = {
 *       {"--iters", APP_OPT_LONG, &iters, .lo = 1, .hi = 100000000L, .error = "--iters needs an integer >= 1"},
 *       {"--sizes", APP_OPT_LIST, &sizes, .lo = 0, .hi = 1L << 30, .error = "bad --sizes '%s'"},
 *   };
 *   app_parse_args(&(app_cli){.prog = "prog", .usage = USAGE, .unknown = "unexpected argument '%s'"},
 *                  opts, APP_NOPTS(opts), argc, argv);
 *
 * An option's error is a format given the option's value (or "" when it has none) as its one
 * argument; without one, the command line's `unknown` format is given the option's name. */
#ifndef MPISIM_APPS_APP_ARGS_H
#define MPISIM_APPS_APP_ARGS_H

#include "common.h"

/* A list of integers given on the command line (app_parse_list), in the order given. */
typedef struct {
    long *v;
    int n;
} app_list;

typedef enum {
    APP_OPT_LONG,     /* value: long *, in [lo, hi], a binary suffix allowed (app_parse_long) */
    APP_OPT_DOUBLE,   /* value: double *, in [dlo, dhi] */
    APP_OPT_LIST,     /* value: app_list *, elements in [lo, hi] appended (replacing the list first: reset) */
    APP_OPT_FLAG,     /* value: int *, set to `set`; takes no argument (value NULL: accepted, ignored) */
    APP_OPT_CHOICE,   /* value: int *, the index of the argument in choices[] (NULL-terminated) */
    APP_OPT_NAMES,    /* value: int[], one flag per name of choices[]: cleared, then those named set
                       * (a comma-separated list: app_parse_names) */
    APP_OPT_CUSTOM,   /* parse(argument, value): 0, or -1 for the option's error */
} app_opt_kind;

typedef struct {
    const char *name;
    app_opt_kind kind;
    void *value;
    long lo, hi;             /* LONG, LIST */
    double dlo, dhi;         /* DOUBLE */
    int set;                 /* FLAG */
    int reset;               /* LIST: the option replaces the list given before */
    int min_n, max_n;        /* LIST: at least, at most this many elements (0: any number) */
    const char *const *choices;                 /* CHOICE, NAMES */
    int (*parse)(const char *arg, void *value); /* CUSTOM (the argument may be NULL: missing) */
    const char *error;       /* usage error for a bad or missing argument, given it as %s */
    int *given;              /* when not NULL, set to 1 when the option is given */
} app_opt;

typedef struct {
    const char *prog, *usage;
    const char *unknown;     /* usage error for an argument no option takes, given it as %s */
    /* when not NULL, the usage error for an argument (other than a flag or -h) that is last on
     * the command line, given it as %s: every option but the flags takes a value */
    const char *missing;
    /* when not NULL, what takes an argument no option does (a positional one): 0, or -1 for
     * `unknown`; it may report its own usage error */
    int (*other)(const char *arg, void *ctx);
    void *ctx;
} app_cli;

#define APP_NOPTS(opts) ((int)(sizeof(opts) / sizeof((opts)[0])))

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static inline void app_bad_option(const app_cli *cli, const app_opt *o, const char *arg)
{
    if (o->error) app_usage_error(cli->prog, cli->usage, o->error, arg ? arg : "");
    app_usage_error(cli->prog, cli->usage, cli->unknown, o->name);
}

/* A comma-separated list of names from names[0..count-1] (each may repeat): sel[k] is 1 for the
 * names listed, 0 for the others. 0, or -1 (empty, or a name not in the list; sel then partly set). */
static inline int app_parse_names(const char *v, const char *const *names, int count, int *sel)
{
    if (v == NULL || *v == '\0')
        return -1;
    for (int k = 0; k < count; k++)
        sel[k] = 0;
    const char *p = v;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int found = -1;
        for (int k = 0; k < count; k++)
            if (strlen(names[k]) == len && strncmp(names[k], p, len) == 0)
                found = k;
        if (found < 0)
            return -1;
        sel[found] = 1;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

/* Option o with its argument v (NULL when none follows): 0, or -1 when v is not a valid one. */
static inline int app_take_option(const app_opt *o, const char *v)
{
    switch (o->kind) {
    case APP_OPT_LONG:
        return app_parse_long(v, o->lo, o->hi, (long *)o->value);
    case APP_OPT_DOUBLE:
        return app_parse_double(v, o->dlo, o->dhi, (double *)o->value);
    case APP_OPT_LIST: {
        app_list *l = (app_list *)o->value;
        if (o->reset) l->n = 0;
        if (app_parse_list(v, o->lo, o->hi, &l->v, &l->n) != 0) return -1;
        return l->n < o->min_n || (o->max_n && l->n > o->max_n) ? -1 : 0;
    }
    case APP_OPT_CHOICE:
        for (int k = 0; v && o->choices[k]; k++)
            if (strcmp(v, o->choices[k]) == 0) {
                *(int *)o->value = k;
                return 0;
            }
        return -1;
    case APP_OPT_NAMES: {
        int count = 0;
        while (o->choices[count])
            count++;
        return app_parse_names(v, o->choices, count, (int *)o->value);
    }
    case APP_OPT_CUSTOM:
        return o->parse(v, o->value);
    case APP_OPT_FLAG:
        break;
    }
    return 0;
}

/* Parse argv[1..argc-1] by the table (every rank the same); a usage error or -h does not return. */
static inline void app_parse_args(const app_cli *cli, const app_opt *opts, int nopts, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) app_help(cli->usage);
        const app_opt *o = NULL;
        for (int k = 0; k < nopts && !o; k++)
            if (strcmp(a, opts[k].name) == 0) o = &opts[k];
        if (o && o->kind == APP_OPT_FLAG) {
            if (o->value) *(int *)o->value = o->set;
            if (o->given) *o->given = 1;
            continue;
        }
        if (!v && cli->missing) app_usage_error(cli->prog, cli->usage, cli->missing, a);
        if (o) {
            if (app_take_option(o, v) != 0) app_bad_option(cli, o, v);
            if (o->given) *o->given = 1;
            i++;
            continue;
        }
        if (cli->other && cli->other(a, cli->ctx) == 0) continue;
        app_usage_error(cli->prog, cli->usage, cli->unknown, a);
    }
}

/* The list, or a copy of the default when none was given (the program frees l->v). */
static inline void app_list_or_default(app_list *l, const long *def, int ndef)
{
    if (l->n > 0) return;
    free(l->v);
    l->v = (long *)app_xmalloc((size_t)ndef * sizeof *def);
    memcpy(l->v, def, (size_t)ndef * sizeof *def);
    l->n = ndef;
}

#endif /* MPISIM_APPS_APP_ARGS_H */
