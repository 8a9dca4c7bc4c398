/* Configuration: typed keys with units, defaults and citations; INI profiles; overrides.
 *
 * Every key keeps its value in force, the value's canonical text (so that a resolved
 * configuration can be written out and read back exactly) and its origin: the default's
 * citation, "file:line", or the origin given to nm_config_set (e.g. "--set"). */
#define _XOPEN_SOURCE 700
#include "nm_internal.h"

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

/* ------------------------------------------------------------------------------------------ */
/* netmodel's own keys. Citations name the seed file and its table or section. */

static const nm_key_def nm_network_keys[] = {
    /* help and choices of these three are filled from the registries (registry_keys below) */
    {"network.engine", NM_KEY_STRING, "", "analytic",
     "mpisim design: built-in fallback; every shipped profile selects myrinet (seed 000 sec. 2)",
     "packet engine", NULL, 0},
    {"network.topology", NM_KEY_STRING, "", "auto", "seed 000 sec 3.1 (one 8x8 crossbar testbed)",
     "topology file or generator ('auto' = auto:<number of hosts needed>)", NULL, 0},
    {"network.routing", NM_KEY_STRING, "", "auto", "mpisim design (a default that cannot deadlock); seed 002 sec 3-4",
     "route computation", NULL, 0},
    {"network.updown_root", NM_KEY_STRING, "", "auto", "seed 002 sec 3 (BFS spanning tree from a root)",
     "root switch of the up*/down* orientation: a switch number, or auto (OpenSM up/down rule: a "
     "switch seeing over 90% of hosts at one hop count; else the switch with the least total "
     "distance to all hosts; lowest number on ties)", NULL, 0},
    {"network.itb_path", NM_KEY_STRING, "", "random", "seed 002 sec 4 (randomly selected among all the feasible paths)",
     "ITB routing's minimal path per host pair: random (uniform among all minimal paths, the paper's) "
     "or fewest_itb (mpisim variant: uniform among the minimal paths with the fewest in-transit "
     "buffers, a legal up*/down* minimal path when one exists)", "random|fewest_itb", 0},
    {"network.itb_detect", NM_KEY_INT, "ps", "275000", "seed 002 sec 5.3 (275 ns, 44 bytes received)",
     "time from the first character of an in-transit packet reaching the NIC to its detection", NULL,
     NM_KEY_NONNEG},
    {"network.itb_dma", NM_KEY_INT, "ps", "200000", "seed 002 sec 5.3 (200 ns, 32 more bytes)",
     "time to program the send DMA that reinjects an in-transit packet", NULL, NM_KEY_NONNEG},
    {"network.itb_pool", NM_KEY_INT, "B", "524288", "seed 002 sec 4 and 5.3 (512KB per NIC)",
     "NIC memory reserved for in-transit packets (whole packets are reserved at detection)", NULL,
     NM_KEY_NONNEG},
    {"network.itb_overflow", NM_KEY_STRING, "", "host", "seed 002 sec 4 and 5.4.3",
     "when the ITB pool is full: host (store in host memory, costing itb_host_cost more) or drop "
     "(discard the packet and count it, relying on retransmission)", "host|drop", 0},
    {"network.itb_host_cost", NM_KEY_INT, "ps", "5000000",
     "mpisim assumption (seed 002 sec 4: host memory 'considerably increasing the overhead')",
     "extra delay before reinjecting an in-transit packet kept in host memory", NULL, NM_KEY_NONNEG},
    {"network.itb_local_queue", NM_KEY_INT, "", "8", "seed 002 sec 4 (dynamic priority of local traffic)",
     "local packets queued at a NIC at which local and in-transit packets have equal priority: with q "
     "queued, a local packet goes after max(1, itb_local_queue - q + 1) in-transit packets in a row",
     NULL, NM_KEY_POSITIVE},
    {"network.route_ties", NM_KEY_STRING, "", "auto", "mpisim design (deterministic routes; Clos spreads)",
     "choice among equal-length next hops: lowest port, or spread by (src+dst) modulo the "
     "number of candidates (uses parallel links and Clos spines); auto: spread on the generators "
     "with parallel paths (clos64, clos, ring:S:K:L with L > 1, gige-tree trunks), else lowest",
     "auto|lowest|spread", 0},
    {"network.seed", NM_KEY_INT, "", "1", "mpisim design (determinism)",
     "seed of any pseudo-random choice in the network model", NULL, 0},
    {"network.link_rate", NM_KEY_DOUBLE, "b/s", "1.28e9", "seed 000 Table 2 (Link Data Rate)",
     "data rate of every link unless the topology says otherwise", NULL, NM_KEY_POSITIVE},
    {"network.host_link_rate", NM_KEY_DOUBLE, "b/s", "0", "0: network.link_rate (seed 000 Table 2)",
     "data rate of the links between hosts and switches (unless the topology says otherwise): the rate at "
     "which a NIC streams a packet into the network; with wormhole routing it paces the packet's whole path "
     "(seed 000 sec 2: the traffic source's speed stands for the host's I/O bus and NIC)", NULL, NM_KEY_NONNEG},
    {"network.link_length", NM_KEY_DOUBLE, "m", "10", "seed 000 Table 2 (Length of Link)",
     "cable length of every link unless the topology says otherwise", NULL, NM_KEY_NONNEG},
    {"network.propagation_velocity", NM_KEY_DOUBLE, "m/s", "1.8e8",
     "seed 000 Table 2 (Propagation Velocity; 0.6 c, sec 3.1)",
     "signal velocity in the cables (also accepts a delay per length, e.g. 4.92 ns/m)", NULL,
     NM_KEY_POSITIVE},
    {"network.switch_delay", NM_KEY_INT, "ps", "0",
     "seed 000 eq. 3 (no switch delay); seed 002 sec 5.3 uses 150 ns",
     "switch routing (fall-through) delay of a packet head, per switch", NULL, NM_KEY_NONNEG},
    {"network.slack_buffer", NM_KEY_INT, "B", "96", "seed 000 Table 2 (Slack Buffer Size)",
     "slack buffer per input port", NULL, NM_KEY_POSITIVE},
    {"network.high_water", NM_KEY_INT, "B", "56", "seed 000 Table 2 (High-water Mark)",
     "slack buffer fill above which STOP is sent", NULL, NM_KEY_NONNEG},
    {"network.low_water", NM_KEY_INT, "B", "40", "seed 000 Table 2 (Low-water Mark)",
     "slack buffer fill below which GO is sent", NULL, NM_KEY_NONNEG},
    {"network.beat_period", NM_KEY_INT, "ps", "1 s", "seed 000 Table 2 (BEAT Time)",
     "period of BEAT characters", NULL, NM_KEY_POSITIVE},
    {"network.timeout", NM_KEY_INT, "ps", "1 s", "seed 000 Table 2 (Timeout Interval)",
     "a packet still in the network this long after injection is dropped (0: never)", NULL,
     NM_KEY_NONNEG},
    {"network.type_bytes", NM_KEY_INT, "B", "4", "seed 000 sec 2; seed 004 Table 3 (Packet type)",
     "packet-type characters per packet", NULL, NM_KEY_NONNEG},
    {"network.crc_bytes", NM_KEY_INT, "B", "1", "seed 000 sec 2; seed 004 Table 3 (CRC-8)",
     "CRC characters per packet", NULL, NM_KEY_NONNEG},
    {"network.gap_bytes", NM_KEY_INT, "B", "1", "seed 000 sec 2 (at least one GAP) and eq. 2",
     "GAP characters after each packet", NULL, NM_KEY_NONNEG},
    {"network.nic_send_cost", NM_KEY_INT, "ps", "0", "seed 000 eq. 3 (no NIC cost)",
     "per-packet processing at the source NIC (serialised per NIC)", NULL, NM_KEY_NONNEG},
    {"network.nic_recv_cost", NM_KEY_INT, "ps", "0", "seed 000 eq. 3 (no NIC cost)",
     "per-packet processing at the destination NIC (serialised per NIC)", NULL, NM_KEY_NONNEG},
    {"network.switch_ports", NM_KEY_INT, "", "8", "seed 000 sec 3.1 (Myricom M2F SW8 8x8 crossbar)",
     "ports of generated crossbars where the generator does not fix it", NULL, NM_KEY_POSITIVE},
    {"profile.description", NM_KEY_STRING, "", "", "mpisim design",
     "what the profile models, with its source", NULL, 0},
};

/* ------------------------------------------------------------------------------------------ */

typedef struct nm_entry {
    const nm_key_def *def;
    int64_t ival;
    double dval;
    char *text;     /* canonical text of the value */
    char *origin;   /* citation, "file:line" or the nm_config_set origin */
    int explicit_set;   /* set by nm_config_set (a user's choice), not by the default or a profile */
    /* a value derived from other keys (derive_keys) is in force instead of the configured one
     * above, which stays: a later change of those keys derives again from it */
    int derived;
    int64_t d_ival;
    char *d_text, *d_origin;
    char *note;     /* a profile value's source as the profile gives it (its comment, or a KEY.source
                     * line: "cited: ...", "calibrated: ...", "assumed: ..."), NULL if none */
} nm_entry;

/* the value in force: the derived one if any */
static int64_t e_ival(const nm_entry *e) { return e->derived ? e->d_ival : e->ival; }
static double e_dval(const nm_entry *e) { return e->derived ? (double)e->d_ival : e->dval; }
static const char *e_text(const nm_entry *e) { return e->derived ? e->d_text : e->text; }
static const char *e_origin(const nm_entry *e) { return e->derived ? e->d_origin : e->origin; }
/* a derived value's source is its derivation (in its origin), not the configured value's note */
static const char *e_note(const nm_entry *e) { return e->derived ? NULL : e->note; }

struct nm_config {
    nm_entry *e;
    size_t n, cap;
    char skip[128];             /* "|a|b|": sections of other layers a profile may hold, not read here */
    nm_key_def *own_defs;       /* netmodel's keys, with the registries' help and choices */
    char *own_text;             /* that help and those choices */
    char lookup_error[160];     /* the first typed lookup of a name never registered (a code defect) */
    nm_progress_fn progress;    /* nm_config_set_progress: an observer of long set-ups, not a key */
    void *progress_user;
};

void nm_config_set_progress(nm_config *cfg, nm_progress_fn progress, void *user)
{
    if (!cfg) return;
    cfg->progress = progress;
    cfg->progress_user = user;
}

nm_progress_fn nm_config_progress(const nm_config *cfg, void **user)
{
    if (user) *user = cfg ? cfg->progress_user : NULL;
    return cfg ? cfg->progress : NULL;
}

/* ---- units ---------------------------------------------------------------------------- */

typedef struct { const char *sym; int exp10; int pow1024; } nm_prefix;
static const nm_prefix si_prefixes[] = {
    {"", 0, 0},   {"p", -12, 0}, {"n", -9, 0}, {"u", -6, 0}, {"\xc2\xb5", -6, 0},
    {"m", -3, 0}, {"c", -2, 0},  {"k", 3, 0},  {"K", 3, 0},  {"M", 6, 0},
    {"G", 9, 0},  {"T", 12, 0},
};
static const nm_prefix iec_prefixes[] = {{"Ki", 0, 1}, {"Mi", 0, 2}, {"Gi", 0, 3}, {"Ti", 0, 4}};

/* A base unit spelling: value in the key's unit = number * prefix * 10^exp10 * mul.
 * `inverse` bases (a delay per length for a velocity) are reciprocated. */
typedef struct { const char *unit; const char *base; int exp10; double mul; int inverse; int iec; } nm_base;
static const nm_base bases[] = {
    {"B", "bytes", 0, 1, 0, 1}, {"B", "byte", 0, 1, 0, 1}, {"B", "B", 0, 1, 0, 1},
    {"ps", "s", 12, 1, 0, 0},
    {"b/s", "bit/s", 0, 1, 0, 0}, {"b/s", "bps", 0, 1, 0, 0}, {"b/s", "b/s", 0, 1, 0, 0},
    {"b/s", "B/s", 0, 8, 0, 0},
    {"m", "m", 0, 1, 0, 0},
    {"m/s", "m/s", 0, 1, 0, 0}, {"m/s", "s/m", 0, 1, 1, 0},
    {"Hz", "Hz", 0, 1, 0, 0},
};

