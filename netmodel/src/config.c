/* Configuration: typed keys with units, defaults and citations; INI profiles; overrides.
 *
 * Every key keeps its value in force, the value's canonical text (so that a resolved
 * configuration can be written out and read back exactly) and its origin: the default's
 * citation, "file:line", or the origin given to nm_config_set (e.g. "--set"). */
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

/* ---- key table -------------------------------------------------------------------------- */

nm_entry *cfg_find(const nm_config *cfg, const char *name)
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
        size_t d = cm_edit_distance(name, k);
        /* a key named without its section ("link_rate" for "network.link_rate") */
        const char *dot = strrchr(k, '.');
        if (dot && !strchr(name, '.')) {
            size_t d2 = cm_edit_distance(name, dot + 1);
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
void cfg_did_you_mean(const nm_config *cfg, const char *name, char *out, size_t len)
{
    const char *s = nm_config_suggest(cfg, name);
    if (s) snprintf(out, len, " (did you mean '%s'?)", s);
    else if (len) out[0] = '\0';
}

/* Remove an inline "  # comment" (inih strips only ';' comments). */
void cfg_strip_hash_comment(char *v)
{
    for (char *p = v; *p; p++) {
        if (*p == '#' && (p == v || cfg_is_space(p[-1]))) { *p = '\0'; break; }
    }
    size_t n = strlen(v);
    while (n > 0 && cfg_is_space(v[n - 1])) v[--n] = '\0';
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
int cfg_numeric_range(const nm_key_def *def, double *lo, double *hi)
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
    cfg_strip_hash_comment(buf);
    char *v = buf;
    while (cfg_is_space(*v)) v++;
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
                size_t d = cm_edit_distance(v, w);
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
    size_t nlen = cfg_scan_number(v, &is_int);
    int64_t iv = 0;
    const char *rest = v + nlen;
    while (cfg_is_space(*rest)) rest++;
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
    if (cfg_numeric_range(def, &lo, &hi) && !(x >= lo && x <= hi)) {
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

int cfg_entry_assign(nm_entry *e, const char *raw, const char *origin, char *msg, size_t msglen)
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
        if (cfg_find(cfg, d->name)) {
            nm_set_err(err, errlen, "key '%s' registered twice", d->name);
            goto fail;
        }
        double lo, hi;
        if (d->type != NM_KEY_STRING && d->choices && (!cfg_numeric_range(d, &lo, &hi) || !(lo <= hi))) {
            nm_set_err(err, errlen, "key '%s': range '%s' is not MIN..MAX", d->name, d->choices);
            goto fail;
        }
        if (cm_grow((void **)&cfg->e, &cfg->cap, cfg->n + 1, sizeof *cfg->e, 32) < 0) {
            nm_set_err(err, errlen, "out of memory");
            goto fail;
        }
        nm_entry *e = &cfg->e[cfg->n];
        memset(e, 0, sizeof *e);
        e->def = d;
        char msg[400];
        if (cfg_entry_assign(e, d->default_value, d->source ? d->source : "default", msg, sizeof msg) != 0) {
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
    static const struct { const char *key; cm_registry r; int choices; } regs[] = {
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
            const cm_named *e;
            for (size_t i = 0; w >= 0 && (size_t)w < cap - used && (e = regs[j].r(i)) != NULL; i++) {
                int x = snprintf(help + w, cap - used - (size_t)w, "%s%s (%s)", i ? "; " : "", e->usage, e->help);
                w = x < 0 ? -1 : w + x;
            }
            if (w < 0 || (size_t)w + 1 >= cap - used) return -1;
            used += (size_t)w + 1;
            d->help = help;
            if (regs[j].choices) {
                char *ch = cfg->own_text + used;
                int c = cm_registry_names(regs[j].r, "|", 0, ch, cap - used);
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
    nm_entry *s = cfg_find(cfg, "network.slack_buffer");
    const nm_entry *eng = cfg_find(cfg, "network.engine"), *hw = cfg_find(cfg, "network.high_water");
    const nm_entry *rate = cfg_find(cfg, "network.link_rate"), *hrate = cfg_find(cfg, "network.host_link_rate");
    const nm_entry *len = cfg_find(cfg, "network.link_length"), *vel = cfg_find(cfg, "network.propagation_velocity");
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

void cfg_derive_keys(nm_config *cfg) { derive_slack(cfg); }

/* ---- snapshots (a failed load leaves the configuration as it was) ------------------------ */

nm_saved *cfg_snapshot(const nm_config *cfg)
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

void cfg_restore(nm_config *cfg, nm_saved *s, size_t n, int apply)
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
