/* Registries of names: the choices a key or an option accepts (netmodel's engines, routings and
 * topology generators; the tools' traffic patterns), each with its usage and one line of help, as
 * BookSim and CODES keep theirs. Choice lists, key help, usage texts and "did you mean" come from
 * here, so that a name added to a registry is offered everywhere at once and no caller compares
 * such names by hand. A registry is read by index: entry i, NULL past the last. */
#ifndef CM_REGISTRY_H
#define CM_REGISTRY_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cm_named {
    const char *name;         /* e.g. "torus2d" */
    const char *usage;        /* e.g. "torus2d:X:Y:K" (the name alone when it takes no argument) */
    const char *help;         /* one line */
} cm_named;
typedef const cm_named *(*cm_registry)(size_t i);

/* The entry named `name` (before any ':' arguments), NULL if none. */
const cm_named *cm_registry_find(cm_registry r, const char *name);
/* The names joined by sep ("a|b|c", "a, b, c"), or usages when `usage` is set; the length written
 * (truncated to fit len; -1 if it did not fit). */
int cm_registry_names(cm_registry r, const char *sep, int usage, char *buf, size_t len);
/* "NAME  HELP" lines, one per entry, for usage texts and --help. */
void cm_registry_print(cm_registry r, FILE *out, const char *indent);
/* The entry nearest to a mistyped name (a third of its letters off at most), NULL if none. */
const char *cm_registry_suggest(cm_registry r, const char *name);
/* "what 'v' is not one of a, b, c (did you mean 'x'?)" into buf, for options and keys. */
void cm_registry_unknown(cm_registry r, const char *what, const char *v, char *buf, size_t len);
/* Edit distance of two short strings (at most 127 characters; larger: SIZE_MAX). */
size_t cm_edit_distance(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif
