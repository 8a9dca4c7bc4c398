/* Loading INI profiles: the reader and its notes, includes and profile names, the search path,
 * one pass over a file, and nm_config_set. */
#define _XOPEN_SOURCE 700
#include "config_internal.h"
#include "cm_grow.h"

#include <ini.h>
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the profiles are, relative to the directory of the running executable: the same in the
 * build tree (build/bin, build/share/mpisim/configs) and in an installed tree, so that no
 * binary names the source checkout. */
#ifndef MPISIM_REL_DATADIR
#define MPISIM_REL_DATADIR "../share/mpisim"
#endif

#define NM_MAX_INCLUDE_DEPTH 16
#define NM_MAX_FILE_BYTES (4u << 20)
/* ---- INI loading ---------------------------------------------------------------------- */

typedef struct nm_reader {
    const char *buf;
    size_t len, pos;
    size_t line_start;   /* offset of the line last handed to inih */
    int line;        /* line number of the chunk last handed to inih */
    int too_long;    /* line number of an over-long line, which stops the parse */
} nm_reader;

/* fgets-style reader over the file in memory, so that the handler knows the line number
 * (Debian's inih is built without INI_HANDLER_LINENO). */
static char *reader_fn(char *str, int num, void *stream)
{
    nm_reader *r = stream;
    if (r->too_long || r->pos >= r->len || num < 2) return NULL;
    size_t n = 0, max = (size_t)num - 1;
    r->line++;
    r->line_start = r->pos;
    while (r->pos < r->len && n < max) {
        char c = r->buf[r->pos++];
        str[n++] = c;
        if (c == '\n') break;
    }
    str[n] = '\0';
    if (n == max && str[n - 1] != '\n' && r->pos < r->len) {
        r->too_long = r->line;
        return NULL;
    }
    return str;
}

/* The comment of the key = value line the reader handed out last (after a ';' or '#' that follows
 * white space), continued by the indented comment-only lines right below it: the value's source
 * as the profile gives it ("cited: ...", "calibrated: ...", "assumed: ..."), white space
 * collapsed. NULL if the line has no comment (or out of memory: a comment is never essential). */
static char *line_note(const nm_reader *r)
{
    const char *b = r->buf, *end = r->buf + r->len;
    const char *p = b + r->line_start, *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    const char *eq = memchr(p, '=', (size_t)(eol - p)), *c = NULL;
    for (const char *q = eq ? eq + 1 : p; q < eol; q++)
        if ((*q == ';' || *q == '#') && cfg_is_space(q[-1])) { c = q + 1; break; }
    if (!c) return NULL;
    size_t cap = 256, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (;;) {
        for (; c < eol; c++) {
            char ch = cfg_is_space(*c) ? ' ' : *c;
            if (ch == ' ' && (n == 0 || out[n - 1] == ' ')) continue;
            if (n + 2 > cap) {
                char *g = realloc(out, cap * 2);
                if (!g) { free(out); return NULL; }
                out = g;
                cap *= 2;
            }
            out[n++] = ch;
        }
        /* the next line continues the comment if it is indented and holds only a comment */
        const char *next = eol < end ? eol + 1 : end;
        if (next >= end || !cfg_is_space(*next) || *next == '\n') break;
        const char *t = next;
        while (t < end && (*t == ' ' || *t == '\t')) t++;
        if (t >= end || (*t != ';' && *t != '#')) break;
        eol = memchr(t, '\n', (size_t)(end - t));
        if (!eol) eol = end;
        c = t + 1;
        if (n && out[n - 1] != ' ') out[n++] = ' ';
    }
    while (n && out[n - 1] == ' ') n--;
    out[n] = '\0';
    if (!n) { free(out); return NULL; }
    return out;
}

typedef struct nm_include { char name[256]; int line; } nm_include;
/* "KEY.source = TEXT": where the value this file gives KEY comes from (a calibration, a paper) */
typedef struct nm_declared { char key[256]; char *text; int line; } nm_declared;

/* How a profile file is named in the origins of its values, which go into every result: a file
 * found in a directory of the search path that is called "configs" (the shipped profiles, in a
 * checkout or an installation) is "configs/NAME.ini", the same on every machine; any other file
 * keeps the name it was given. */
static void origin_name(const char *path, const char *search_path, char *out, size_t len)
{
    snprintf(out, len, "%s", path);
    const char *slash = strrchr(path, '/');
    if (!slash || !search_path) return;
    size_t dlen = (size_t)(slash - path);
    for (const char *p = search_path; *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 1 && p[n - 1] == '/') n--;
        if (n == dlen && !strncmp(p, path, n) && n >= 7 && !strncmp(p + n - 7, "configs", 7) &&
            (n == 7 || p[n - 8] == '/')) {
            snprintf(out, len, "configs%s", slash);
            return;
        }
        if (!end) break;
        p = end + 1;
    }
}

typedef struct nm_load {
    nm_config *cfg;
    const char *path;           /* as named in messages */
    char origin[512];           /* as named in values' origins: machine-independent where it can be */
    const char *search_path;
    char **stack;               /* canonical paths of the files being loaded (cycle check) */
    int depth;
    nm_reader rd;
    int pass;                   /* 1: collect includes; 2: apply keys */
    nm_include *inc;
    int ninc;
    size_t capinc;
    nm_declared *src;
    int nsrc;
    size_t capsrc;
    int err_line;               /* first handler error */
    char msg[1024];
} nm_load;

/* Pass 1: a profile.include line, its profile name kept for loading before this file. */
static int load_include(nm_load *L, int line, const char *value)
{
    char v[512];
    snprintf(v, sizeof v, "%s", value);
    cfg_strip_hash_comment(v);
    if (!*v || strlen(v) >= sizeof L->inc[0].name) {
        L->err_line = line;
        snprintf(L->msg, sizeof L->msg, "key 'profile.include': expected a profile name, got '%s'", v);
        return 0;
    }
    if (cm_grow((void **)&L->inc, &L->capinc, (size_t)L->ninc + 1, sizeof *L->inc, 4) < 0) {
        L->err_line = line;
        snprintf(L->msg, sizeof L->msg, "out of memory");
        return 0;
    }
    if (strlen(v) >= sizeof L->inc[0].name) {
        L->err_line = line;
        snprintf(L->msg, sizeof L->msg, "include: profile name longer than %zu characters",
                 sizeof L->inc[0].name - 1);
        return 0;
    }
    memcpy(L->inc[L->ninc].name, v, strlen(v) + 1);
    L->inc[L->ninc].line = line;
    L->ninc++;
    return 1;
}