static double pow10i(int e)
{
    /* exact powers of ten up to 1e22; division for negative exponents rounds once */
    static const double p[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (e >= 0) return e <= 22 ? p[e] : pow(10.0, e);
    return e >= -22 ? 1.0 / p[-e] : pow(10.0, e);
}

static double scale10(double x, int e)
{
    /* x * 10^e, dividing for negative e so that e.g. 4.92e-9 is formed with one rounding */
    if (e >= 0) return x * pow10i(e);
    return e >= -22 ? x / pow10i(-e) : x * pow(10.0, e);
}

const char *nm_unit_noun(const char *unit)
{
    if (!unit || !*unit) return "a number";
    if (!strcmp(unit, "B")) return "a byte count";
    if (!strcmp(unit, "ps")) return "a time";
    if (!strcmp(unit, "b/s")) return "a bit rate";
    if (!strcmp(unit, "m")) return "a length";
    if (!strcmp(unit, "m/s")) return "a velocity";
    if (!strcmp(unit, "Hz")) return "a frequency";
    return "a value";
}

/* Scan a decimal number (sign, digits, fraction, exponent) at s; returns its length (0 if
 * none). Hex, inf and nan are refused on purpose: strtod would accept them. */
static size_t scan_number(const char *s, int *is_integer)
{
    size_t i = 0, digits = 0;
    *is_integer = 1;
    if (s[i] == '+' || s[i] == '-') i++;
    while (s[i] >= '0' && s[i] <= '9') { i++; digits++; }
    if (s[i] == '.') {
        *is_integer = 0;
        i++;
        while (s[i] >= '0' && s[i] <= '9') { i++; digits++; }
    }
    if (digits == 0) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (s[j] >= '0' && s[j] <= '9') {
            while (s[j] >= '0' && s[j] <= '9') j++;
            *is_integer = 0;
            i = j;
        }
    }
    return i;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

int nm_parse_quantity(const char *unit, const char *text, double *out)
{
    if (!text || !unit) return -1;
    while (is_space(*text)) text++;
    int is_int;
    size_t nlen = scan_number(text, &is_int);
    if (nlen == 0 || nlen > 64) return -1;
    char num[72];
    memcpy(num, text, nlen);
    num[nlen] = '\0';
    errno = 0;
    double x = strtod(num, NULL);
    if (errno == ERANGE || !isfinite(x)) return -1;
    const char *suf = text + nlen;
    while (is_space(*suf)) suf++;
    size_t slen = strlen(suf);
    while (slen > 0 && is_space(suf[slen - 1])) slen--;
    if (slen == 0) { *out = x; return 0; }
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
        const nm_base *B = &bases[b];
        if (strcmp(B->unit, unit) != 0) continue;
        size_t blen = strlen(B->base);
        if (slen < blen || strncmp(suf + slen - blen, B->base, blen) != 0) continue;
        size_t plen = slen - blen;
        const nm_prefix *P = NULL;
        for (size_t k = 0; k < sizeof si_prefixes / sizeof si_prefixes[0] && !P; k++)
            if (strlen(si_prefixes[k].sym) == plen && !strncmp(suf, si_prefixes[k].sym, plen)) P = &si_prefixes[k];
        for (size_t k = 0; B->iec && k < sizeof iec_prefixes / sizeof iec_prefixes[0] && !P; k++)
            if (strlen(iec_prefixes[k].sym) == plen && !strncmp(suf, iec_prefixes[k].sym, plen)) P = &iec_prefixes[k];
        if (!P) continue;
        double v;
        if (B->inverse) {
            /* delay per metre: velocity = 1 / (x * 10^prefix s/m) */
            double d = scale10(x, P->exp10);
            if (!(d > 0)) return -1;
            v = 1.0 / d;
        } else {
            v = scale10(x, P->exp10 + B->exp10) * B->mul;
            for (int k = 0; k < P->pow1024; k++) v *= 1024.0;
        }
        if (!isfinite(v)) return -1;
        *out = v;
        return 0;
    }
    return -1;
}

/* ---- key table -------------------------------------------------------------------------- */

static nm_entry *find(const nm_config *cfg, const char *name)
{
    if (!cfg || !name) return NULL;
    for (size_t i = 0; i < cfg->n; i++)
        if (!strcmp(cfg->e[i].def->name, name)) return &cfg->e[i];
    return NULL;
}

const char *nm_config_suggest(const nm_config *cfg, const char *name)
{
    if (!cfg || !name) return NULL;
    const char *best = NULL;
    size_t bestd = (size_t)-1, len = strlen(name);
    for (size_t i = 0; i < cfg->n; i++) {
        const char *k = cfg->e[i].def->name;
        size_t d = nm_edit_distance(name, k);
        /* a key named without its section ("link_rate" for "network.link_rate") */
        const char *dot = strrchr(k, '.');
        if (dot && !strchr(name, '.')) {
            size_t d2 = nm_edit_distance(name, dot + 1);
            if (d2 < d) d = d2;
        }
        if (d < bestd) {
            bestd = d;
            best = k;
        }
    }
    /* close enough to be a typo: at most a third of the name's letters wrong */
    return best && bestd > 0 && bestd * 3 <= len ? best : NULL;
}

/* " (did you mean 'x'?)" for an unknown key, or "" */
static void did_you_mean(const nm_config *cfg, const char *name, char *out, size_t len)
{
    const char *s = nm_config_suggest(cfg, name);
    if (s) snprintf(out, len, " (did you mean '%s'?)", s);
    else if (len) out[0] = '\0';
}

/* Remove an inline "  # comment" (inih strips only ';' comments). */
static void strip_hash_comment(char *v)
{
    for (char *p = v; *p; p++) {
        if (*p == '#' && (p == v || is_space(p[-1]))) { *p = '\0'; break; }
    }
    size_t n = strlen(v);
    while (n > 0 && is_space(v[n - 1])) v[--n] = '\0';
}

static int choice_ok(const char *choices, const char *v)
{
    size_t vl = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *q = strchr(p, '|');
        size_t l = q ? (size_t)(q - p) : strlen(p);
        if (l == vl && !strncmp(p, v, l)) return 1;
        if (!q) break;
        p = q + 1;
    }
    return 0;
}

/* A numeric key's range "MIN..MAX" (its `choices`; an empty side is unbounded): 1 if it has one. */
static int numeric_range(const nm_key_def *def, double *lo, double *hi)
{
    if (def->type == NM_KEY_STRING || !def->choices || !*def->choices) return 0;
    const char *dots = strstr(def->choices, "..");
    if (!dots) return 0;
    char *end;
    *lo = dots == def->choices ? -HUGE_VAL : strtod(def->choices, &end);
    *hi = dots[2] ? strtod(dots + 2, &end) : HUGE_VAL;
    return 1;
}

