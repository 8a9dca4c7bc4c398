/* The configuration's private header: a key's entry and the configuration (struct nm_config),
 * and what the parts of the configuration share. The parts are
 *   config.c        netmodel's keys, the key table: parsing a value, registering keys, create
 *                   and destroy, values derived from others, snapshots
 *   config_units.c  units and quantities (nm_parse_quantity)
 *   config_load.c   INI profiles: reading, includes, the search path, nm_config_set
 *   config_query.c  typed lookups and output (JSON, text, describe)
 * Functions shared between the parts carry the prefix cfg_; everything else is static in its file. */
#ifndef CONFIG_INTERNAL_H
#define CONFIG_INTERNAL_H

#include "nm_internal.h"

#include <stddef.h>
#include <stdint.h>

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
static inline int64_t e_ival(const nm_entry *e) { return e->derived ? e->d_ival : e->ival; }
static inline double e_dval(const nm_entry *e) { return e->derived ? (double)e->d_ival : e->dval; }
static inline const char *e_text(const nm_entry *e) { return e->derived ? e->d_text : e->text; }
static inline const char *e_origin(const nm_entry *e) { return e->derived ? e->d_origin : e->origin; }
/* a derived value's source is its derivation (in its origin), not the configured value's note */
static inline const char *e_note(const nm_entry *e) { return e->derived ? NULL : e->note; }

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

typedef struct { int64_t ival; double dval; char *text, *origin, *note; int explicit_set; } nm_saved;

/* config.c */
nm_entry *cfg_find(const nm_config *cfg, const char *name);
void cfg_did_you_mean(const nm_config *cfg, const char *name, char *out, size_t len);
void cfg_strip_hash_comment(char *v);
int cfg_numeric_range(const nm_key_def *def, double *lo, double *hi);
int cfg_entry_assign(nm_entry *e, const char *raw, const char *origin, char *msg, size_t msglen);
void cfg_derive_keys(nm_config *cfg);
nm_saved *cfg_snapshot(const nm_config *cfg);
void cfg_restore(nm_config *cfg, nm_saved *s, size_t n, int apply);

/* config_units.c */
size_t cfg_scan_number(const char *s, int *is_integer);
int cfg_is_space(char c);

#endif