/* A KEY.source line (full: "KEY.source", cut to KEY here), or its continuation (cont). */
static int load_source(nm_load *L, int line, const char *name, char *full, const char *value, int cont)
{
    /* applied after the pass, once this file's own value of the key is known */
    full[strlen(full) - 7] = '\0';
    if (!cfg_find(L->cfg, full)) {
        L->err_line = line;
        char hint[300];
        cfg_did_you_mean(L->cfg, full, hint, sizeof hint);
        snprintf(L->msg, sizeof L->msg, "'%s': a source for unknown key '%s'%s", name, full, hint);
        return 0;
    }
    char v[512];
    snprintf(v, sizeof v, "%s", value);
    cfg_strip_hash_comment(v);
    if (cont && L->nsrc > 0 && !strcmp(L->src[L->nsrc - 1].key, full)) {
        /* a continued source: joined after a space */
        nm_declared *d = &L->src[L->nsrc - 1];
        size_t n = strlen(d->text) + strlen(v) + 2;
        char *j = malloc(n);
        if (!j) { L->err_line = line; snprintf(L->msg, sizeof L->msg, "out of memory"); return 0; }
        snprintf(j, n, "%s %s", d->text, v);
        free(d->text);
        d->text = j;
        return 1;
    }
    if (!*v) {
        L->err_line = line;
        snprintf(L->msg, sizeof L->msg, "'%s': expected the source of the value, got nothing", name);
        return 0;
    }
    if (cm_grow((void **)&L->src, &L->capsrc, (size_t)L->nsrc + 1, sizeof *L->src, 8) < 0) {
        L->err_line = line;
        snprintf(L->msg, sizeof L->msg, "out of memory");
        return 0;
    }
    nm_declared *d = &L->src[L->nsrc];
    snprintf(d->key, sizeof d->key, "%s", full);
    d->text = nm_strdup(v);
    d->line = line;
    if (!d->text) { L->err_line = line; snprintf(L->msg, sizeof L->msg, "out of memory"); return 0; }
    L->nsrc++;
    return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    nm_load *L = user;
    if (L->err_line) return 1;  /* keep only the first error */
    int line = L->rd.line;
    int is_include = !strcmp(section, "profile") && !strcmp(name, "include");
    if (L->pass == 1) {
        if (!is_include) return 1;
        return load_include(L, line, value);
    }
    if (is_include) return 1;
    /* an indented line continues the value above it (inih's multi-line values): text values
     * take it after a space, so that long lists stay within a line's length */
    int cont = L->rd.line_start < L->rd.len && (L->rd.buf[L->rd.line_start] == ' ' || L->rd.buf[L->rd.line_start] == '\t');
    char sec[80];
    if (snprintf(sec, sizeof sec, "|%s|", section) < (int)sizeof sec && strstr(L->cfg->skip, sec)) return 1;
    char full[256];
    if (!*section) snprintf(full, sizeof full, "%s", name);
    else snprintf(full, sizeof full, "%s.%s", section, name);
    size_t fl = strlen(full);
    if (fl > 7 && !strcmp(full + fl - 7, ".source") && !cfg_find(L->cfg, full)) {
        return load_source(L, line, name, full, value, cont);
    }
    nm_entry *e = strchr(full, '.') ? cfg_find(L->cfg, full) : NULL;
    if (e && cont) {
        if (e->def->type != NM_KEY_STRING) {
            L->err_line = line;
            snprintf(L->msg, sizeof L->msg, "an indented line continues '%s', which is not a text value", full);
            return 0;
        }
        char v[512];
        snprintf(v, sizeof v, "%s", value);
        cfg_strip_hash_comment(v);
        size_t n = strlen(e->text) + strlen(v) + 2;
        char *joined = malloc(n);
        if (!joined) { L->err_line = line; snprintf(L->msg, sizeof L->msg, "out of memory"); return 0; }
        snprintf(joined, n, "%s%s%s", e->text, *e->text && *v ? " " : "", v);
        char m[420];
        int r = cfg_entry_assign(e, joined, e->origin, m, sizeof m);
        free(joined);
        if (r != 0) {
            L->err_line = line;
            snprintf(L->msg, sizeof L->msg, "key '%s': %s", full, m);
            return 0;
        }
        return 1;
    }
    if (!e) {
        L->err_line = line;
        char hint[300];
        cfg_did_you_mean(L->cfg, full, hint, sizeof hint);
        snprintf(L->msg, sizeof L->msg, "unknown key '%s' in section [%s]%s", name, section, hint);
        return 0;
    }
    char origin[512 + 16], m[420];
    snprintf(origin, sizeof origin, "%s:%d", L->origin, line);
    if (cfg_entry_assign(e, value, origin, m, sizeof m) != 0) {
        L->err_line = line;
        snprintf(L->msg, sizeof L->msg, "key '%s': %s", full, m);
        return 0;
    }
    e->explicit_set = 0;
    free(e->note);
    e->note = line_note(&L->rd);
    return 1;
}

