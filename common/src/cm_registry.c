/* Registries of names (cm_registry.h): lookup, choice lists, help lines and "did you mean". Each
 * registry is a function returning its entry i (netmodel's network.c, routes.c, topo_gen.c). */
#include "cm_registry.h"

#include <stdint.h>
#include <string.h>

size_t cm_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 127 || lb > 127) return SIZE_MAX;
    size_t row[128];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const cm_named *cm_registry_find(cm_registry r, const char *name)
{
    if (!r || !name) return NULL;
    size_t len = strcspn(name, ":");   /* a generator's arguments follow its name */
    const cm_named *e;
    for (size_t i = 0; (e = r(i)) != NULL; i++)
        if (strlen(e->name) == len && !strncmp(e->name, name, len)) return e;
    return NULL;
}

int cm_registry_names(cm_registry r, const char *sep, int usage, char *buf, size_t len)
{
    if (!buf || !len) return -1;
    buf[0] = '\0';
    size_t n = 0;
    const cm_named *e;
    for (size_t i = 0; r && (e = r(i)) != NULL; i++) {
        int w = snprintf(buf + n, len - n, "%s%s", i ? sep : "", usage && e->usage ? e->usage : e->name);
        if (w < 0 || (size_t)w >= len - n) return -1;
        n += (size_t)w;
    }
    return (int)n;
}

void cm_registry_print(cm_registry r, FILE *out, const char *indent)
{
    const cm_named *e;
    for (size_t i = 0; r && (e = r(i)) != NULL; i++)
        fprintf(out, "%s%-22s %s\n", indent ? indent : "", e->usage ? e->usage : e->name, e->help ? e->help : "");
}

const char *cm_registry_suggest(cm_registry r, const char *name)
{
    if (!r || !name) return NULL;
    const char *best = NULL;
    size_t bestd = SIZE_MAX, len = strcspn(name, ":");
    char head[128];
    snprintf(head, sizeof head, "%.*s", (int)(len < sizeof head ? len : sizeof head - 1), name);
    const cm_named *e;
    for (size_t i = 0; (e = r(i)) != NULL; i++) {
        size_t d = cm_edit_distance(head, e->name);
        if (d < bestd) {
            bestd = d;
            best = e->name;
        }
    }
    /* close enough to be a typo: at most a third of the letters wrong */
    return best && bestd > 0 && bestd * 3 <= len ? best : NULL;
}

void cm_registry_unknown(cm_registry r, const char *what, const char *v, char *buf, size_t len)
{
    char names[512];
    if (cm_registry_names(r, ", ", 0, names, sizeof names) < 0) snprintf(names, sizeof names, "(list too long)");
    const char *s = cm_registry_suggest(r, v);
    snprintf(buf, len, "%s '%s' is not one of %s%s%s%s", what, v ? v : "", names, s ? " (did you mean '" : "",
             s ? s : "", s ? "'?)" : "");
}
