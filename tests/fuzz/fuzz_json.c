/* libFuzzer harness: the JSON reader (meta.json of a raw trace, a trace's recorded configuration). */
#include "fuzz_util.h"
#include "ms_json.h"

static void walk(const ms_json *v, const char *text, size_t len, int depth)
{
    if (depth > 1000 || v->start > v->end || v->end > len) abort();
    if (v->type == MS_JSON_OBJ || v->type == MS_JSON_ARR) {
        for (size_t i = 0; i < v->n; i++) {
            if (v->type == MS_JSON_OBJ && !v->keys[i]) abort();
            walk(&v->items[i], text, len, depth + 1);
        }
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
    char *text = malloc(len + 1);
    if (!text) return 0;
    memcpy(text, data, len);
    text[len] = 0;
    char err[256] = "";
    ms_json *j = ms_json_parse(text, len, err, sizeof err);
    if (j) {
        walk(j, text, len, 0);
        char *src = ms_json_source(j, text);
        free(src);
        ms_json_free(j);
    } else {
        fuzz_check_error(err, NULL);
    }
    free(text);
    return 0;
}