static int run_pass(nm_load *L, int pass, char *err, size_t errlen)
{
    L->pass = pass;
    L->rd.pos = 0;
    L->rd.line = 0;
    L->rd.too_long = 0;
    L->err_line = 0;
    int rc = ini_parse_stream(reader_fn, &L->rd, handler, L);
    /* report the earliest of: an over-long line, a rejected key, an inih syntax error */
    int best = 0, kind = 0;
    if (L->rd.too_long) { best = L->rd.too_long; kind = 1; }
    if (L->err_line && (!best || L->err_line < best)) { best = L->err_line; kind = 2; }
    if (rc > 0 && (!best || rc < best)) { best = rc; kind = 3; }
    if (kind == 1) nm_set_err(err, errlen, "%s:%d: line too long", L->path, best);
    if (kind == 2) nm_set_err(err, errlen, "%s:%d: %s", L->path, best, L->msg);
    if (kind == 3) nm_set_err(err, errlen, "%s:%d: expected '[section]' or 'key = value'", L->path, best);
    if (kind) return -1;
    if (rc < 0) {
        nm_set_err(err, errlen, "%s: cannot parse (inih error %d)", L->path, rc);
        return -1;
    }
    return 0;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int nm_config_search_path(char *out, size_t len)
{
    if (!out || len == 0) return -1;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *dir = ".";
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) { *slash = '\0'; dir = exe[0] ? exe : "/"; }
    }
    char rel[PATH_MAX + 64], real[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/" MPISIM_REL_DATADIR "/configs", dir);
    const char *profiles = realpath(rel, real) ? real : rel;   /* file:line origins read cleanly */
    const char *user = getenv("MPISIM_PROFILE_PATH");
    int w = (user && *user) ? snprintf(out, len, "%s:%s", user, profiles) : snprintf(out, len, "%s", profiles);
#ifdef MPISIM_INSTALL_DATADIR
    /* programs linked with an installed libnetmodel live elsewhere: the install's profiles */
    if (w > 0 && (size_t)w < len) w += snprintf(out + w, len - (size_t)w, ":" MPISIM_INSTALL_DATADIR "/configs");
#endif
    return (w < 0 || (size_t)w >= len) ? -1 : 0;
}

/* search_path, or the default one when NULL/empty (into buf) */
static const char *search_path_or_default(const char *search_path, char *buf, size_t len)
{
    if (search_path && *search_path) return search_path;
    if (nm_config_search_path(buf, len) != 0) snprintf(buf, len, "configs");
    return buf;
}

static int load_file_rec(nm_config *cfg, const char *path, const char *search_path, char **stack,
                         int depth, char *err, size_t errlen);

/* Find profile `name` for an include in `from` (its directory first, then the search path). */
static int resolve_profile(const char *name, const char *from_dir, const char *search_path,
                           char *out, size_t outlen)
{
    size_t nl = strlen(name);
    int has_ext = nl > 4 && !strcmp(name + nl - 4, ".ini");
    if (strchr(name, '/')) {
        if (name[0] == '/' || !from_dir) snprintf(out, outlen, "%s", name);
        else snprintf(out, outlen, "%s/%s", from_dir, name);
        return file_exists(out) ? 0 : -1;
    }
    if (from_dir) {
        snprintf(out, outlen, "%s/%s%s", from_dir, name, has_ext ? "" : ".ini");
        if (file_exists(out)) return 0;
    }
    char spbuf[2 * PATH_MAX];
    const char *p = search_path_or_default(search_path, spbuf, sizeof spbuf);
    while (1) {
        const char *q = strchr(p, ':');
        size_t l = q ? (size_t)(q - p) : strlen(p);
        if (l > 0) {
            int n = snprintf(out, outlen, "%.*s/%s%s", (int)l, p, name, has_ext ? "" : ".ini");
            if (n > 0 && (size_t)n < outlen && file_exists(out)) return 0;
        }
        if (!q) break;
        p = q + 1;
    }
    return -1;
}