static int parse_value_in(const nm_key_def *def, char *buf, int64_t *ival, double *dval, char **text, char *msg,
                          size_t msglen);
/* Parse `raw` for def into (ival, dval, text). On error writes "expected ..., got '...'". */
static int parse_value(const nm_key_def *def, const char *raw, int64_t *ival, double *dval,
                       char **text, char *msg, size_t msglen)
{
    /* text values may be long (continued lines): a copy of the whole of it */
    char *buf = nm_strdup(raw ? raw : "");
    if (!buf) { nm_set_err(msg, msglen, "out of memory"); return -1; }
    int rc = parse_value_in(def, buf, ival, dval, text, msg, msglen);
    free(buf);
    return rc;
}

static int parse_value_in(const nm_key_def *def, char *buf, int64_t *ival, double *dval, char **text, char *msg,
                          size_t msglen)
{
    strip_hash_comment(buf);
    char *v = buf;
    while (is_space(*v)) v++;
    char canon[64];
    if (def->type == NM_KEY_STRING) {
        if (def->choices && !choice_ok(def->choices, v)) {
            /* the nearest choice, as for key names: a third of the letters off at most */
            char best[64] = "";
            size_t bestd = (size_t)-1, vl = strlen(v);
            for (const char *c = def->choices; *c;) {
                size_t l = strcspn(c, "|");
                char w[64];
                snprintf(w, sizeof w, "%.*s", (int)l, c);
                size_t d = nm_edit_distance(v, w);
                if (d < bestd) { bestd = d; snprintf(best, sizeof best, "%s", w); }
                c += l + (c[l] == '|');
            }
            int close = bestd > 0 && bestd * 3 <= vl;
            nm_set_err(msg, msglen, "expected one of %s, got '%s'%s%s%s", def->choices, v,
                       close ? " (did you mean '" : "", close ? best : "", close ? "'?)" : "");
            return -1;
        }
        char *t = nm_strdup(v);
        if (!t) { nm_set_err(msg, msglen, "out of memory"); return -1; }
        *text = t;
        *ival = 0;
        *dval = 0;
        return 0;
    }
    double x;
    int is_int;
    size_t nlen = scan_number(v, &is_int);
    int64_t iv = 0;
    const char *rest = v + nlen;
    while (is_space(*rest)) rest++;
    int exact_int = 0;
    if (def->type == NM_KEY_INT && nlen > 0 && is_int && *rest == '\0') {
        /* bare integer: exact through strtoll (seeds may exceed 2^53) */
        errno = 0;
        long long ll = strtoll(v, NULL, 10);
        if (errno == ERANGE) goto bad;
        iv = ll;
        x = (double)ll;
        exact_int = 1;
    } else if (nm_parse_quantity(def->unit, v, &x) != 0) {
        goto bad;
    }
    if (def->type == NM_KEY_INT && !exact_int) {
        if (!(fabs(x) < 9.2e18)) goto bad;
        double r = nearbyint(x);
        /* times round to the picosecond; counts must be whole (tolerating decimal noise) */
        if (strcmp(def->unit, "ps") != 0 && fabs(x - r) > 1e-9 * fmax(1.0, fabs(x))) goto bad;
        iv = (int64_t)r;
    }
    if (def->type == NM_KEY_INT) x = (double)iv;
    if ((def->flags & NM_KEY_POSITIVE) && !(x > 0)) {
        nm_set_err(msg, msglen, "expected %s greater than 0, got '%s'", nm_unit_noun(def->unit), v);
        return -1;
    }
    if ((def->flags & NM_KEY_NONNEG) && !(x >= 0)) {
        nm_set_err(msg, msglen, "expected %s not below 0, got '%s'", nm_unit_noun(def->unit), v);
        return -1;
    }
    double lo, hi;
    if (numeric_range(def, &lo, &hi) && !(x >= lo && x <= hi)) {
        nm_set_err(msg, msglen, "expected %s from %g to %g%s%s, got '%s'", nm_unit_noun(def->unit), lo, hi,
                   *def->unit ? " " : "", def->unit, v);
        return -1;
    }
    if (def->type == NM_KEY_INT) snprintf(canon, sizeof canon, "%lld", (long long)iv);
    else snprintf(canon, sizeof canon, "%.17g", x);
    /* shortest text that reads back to the same double, for readable output */
    if (def->type == NM_KEY_DOUBLE) {
        for (int prec = 1; prec <= 17; prec++) {
            char t[64];
            snprintf(t, sizeof t, "%.*g", prec, x);
            if (strtod(t, NULL) == x) { memcpy(canon, t, strlen(t) + 1); break; }
        }
    }
    *text = nm_strdup(canon);
    if (!*text) { nm_set_err(msg, msglen, "out of memory"); return -1; }
    *ival = iv;
    *dval = x;
    return 0;
bad:
    nm_set_err(msg, msglen, "expected %s, got '%s'",
            def->type == NM_KEY_INT && !*def->unit ? "an integer" : nm_unit_noun(def->unit), v);
    return -1;
}

static int entry_assign(nm_entry *e, const char *raw, const char *origin, char *msg, size_t msglen)
{
    int64_t iv;
    double dv;
    char *text = NULL;
    if (parse_value(e->def, raw, &iv, &dv, &text, msg, msglen) != 0) return -1;
    char *o = nm_strdup(origin ? origin : "");
    if (!o) { free(text); nm_set_err(msg, msglen, "out of memory"); return -1; }
    free(e->text);
    free(e->origin);
    free(e->note);
    e->text = text;
    e->origin = o;
    e->note = NULL;   /* a value set anew has no comment until its loader gives one */
    e->ival = iv;
    e->dval = dv;
    return 0;
}

