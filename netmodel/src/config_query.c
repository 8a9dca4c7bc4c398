/* Typed lookups of a configuration and its output: JSON, text and one key described. */
#define _XOPEN_SOURCE 700
#include "config_internal.h"

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

/* ---- lookups ---------------------------------------------------------------------------- */

/* A typed lookup of a name never registered: a defect in the calling code. Debug builds stop at
 * it; release builds keep the first such name for nm_config_lookup_error (the config is always
 * allocated by nm_config_create, so writing through the cast is defined). */
static const nm_entry *find_typed(const nm_config *cfg, const char *name)
{
    const nm_entry *e = cfg_find(cfg, name);
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

int nm_config_has(const nm_config *cfg, const char *name) { return cfg_find(cfg, name) != NULL; }
size_t nm_config_count(const nm_config *cfg) { return cfg ? cfg->n : 0; }
const char *nm_config_key_at(const nm_config *cfg, size_t i)
{
    return (cfg && i < cfg->n) ? cfg->e[i].def->name : NULL;
}
const char *nm_config_value_text(const nm_config *cfg, const char *name)
{
    const nm_entry *e = cfg_find(cfg, name);
    return e ? e_text(e) : NULL;
}
const char *nm_config_unit(const nm_config *cfg, const char *name)
{
    const nm_entry *e = cfg_find(cfg, name);
    return e ? e->def->unit : NULL;
}
const char *nm_config_origin(const nm_config *cfg, const char *name)
{
    const nm_entry *e = cfg_find(cfg, name);
    return e ? e_origin(e) : NULL;
}
const char *nm_config_note(const nm_config *cfg, const char *name)
{
    const nm_entry *e = cfg_find(cfg, name);
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
    const nm_entry *e = cfg_find(cfg, name);
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
    if (name && !cfg_find(cfg, name)) {
        char hint[300];
        cfg_did_you_mean(cfg, name, hint, sizeof hint);
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
        if (cfg_numeric_range(d, &lo, &hi)) fprintf(out, "    range: %g to %g%s%s\n", lo, hi, *d->unit ? " " : "", d->unit);
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