static int load_file_rec(nm_config *cfg, const char *path, const char *search_path, char **stack,
                         int depth, char *err, size_t errlen)
{
    char *canon = realpath(path, NULL);
    if (!canon) {
        nm_set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < depth; i++) {
        if (!strcmp(stack[i], canon)) {
            free(canon);
            return 1;  /* cycle: the caller reports it with its file:line */
        }
    }
    if (depth >= NM_MAX_INCLUDE_DEPTH) {
        free(canon);
        nm_set_err(err, errlen, "%s: includes nested deeper than %d", path, NM_MAX_INCLUDE_DEPTH);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        nm_set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        free(canon);
        return -1;
    }
    size_t len = 0;
    char *buf = nm_read_all(f, NM_MAX_FILE_BYTES, &len);
    fclose(f);
    if (!buf) { free(canon); nm_set_err(err, errlen, "out of memory"); return -1; }
    if (len > NM_MAX_FILE_BYTES) {
        free(buf);
        free(canon);
        nm_set_err(err, errlen, "%s:1: file larger than %u bytes", path, NM_MAX_FILE_BYTES);
        return -1;
    }
    int rc = -1;
    nm_load L;
    memset(&L, 0, sizeof L);
    L.cfg = cfg;
    L.path = path;
    origin_name(path, search_path, L.origin, sizeof L.origin);
    L.search_path = search_path;
    L.stack = stack;
    L.depth = depth;
    L.rd.buf = buf;
    L.rd.len = len;
    void *nul = memchr(buf, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *p = buf; p < (const char *)nul; p++) line += *p == '\n';
        nm_set_err(err, errlen, "%s:%d: NUL byte in file", path, line);
        goto out;
    }
    stack[depth] = canon;
    if (run_pass(&L, 1, err, errlen) != 0) goto out;
    /* includes first, so that this file's own keys override them whatever the line order */
    char *dir = nm_strdup(path);
    if (!dir) goto out;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    for (int i = 0; i < L.ninc; i++) {
        char ipath[4096];
        if (resolve_profile(L.inc[i].name, slash ? dir : ".", search_path, ipath, sizeof ipath) != 0) {
            char spbuf[2 * PATH_MAX];
            nm_set_err(err, errlen, "%s:%d: profile '%s' not found (looked beside %s and in '%s')", path,
                    L.inc[i].line, L.inc[i].name, path, search_path_or_default(search_path, spbuf, sizeof spbuf));
            free(dir);
            goto out;
        }
        int r = load_file_rec(cfg, ipath, search_path, stack, depth + 1, err, errlen);
        if (r == 1) {
            nm_set_err(err, errlen, "%s:%d: include cycle: '%s' is already being loaded", path,
                    L.inc[i].line, ipath);
            free(dir);
            goto out;
        }
        if (r != 0) { free(dir); goto out; }
    }
    free(dir);
    if (run_pass(&L, 2, err, errlen) != 0) goto out;
    /* declared sources (KEY.source lines) of values this file sets */
    for (int i = 0; i < L.nsrc; i++) {
        nm_entry *e = cfg_find(cfg, L.src[i].key);
        size_t ol = strlen(L.origin);
        if (!e || strncmp(e->origin, L.origin, ol) || e->origin[ol] != ':') {
            nm_set_err(err, errlen, "%s:%d: a source for '%s', which this file does not set", path, L.src[i].line,
                       L.src[i].key);
            goto out;
        }
        /* the declared source is the value's note, as a comment after it would be */
        char *note = nm_strdup(L.src[i].text);
        if (!note) { nm_set_err(err, errlen, "out of memory"); goto out; }
        free(e->note);
        e->note = note;
    }
    rc = 0;