int nm_config_register(nm_config *cfg, const nm_key_def *defs, size_t count, char *err, size_t errlen)
{
    if (!cfg || (!defs && count)) { nm_set_err(err, errlen, "nm_config_register: null argument"); return -1; }
    size_t start = cfg->n;
    for (size_t i = 0; i < count; i++) {
        const nm_key_def *d = &defs[i];
        const char *dot = d->name ? strchr(d->name, '.') : NULL;
        if (!dot || dot == d->name || !dot[1] || !d->unit || !d->default_value) {
            nm_set_err(err, errlen, "key '%s': name must be 'section.key' with unit and default",
                    d->name ? d->name : "(null)");
            goto fail;
        }
        if (find(cfg, d->name)) {
            nm_set_err(err, errlen, "key '%s' registered twice", d->name);
            goto fail;
        }
        double lo, hi;
        if (d->type != NM_KEY_STRING && d->choices && (!numeric_range(d, &lo, &hi) || !(lo <= hi))) {
            nm_set_err(err, errlen, "key '%s': range '%s' is not MIN..MAX", d->name, d->choices);
            goto fail;
        }
        if (cfg->n == cfg->cap) {
            size_t nc = cfg->cap ? cfg->cap * 2 : 32;
            nm_entry *ne = realloc(cfg->e, nc * sizeof *ne);
            if (!ne) { nm_set_err(err, errlen, "out of memory"); goto fail; }
            cfg->e = ne;
            cfg->cap = nc;
        }
        nm_entry *e = &cfg->e[cfg->n];
        memset(e, 0, sizeof *e);
        e->def = d;
        char msg[400];
        if (entry_assign(e, d->default_value, d->source ? d->source : "default", msg, sizeof msg) != 0) {
            nm_set_err(err, errlen, "key '%s': bad default: %s", d->name, msg);
            goto fail;
        }
        cfg->n++;
    }
    return 0;
fail:
    while (cfg->n > start) {
        cfg->n--;
        free(cfg->e[cfg->n].text);
        free(cfg->e[cfg->n].origin);
        free(cfg->e[cfg->n].note);
    }
    return -1;
}

int nm_config_skip_sections(nm_config *cfg, const char *sections)
{
    if (!cfg || !sections || strlen(sections) + 3 > sizeof cfg->skip) return -1;
    snprintf(cfg->skip, sizeof cfg->skip, "|%s|", sections);
    return 0;
}

/* A copy of netmodel's keys in which network.engine, network.routing and network.topology take
 * their help ("NAME (HELP), ...") and choices from the registries, so that neither can go stale. */
static int registry_keys(nm_config *cfg)
{
    static const struct { const char *key; nm_registry r; int choices; } regs[] = {
        {"network.engine", nm_engine_at, 1},
        {"network.routing", nm_routing_at, 1},
        {"network.topology", nm_topology_generator_at, 0},   /* a file path is allowed too */
    };
    size_t nk = sizeof nm_network_keys / sizeof nm_network_keys[0], cap = 8192, used = 0;
    cfg->own_defs = malloc(sizeof nm_network_keys);
    cfg->own_text = malloc(cap);
    if (!cfg->own_defs || !cfg->own_text) return -1;
    memcpy(cfg->own_defs, nm_network_keys, sizeof nm_network_keys);
    for (size_t k = 0; k < nk; k++) {
        nm_key_def *d = &cfg->own_defs[k];
        for (size_t j = 0; j < sizeof regs / sizeof regs[0]; j++) {
            if (strcmp(d->name, regs[j].key)) continue;
            char *help = cfg->own_text + used;
            int w = snprintf(help, cap - used, "%s: ", d->help);
            const nm_named *e;
            for (size_t i = 0; w >= 0 && (size_t)w < cap - used && (e = regs[j].r(i)) != NULL; i++) {
                int x = snprintf(help + w, cap - used - (size_t)w, "%s%s (%s)", i ? "; " : "", e->usage, e->help);
                w = x < 0 ? -1 : w + x;
            }
            if (w < 0 || (size_t)w + 1 >= cap - used) return -1;
            used += (size_t)w + 1;
            d->help = help;
            if (regs[j].choices) {
                char *ch = cfg->own_text + used;
                int c = nm_registry_names(regs[j].r, "|", 0, ch, cap - used);
                if (c < 0 || (size_t)c + 1 >= cap - used) return -1;
                used += (size_t)c + 1;
                d->choices = ch;
            }
        }
    }
    return 0;
}

nm_config *nm_config_create(void)
{
    nm_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) return NULL;
    char err[256];
    if (registry_keys(cfg) != 0 ||
        nm_config_register(cfg, cfg->own_defs, sizeof nm_network_keys / sizeof nm_network_keys[0], err,
                           sizeof err) != 0) {
        nm_config_destroy(cfg);
        return NULL;
    }
    /* engine keys belong in every configuration, so that profiles and --set can name them; each
     * engine registers its own (network.c knows which engines are built in) */
    if (nm_engine_register_keys(cfg, err, sizeof err) != 0) {
        nm_config_destroy(cfg);
        return NULL;
    }
    return cfg;
}

void nm_config_destroy(nm_config *cfg)
{
    if (!cfg) return;
    for (size_t i = 0; i < cfg->n; i++) {
        free(cfg->e[i].text);
        free(cfg->e[i].origin);
        free(cfg->e[i].d_text);
        free(cfg->e[i].d_origin);
        free(cfg->e[i].note);
    }
    free(cfg->e);
    free(cfg->own_defs);
    free(cfg->own_text);
    free(cfg);
}

/* ---- values derived from others --------------------------------------------------------- */

static void clear_derived(nm_entry *e)
{
    free(e->d_text);
    free(e->d_origin);
    e->d_text = e->d_origin = NULL;
    e->derived = 0;
}

/* network.slack_buffer of the myrinet engine. The bytes above the high water mark must hold what
 * still arrives during a STOP's round trip (nm_myrinet_stop_chars: the characters in flight on
 * the cable both ways at the link rate, plus the receiver's and sender's reaction), and Myrinet
 * sizes its slack from that round trip (seed 000 sec 2; seed 002 sec 5.3: 80 B = 56 B high water
 * + 24 B for 10 m at 6.25 ns per flit). A slack buffer that comes from the default or a profile and
 * cannot hold it on the configured links (a user raised network.link_rate, lengthened the cables,
 * or raised the water marks) is raised to high_water + the round trip; one set by nm_config_set
 * (--set) is the user's and stays, and the engine reports an overflow naming it. A slack buffer that holds the round trip is never changed, so every profile runs exactly
 * as written. Raising it changes no timing: its size only decides whether an arriving character
 * overflows (the water marks decide STOP and GO). The water marks are not derived: below the
 * round trip a low water mark costs throughput (the buffer runs dry before GO takes effect), not
 * correctness, and seed 000 sec 3.3 varies them independently of the link rate. Links a topology
 * file gives their own rate or length are checked by the engine as it runs. */
