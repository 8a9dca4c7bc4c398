/* A small JSON reader (meta.json, the recorded configuration). No printing, no exit();
 * depth-limited, every error names the byte offset. */
#ifndef MS_JSON_H
#define MS_JSON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MS_JSON_NULL, MS_JSON_BOOL, MS_JSON_NUM, MS_JSON_STR, MS_JSON_ARR, MS_JSON_OBJ } ms_json_type;

typedef struct ms_json {
    ms_json_type type;
    int boolean;
    double num;
    char *str;               /* string value (unescaped), or a number's text */
    size_t n;                /* items of an array or object */
    struct ms_json *items;
    char **keys;             /* object keys (n of them) */
    size_t start, end;       /* the value's span in the source text */
} ms_json;

ms_json *ms_json_parse(const char *text, size_t len, char *err, size_t errlen);
void ms_json_free(ms_json *v);
const ms_json *ms_json_get(const ms_json *obj, const char *key);   /* NULL if absent / not an object */
/* A copy of the value's source text (e.g. a sub-object kept as a JSON string); NULL on OOM. */
char *ms_json_source(const ms_json *v, const char *text);
/* Append s as a JSON string literal (with quotes) to a growing buffer; -1 on OOM. */
int ms_json_quote(char **buf, size_t *len, size_t *cap, const char *s);

#ifdef __cplusplus
}
#endif
#endif