out:
    stack[depth] = NULL;
    for (int i = 0; i < L.nsrc; i++) free(L.src[i].text);
    free(L.src);
    free(L.inc);
    free(buf);
    free(canon);
    return rc;
}

static int load_top(nm_config *cfg, const char *path, const char *search_path, char *err, size_t errlen)
{
    nm_saved *saved = cfg_snapshot(cfg);
    if (!saved) { nm_set_err(err, errlen, "out of memory"); return -1; }
    char *stack[NM_MAX_INCLUDE_DEPTH + 1] = {0};
    int rc = load_file_rec(cfg, path, search_path, stack, 0, err, errlen);
    if (rc == 1) rc = -1;  /* cannot happen at depth 0 */
    cfg_restore(cfg, saved, cfg->n, rc != 0);
    cfg_derive_keys(cfg);
    return rc;
}

int nm_config_load_file(nm_config *cfg, const char *path, char *err, size_t errlen)
{
    if (!cfg || !path) { nm_set_err(err, errlen, "nm_config_load_file: no file named"); return -1; }
    return load_top(cfg, path, NULL, err, errlen);
}

int nm_config_load_profile(nm_config *cfg, const char *name_or_path, const char *search_path,
                           char *err, size_t errlen)
{
    if (!cfg || !name_or_path || !*name_or_path) {
        nm_set_err(err, errlen, "nm_config_load_profile: no profile named");
        return -1;
    }
    char path[4096];
    if (file_exists(name_or_path)) {
        snprintf(path, sizeof path, "%s", name_or_path);
    } else if (strchr(name_or_path, '/') ||
               resolve_profile(name_or_path, NULL, search_path, path, sizeof path) != 0) {
        char spbuf[2 * PATH_MAX];
        nm_set_err(err, errlen, "profile '%s' not found (searched '%s')", name_or_path,
                search_path_or_default(search_path, spbuf, sizeof spbuf));
        return -1;
    }
    return load_top(cfg, path, search_path, err, errlen);
}

static int config_set(nm_config *cfg, const char *assignment, const char *origin, int explicit_set, char *err,
                      size_t errlen)
{
    if (!origin) origin = "--set";
    if (!cfg || !assignment) { nm_set_err(err, errlen, "%s: nothing to set", origin); return -1; }
    const char *eq = strchr(assignment, '=');
    if (!eq) {
        nm_set_err(err, errlen, "%s: expected key=value, got '%s'", origin, assignment);
        return -1;
    }
    char key[256];
    const char *k0 = assignment, *k1 = eq;
    while (k0 < k1 && cfg_is_space(*k0)) k0++;
    while (k1 > k0 && cfg_is_space(k1[-1])) k1--;
    if ((size_t)(k1 - k0) >= sizeof key) {
        nm_set_err(err, errlen, "%s: key too long", origin);
        return -1;
    }
    memcpy(key, k0, (size_t)(k1 - k0));
    key[k1 - k0] = '\0';
    nm_entry *e = cfg_find(cfg, key);
    if (!e) {
        char hint[300];
        cfg_did_you_mean(cfg, key, hint, sizeof hint);
        nm_set_err(err, errlen, "%s: unknown key '%s'%s", origin, key, hint);
        return -1;
    }
    char m[420];
    if (cfg_entry_assign(e, eq + 1, origin, m, sizeof m) != 0) {
        nm_set_err(err, errlen, "%s: key '%s': %s", origin, key, m);
        return -1;
    }
    e->explicit_set = explicit_set;
    cfg_derive_keys(cfg);
    return 0;
}

int nm_config_set(nm_config *cfg, const char *assignment, const char *origin, char *err, size_t errlen)
{
    return config_set(cfg, assignment, origin, 1, err, errlen);
}

int nm_config_set_as_profile(nm_config *cfg, const char *assignment, const char *origin, char *err, size_t errlen)
{
    return config_set(cfg, assignment, origin, 0, err, errlen);
}