static void derive_slack(nm_config *cfg)
{
    nm_entry *s = find(cfg, "network.slack_buffer");
    const nm_entry *eng = find(cfg, "network.engine"), *hw = find(cfg, "network.high_water");
    const nm_entry *rate = find(cfg, "network.link_rate"), *hrate = find(cfg, "network.host_link_rate");
    const nm_entry *len = find(cfg, "network.link_length"), *vel = find(cfg, "network.propagation_velocity");
    if (!s) return;
    clear_derived(s);
    if (!eng || !hw || !rate || !len || !vel || strcmp(e_text(eng), "myrinet") || s->explicit_set) return;
    double rates[2] = {e_dval(rate), hrate ? e_dval(hrate) : 0};
    int32_t need = 0;
    nm_link worst = {0};
    for (int i = 0; i < 2; i++) {
        if (!(rates[i] > 0) || !(e_dval(vel) > 0) || !(e_dval(len) >= 0) || !isfinite(rates[i]) ||
            8e12 / rates[i] > 9e18 || e_dval(len) / e_dval(vel) * 1e12 > 9e18)
            continue;   /* out of range: the topology refuses the link */
        nm_link l = {0};
        l.rate_bps = rates[i];
        l.length_m = e_dval(len);
        l.velocity_mps = e_dval(vel);
        nm_link_derive(&l);
        int32_t r = nm_myrinet_stop_chars(l.char_ps, l.prop_ps);
        if (r > need) {
            need = r;
            worst = l;
        }
    }
    int64_t want = e_ival(hw) + need;
    if (!need || want <= s->ival || want > INT32_MAX) return;
    char text[32], origin[512];
    snprintf(text, sizeof text, "%lld", (long long)want);
    snprintf(origin, sizeof origin,
             "derived: network.high_water %lld B + %d B arriving during a STOP's round trip on %g m links at %g Gb/s "
             "(2 x %.1f ns propagation / %.4f ns per character, + 3); %s gave %lld B",
             (long long)e_ival(hw), (int)need, worst.length_m, worst.rate_bps * 1e-9, (double)worst.prop_ps * 1e-3,
             (double)worst.char_ps * 1e-3, s->origin, (long long)s->ival);
    s->d_text = nm_strdup(text);
    s->d_origin = nm_strdup(origin);
    if (!s->d_text || !s->d_origin) {
        clear_derived(s);   /* out of memory: the configured value stays, and the engine says if it overflows */
        return;
    }
    s->d_ival = want;
    s->derived = 1;
}

static void derive_keys(nm_config *cfg) { derive_slack(cfg); }

/* ---- snapshots (a failed load leaves the configuration as it was) ------------------------ */

typedef struct { int64_t ival; double dval; char *text, *origin, *note; int explicit_set; } nm_saved;

static nm_saved *snapshot(const nm_config *cfg)
{
    nm_saved *s = calloc(cfg->n ? cfg->n : 1, sizeof *s);
    if (!s) return NULL;
    for (size_t i = 0; i < cfg->n; i++) {
        s[i].ival = cfg->e[i].ival;
        s[i].dval = cfg->e[i].dval;
        s[i].explicit_set = cfg->e[i].explicit_set;
        s[i].text = nm_strdup(cfg->e[i].text);
        s[i].origin = nm_strdup(cfg->e[i].origin);
        s[i].note = cfg->e[i].note ? nm_strdup(cfg->e[i].note) : NULL;
        if (!s[i].text || !s[i].origin || (cfg->e[i].note && !s[i].note)) {
            for (size_t j = 0; j <= i; j++) { free(s[j].text); free(s[j].origin); free(s[j].note); }
            free(s);
            return NULL;
        }
    }
    return s;
}

