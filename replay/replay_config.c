/* The configuration a trace recorded (its resolved configuration), applied under the profile and
 * settings the user gives the replay, and what changed. */
#define _GNU_SOURCE
#include "replay_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ms_driver.h"
#include <jansson.h>

/* ---- configuration -------------------------------------------------------------------------- */

/* A recorded value {"value": v, ...} or v, as the text --set would give (a string, or a number
 * printed so that it reads back as the same number); 0, -1 for anything else, -2 if too long. */
static int value_text(const json_t *v, char *out, size_t len)
{
    if (json_is_object(v)) v = json_object_get(v, "value");
    if (json_is_string(v)) return json_string_length(v) < len ? (memcpy(out, json_string_value(v), json_string_length(v) + 1), 0) : -2;
    if (json_is_integer(v)) return snprintf(out, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v)), 0;
    if (json_is_real(v)) return snprintf(out, len, "%.17g", json_real_value(v)), 0;
    return -1;
}

/* Apply the recorded configuration {"key": {"value": v, ...}, ...} (or {"key": v}). */
static int apply_recorded(nm_config *cfg, const char *json, char *warnings, size_t wlen, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *j = json_loads(json, 0, &jerr);
    if (!j) return fail(err, errlen, "the trace's recorded configuration: line %d column %d: %s", jerr.line, jerr.column,
                        jerr.text);
    if (!json_is_object(j)) {
        json_decref(j);
        return fail(err, errlen, "the trace's recorded configuration is not an object");
    }
    int rc = 0;
    size_t wo = warnings && wlen ? strlen(warnings) : 0;
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        char a[4096];
        int n = snprintf(a, sizeof a, "%s=", key), vt = -2;
        if (n > 0 && (size_t)n < sizeof a) vt = value_text(v, a + n, sizeof a - (size_t)n);
        if (vt == -1) continue;   /* not a value (a nested object of another kind): nothing to set */
        if (vt == -2) {
            rc = fail(err, errlen, "the trace's recorded configuration: key %.64s: value too long", key);
            break;
        }
        if (!nm_config_has(cfg, key)) {
            if (warnings && wo < wlen)
                wo += (size_t)snprintf(warnings + wo, wlen - wo, "%sthe trace's configuration key %s is unknown to "
                                       "this build (ignored)", wo ? "\n" : "", key);
            continue;
        }
        char e2[512];
        /* a value the capture's user set (--set) stays theirs; one of a profile or the default, or
         * derived, may be derived again from keys this replay changes (network.slack_buffer) */
        const json_t *src = json_is_object(v) ? json_object_get(v, "source") : NULL;
        int users = json_is_string(src) && !strncmp(json_string_value(src), "--", 2);
        if ((users ? nm_config_set : nm_config_set_as_profile)(cfg, a, "trace", e2, sizeof e2) < 0) {
            rc = fail(err, errlen, "the trace's recorded configuration: %s", e2);
            break;
        }
    }
    json_decref(j);
    return rc;
}

nm_config *ms_replay_config(const ms_trace *t, const char *profile, const char *const *sets, int nsets,
                            char *warnings, size_t wlen, char *err, size_t errlen)
{
    if (warnings && wlen) warnings[0] = 0;
    nm_config *cfg = nm_config_create();
    if (!cfg) {
        fail(err, errlen, "out of memory");
        return NULL;
    }
    if (ms_driver_register_keys(cfg, err, errlen) < 0) goto fail;
    if (profile || !t || !t->config_json) {
        if (nm_config_load_profile(cfg, profile ? profile : "default", NULL, err, errlen) < 0)
            goto fail;
    } else if (apply_recorded(cfg, t->config_json, warnings, wlen, err, errlen) < 0) {
        goto fail;
    }
    for (int i = 0; i < nsets; i++)
        if (ms_driver_config_set(cfg, sets[i], err, errlen) < 0) goto fail;
    return cfg;
fail:
    nm_config_destroy(cfg);
    return NULL;
}

int ms_replay_config_changes(const ms_trace *t, const nm_config *cfg, char *names, size_t len)
{
    if (names && len) names[0] = 0;
    json_t *j = t && t->config_json ? json_loads(t->config_json, 0, NULL) : NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        return 0;
    }
    int n = 0;
    size_t off = 0;
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        if (json_is_object(v)) v = json_object_get(v, "value");
        if (!nm_config_has(cfg, key)) continue;
        int same;
        if (json_is_number(v)) {
            double a = json_number_value(v), b = nm_config_double(cfg, key);
            same = a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
        } else if (json_is_string(v)) {
            same = !strcmp(json_string_value(v), nm_config_string(cfg, key));
        } else {
            continue;
        }
        if (same) continue;
        if (names && off < len && n < 4)
            off += (size_t)snprintf(names + off, len - off, "%s%s", n ? ", " : "", key);
        else if (names && off < len && n == 4)
            off += (size_t)snprintf(names + off, len - off, ", ...");
        n++;
    }
    json_decref(j);
    return n;
}

/* The recorded value of a key, as text ("" if the trace has no configuration or no such key). */
void replay_recorded_value(const ms_trace *t, const char *key, char *out, size_t len)
{
    out[0] = 0;
    json_t *j = t->config_json ? json_loads(t->config_json, 0, NULL) : NULL;
    const json_t *v = json_object_get(j, key);
    if (v && value_text(v, out, len) != 0) out[0] = 0;
    json_decref(j);
}