static void restore(nm_config *cfg, nm_saved *s, size_t n, int apply)
{
    for (size_t i = 0; i < n; i++) {
        if (apply) {
            free(cfg->e[i].text);
            free(cfg->e[i].origin);
            free(cfg->e[i].note);
            cfg->e[i].text = s[i].text;
            cfg->e[i].origin = s[i].origin;
            cfg->e[i].note = s[i].note;
            cfg->e[i].ival = s[i].ival;
            cfg->e[i].dval = s[i].dval;
            cfg->e[i].explicit_set = s[i].explicit_set;
        } else {
            free(s[i].text);
            free(s[i].origin);
            free(s[i].note);
        }
    }
    free(s);
}

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
        if ((*q == ';' || *q == '#') && is_space(q[-1])) { c = q + 1; break; }
    if (!c) return NULL;
    size_t cap = 256, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (;;) {
        for (; c < eol; c++) {
            char ch = is_space(*c) ? ' ' : *c;
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
        if (next >= end || !is_space(*next) || *next == '\n') break;
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
    int ninc, capinc;
    nm_declared *src;
    int nsrc, capsrc;
    int err_line;               /* first handler error */
    char msg[1024];
} nm_load;

static int handler(void *user, const char *section, const char *name, const char *value)
{
    nm_load *L = user;
    if (L->err_line) return 1;  /* keep only the first error */
    int line = L->rd.line;
    int is_include = !strcmp(section, "profile") && !strcmp(name, "include");
    if (L->pass == 1) {
        if (!is_include) return 1;
        char v[512];
        snprintf(v, sizeof v, "%s", value);
        strip_hash_comment(v);
        if (!*v || strlen(v) >= sizeof L->inc[0].name) {
            L->err_line = line;
            snprintf(L->msg, sizeof L->msg, "key 'profile.include': expected a profile name, got '%s'", v);
            return 0;
        }
        if (L->ninc == L->capinc) {
            int nc = L->capinc ? 2 * L->capinc : 4;
            nm_include *ni = realloc(L->inc, (size_t)nc * sizeof *ni);
            if (!ni) { L->err_line = line; snprintf(L->msg, sizeof L->msg, "out of memory"); return 0; }
            L->inc = ni;
            L->capinc = nc;
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
    if (fl > 7 && !strcmp(full + fl - 7, ".source") && !find(L->cfg, full)) {
        /* applied after the pass, once this file's own value of the key is known */
        full[fl - 7] = '\0';
        if (!find(L->cfg, full)) {
            L->err_line = line;
            char hint[300];
            did_you_mean(L->cfg, full, hint, sizeof hint);
            snprintf(L->msg, sizeof L->msg, "'%s': a source for unknown key '%s'%s", name, full, hint);
            return 0;
        }
        char v[512];
        snprintf(v, sizeof v, "%s", value);
        strip_hash_comment(v);
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
        if (L->nsrc == L->capsrc) {
            int nc = L->capsrc ? 2 * L->capsrc : 8;
            nm_declared *nd = realloc(L->src, (size_t)nc * sizeof *nd);
            if (!nd) { L->err_line = line; snprintf(L->msg, sizeof L->msg, "out of memory"); return 0; }
            L->src = nd;
            L->capsrc = nc;
        }
        nm_declared *d = &L->src[L->nsrc];
        snprintf(d->key, sizeof d->key, "%s", full);
        d->text = nm_strdup(v);
        d->line = line;
        if (!d->text) { L->err_line = line; snprintf(L->msg, sizeof L->msg, "out of memory"); return 0; }
        L->nsrc++;
        return 1;
    }
    nm_entry *e = strchr(full, '.') ? find(L->cfg, full) : NULL;
    if (e && cont) {
        if (e->def->type != NM_KEY_STRING) {
            L->err_line = line;
            snprintf(L->msg, sizeof L->msg, "an indented line continues '%s', which is not a text value", full);
            return 0;
        }
        char v[512];
        snprintf(v, sizeof v, "%s", value);
        strip_hash_comment(v);
        size_t n = strlen(e->text) + strlen(v) + 2;
        char *joined = malloc(n);
        if (!joined) { L->err_line = line; snprintf(L->msg, sizeof L->msg, "out of memory"); return 0; }
        snprintf(joined, n, "%s%s%s", e->text, *e->text && *v ? " " : "", v);
        char m[420];
        int r = entry_assign(e, joined, e->origin, m, sizeof m);
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
        did_you_mean(L->cfg, full, hint, sizeof hint);
        snprintf(L->msg, sizeof L->msg, "unknown key '%s' in section [%s]%s", name, section, hint);
        return 0;
    }
    char origin[512 + 16], m[420];
    snprintf(origin, sizeof origin, "%s:%d", L->origin, line);
    if (entry_assign(e, value, origin, m, sizeof m) != 0) {
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
        nm_entry *e = find(cfg, L.src[i].key);
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
    nm_saved *saved = snapshot(cfg);
    if (!saved) { nm_set_err(err, errlen, "out of memory"); return -1; }
    char *stack[NM_MAX_INCLUDE_DEPTH + 1] = {0};
    int rc = load_file_rec(cfg, path, search_path, stack, 0, err, errlen);
    if (rc == 1) rc = -1;  /* cannot happen at depth 0 */
    restore(cfg, saved, cfg->n, rc != 0);
    derive_keys(cfg);
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
    while (k0 < k1 && is_space(*k0)) k0++;
    while (k1 > k0 && is_space(k1[-1])) k1--;
    if ((size_t)(k1 - k0) >= sizeof key) {
        nm_set_err(err, errlen, "%s: key too long", origin);
        return -1;
    }
    memcpy(key, k0, (size_t)(k1 - k0));
    key[k1 - k0] = '\0';
    nm_entry *e = find(cfg, key);
    if (!e) {
        char hint[300];
        did_you_mean(cfg, key, hint, sizeof hint);
        nm_set_err(err, errlen, "%s: unknown key '%s'%s", origin, key, hint);
        return -1;
    }
    char m[420];
    if (entry_assign(e, eq + 1, origin, m, sizeof m) != 0) {
        nm_set_err(err, errlen, "%s: key '%s': %s", origin, key, m);
        return -1;
    }
    e->explicit_set = explicit_set;
    derive_keys(cfg);
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

/* ---- lookups ---------------------------------------------------------------------------- */

/* A typed lookup of a name never registered: a defect in the calling code. Debug builds stop at
 * it; release builds keep the first such name for nm_config_lookup_error (the config is always
 * allocated by nm_config_create, so writing through the cast is defined). */
static const nm_entry *find_typed(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find(cfg, name);
    if (!e && cfg) {
        nm_config *w = (nm_config *)cfg;
        if (!w->lookup_error[0])
            snprintf(w->lookup_error, sizeof w->lookup_error, "lookup of unregistered configuration key '%s'",
                     name ? name : "(null)");
#ifndef NM_CONFIG_LOOKUP_NO_ASSERT
        assert(!"nm_config lookup of a key that was never registered");
#endif
    }
    return e;
}

const char *nm_config_lookup_error(const nm_config *cfg)
{
    return cfg && cfg->lookup_error[0] ? cfg->lookup_error : NULL;
}

int64_t nm_config_int(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find_typed(cfg, name);
    if (!e) return 0;
    if (e->def->type == NM_KEY_DOUBLE) return (int64_t)llround(e_dval(e));
    return e_ival(e);
}

double nm_config_double(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find_typed(cfg, name);
    if (!e) return 0.0;
    return e->def->type == NM_KEY_INT ? (double)e_ival(e) : e_dval(e);
}

const char *nm_config_string(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find_typed(cfg, name);
    return e ? e_text(e) : "";
}

int nm_config_has(const nm_config *cfg, const char *name) { return find(cfg, name) != NULL; }
size_t nm_config_count(const nm_config *cfg) { return cfg ? cfg->n : 0; }
const char *nm_config_key_at(const nm_config *cfg, size_t i)
{
    return (cfg && i < cfg->n) ? cfg->e[i].def->name : NULL;
}
const char *nm_config_value_text(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find(cfg, name);
    return e ? e_text(e) : NULL;
}
const char *nm_config_unit(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find(cfg, name);
    return e ? e->def->unit : NULL;
}
const char *nm_config_origin(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find(cfg, name);
    return e ? e_origin(e) : NULL;
}
const char *nm_config_note(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find(cfg, name);
    return e ? e_note(e) : NULL;
}

/* The kind a note declares by its first word (DESIGN.md, "Calibration and prediction"). */
static const char *note_kind(const char *note)
{
    static const char *const kinds[] = {"cited", "calibrated", "assumed"};
    if (!note) return "";
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t l = strlen(kinds[i]);
        if (!strncmp(note, kinds[i], l) && note[l] == ':') return kinds[i];
    }
    return "";
}
const char *nm_config_kind(const nm_config *cfg, const char *name)
{
    const nm_entry *e = find(cfg, name);
    return e ? note_kind(e_note(e)) : NULL;
}

/* ---- output ---------------------------------------------------------------------------- */

/* The inside of a JSON string literal (escapes; invalid UTF-8 bytes become U+FFFD so the output
 * stays valid). */
static void write_json_inner(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') { fputc('\\', out); fputc((int)c, out); p++; }
        else if (c < 0x20) { fprintf(out, "\\u%04x", c); p++; }
        else if (c < 0x80) { fputc((int)c, out); p++; }
        else {
            int n = (c >= 0xc2 && c <= 0xdf) ? 1 : (c >= 0xe0 && c <= 0xef) ? 2 : (c >= 0xf0 && c <= 0xf4) ? 3 : -1;
            int ok = n > 0;
            for (int k = 1; ok && k <= n; k++) ok = (p[k] & 0xc0) == 0x80;
            if (ok && n == 2 && c == 0xe0 && p[1] < 0xa0) ok = 0;   /* overlong */
            if (ok && n == 2 && c == 0xed && p[1] >= 0xa0) ok = 0;  /* surrogates */
            if (ok && n == 3 && c == 0xf0 && p[1] < 0x90) ok = 0;
            if (ok && n == 3 && c == 0xf4 && p[1] >= 0x90) ok = 0;
            if (ok) { fwrite(p, 1, (size_t)n + 1, out); p += n + 1; }
            else { fputs("\\ufffd", out); p++; }
        }
    }
}

void nm_json_write_string(FILE *out, const char *s)
{
    fputc('"', out);
    write_json_inner(out, s);
    fputc('"', out);
}

int nm_config_write_json(const nm_config *cfg, FILE *out, int indent)
{
    if (!cfg || !out) return -1;
    const char *nl = indent > 0 ? "\n" : "";
    int in = indent > 0 ? indent : 0;
    fputc('{', out);
    for (size_t i = 0; i < cfg->n; i++) {
        const nm_entry *e = &cfg->e[i];
        fprintf(out, "%s%s%*s", i ? "," : "", nl, in, "");
        nm_json_write_string(out, e->def->name);
        fprintf(out, ": {%s%*s\"value\": ", nl, 2 * in, "");
        if (e->def->type == NM_KEY_STRING) nm_json_write_string(out, e_text(e));
        else fputs(e_text(e), out);  /* canonical numbers are valid JSON numbers */
        fprintf(out, ",%s%*s\"unit\": ", nl, 2 * in, "");
        nm_json_write_string(out, e->def->unit);
        fprintf(out, ",%s%*s\"source\": ", nl, 2 * in, "");
        if (e_note(e)) {   /* the profile's own words first, then where they are */
            fputc('"', out);
            write_json_inner(out, e_note(e));
            fputs(" (", out);
            write_json_inner(out, e_origin(e));
            fputs(")\"", out);
        } else {
            nm_json_write_string(out, e_origin(e));
        }
        if (*note_kind(e_note(e))) {
            fprintf(out, ",%s%*s\"kind\": ", nl, 2 * in, "");
            nm_json_write_string(out, note_kind(e_note(e)));
        }
        fprintf(out, "%s%*s}", nl, in, "");
    }
    fprintf(out, "%s}%s", nl, nl);
    return ferror(out) ? -1 : 0;
}

/* A value's text needs the key's unit after it only when it is a bare number ("60 s" has its own:
 * "default 60 s ps" it said) */
static const char *unit_after(const char *text, const char *unit)
{
    if (!*unit) return "";
    char *end;
    strtod(text, &end);
    if (end == text) return "";
    while (*end == ' ') end++;
    return *end ? "" : unit;
}

int nm_config_describe(const nm_config *cfg, const char *name, FILE *out, char *err, size_t errlen)
{
    if (!cfg || !out) return -1;
    if (name && !find(cfg, name)) {
        char hint[300];
        did_you_mean(cfg, name, hint, sizeof hint);
        nm_set_err(err, errlen, "unknown key '%s'%s", name, hint);
        return -1;
    }
    static const char *const types[] = {"integer", "number", "text"};
    for (size_t i = 0; i < cfg->n; i++) {
        const nm_entry *e = &cfg->e[i];
        const nm_key_def *d = e->def;
        if (name && strcmp(d->name, name)) continue;
        const char *du = unit_after(d->default_value, d->unit), *vu = unit_after(e->text, d->unit);
        fprintf(out, "%s\n    %s\n    type %s%s%s, default %s%s%s (%s)\n", d->name, d->help && *d->help ? d->help : "",
                types[d->type <= NM_KEY_STRING ? d->type : 2], *d->unit ? ", unit " : "", d->unit, d->default_value,
                *du ? " " : "", du, d->source ? d->source : "");
        if (d->type == NM_KEY_STRING && d->choices && *d->choices) fprintf(out, "    choices: %s\n", d->choices);
        double lo, hi;
        if (numeric_range(d, &lo, &hi)) fprintf(out, "    range: %g to %g%s%s\n", lo, hi, *d->unit ? " " : "", d->unit);
        else if (d->flags & NM_KEY_POSITIVE) fprintf(out, "    range: above 0\n");
        else if (d->flags & NM_KEY_NONNEG) fprintf(out, "    range: 0 or more\n");
        if (strcmp(e_text(e), d->default_value) || strcmp(e_origin(e), d->source ? d->source : ""))
            fprintf(out, "    value %s%s%s from %s\n", e_text(e), *vu ? " " : "", vu, e_origin(e));
        if (e_note(e)) {
            const char *k = note_kind(e_note(e));
            fprintf(out, "    kind %s, source: %s\n", *k ? k : "not declared", e_note(e));
        }
    }
    return ferror(out) ? -1 : 0;
}

int nm_config_write_text(const nm_config *cfg, FILE *out)
{
    if (!cfg || !out) return -1;
    for (size_t i = 0; i < cfg->n; i++) {
        const nm_entry *e = &cfg->e[i];
        if (e_note(e))
            fprintf(out, "%s = %s%s%s  (%s (%s))\n", e->def->name, e_text(e), *e->def->unit ? " " : "",
                    e->def->unit, e_note(e), e_origin(e));
        else
            fprintf(out, "%s = %s%s%s  (%s)\n", e->def->name, e_text(e), *e->def->unit ? " " : "",
                    e->def->unit, e_origin(e));
    }
    return ferror(out) ? -1 : 0;
}
