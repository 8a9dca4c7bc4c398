#include "ms_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct parser {
    const char *s;
    size_t len, pos;
    char *err;
    size_t errlen;
    int failed;
} parser;

static void perr(parser *p, const char *fmt, ...)
{
    if (p->failed) return;
    p->failed = 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->err && p->errlen) snprintf(p->err, p->errlen, "JSON offset %zu: %s", p->pos, msg);
}

static void ws(parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
                               p->s[p->pos] == '\r'))
        p->pos++;
}

static void free_node(ms_json *v)
{
    if (!v) return;
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        if (v->items) free_node(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static void put_utf8(char *out, size_t *o, unsigned cp)
{
    if (cp < 0x80) out[(*o)++] = (char)cp;
    else if (cp < 0x800) {
        out[(*o)++] = (char)(0xc0 | (cp >> 6));
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xe0 | (cp >> 12));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*o)++] = (char)(0xf0 | (cp >> 18));
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*o)++] = (char)(0x80 | (cp & 0x3f));
    }
}

static int hex4(parser *p, unsigned *out)
{
    if (p->len - p->pos < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + (size_t)i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    p->pos += 4;
    *out = v;
    return 0;
}

static char *parse_string(parser *p)
{
    /* p->s[p->pos] == '"' */
    p->pos++;
    size_t start = p->pos;
    size_t cap = 16;
    for (size_t i = start; i < p->len && p->s[i] != '"'; i++) {
        cap++;
        if (p->s[i] == '\\') i++;
    }
    char *out = malloc(cap * 4 + 1);
    if (!out) {
        perr(p, "out of memory");
        return NULL;
    }
    size_t o = 0;
    while (p->pos < p->len) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            out[o] = 0;
            return out;
        }
        if (c < 0x20) break;
        if (c != '\\') {
            out[o++] = (char)c;
            p->pos++;
            continue;
        }
        p->pos++;
        if (p->pos >= p->len) break;
        char e = p->s[p->pos++];
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(p, &cp) < 0) {
                free(out);
                perr(p, "bad \\u escape");
                return NULL;
            }
            if (cp >= 0xd800 && cp < 0xdc00 && p->len - p->pos >= 6 && p->s[p->pos] == '\\' &&
                p->s[p->pos + 1] == 'u') {
                unsigned lo;
                p->pos += 2;
                if (hex4(p, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp == 0) cp = '?';
            put_utf8(out, &o, cp);
            break;
        }
        default:
            free(out);
            perr(p, "bad escape \\%c", e);
            return NULL;
        }
    }
    free(out);
    perr(p, "unterminated string");
    return NULL;
}

static int parse_value(parser *p, ms_json *v, int depth);

static int push_item(parser *p, ms_json *v, size_t *cap)
{
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        ms_json *it = realloc(v->items, nc * sizeof *it);
        if (!it) return perr(p, "out of memory"), -1;
        v->items = it;
        if (v->type == MS_JSON_OBJ) {
            char **k = realloc(v->keys, nc * sizeof *k);
            if (!k) return perr(p, "out of memory"), -1;
            v->keys = k;
        }
        *cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof v->items[0]);
    if (v->keys) v->keys[v->n] = NULL;
    v->n++;
    return 0;
}

static int parse_value(parser *p, ms_json *v, int depth)
{
    memset(v, 0, sizeof *v);
    ws(p);
    v->start = p->pos;
    if (depth > MAX_DEPTH) return perr(p, "nested too deeply"), -1;
    if (p->pos >= p->len) return perr(p, "unexpected end"), -1;
    char c = p->s[p->pos];
    if (c == '{' || c == '[') {
        int obj = c == '{';
        v->type = obj ? MS_JSON_OBJ : MS_JSON_ARR;
        p->pos++;
        size_t cap = 0;
        ws(p);
        if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) {
            p->pos++;
            v->end = p->pos;
            return 0;
        }
        for (;;) {
            if (push_item(p, v, &cap) < 0) return -1;
            if (obj) {
                ws(p);
                if (p->pos >= p->len || p->s[p->pos] != '"') return perr(p, "expected a key"), -1;
                char *k = parse_string(p);
                if (!k) return -1;
                v->keys[v->n - 1] = k;
                ws(p);
                if (p->pos >= p->len || p->s[p->pos] != ':') return perr(p, "expected ':'"), -1;
                p->pos++;
            }
            if (parse_value(p, &v->items[v->n - 1], depth + 1) < 0) return -1;
            ws(p);
            if (p->pos >= p->len) return perr(p, "unexpected end"), -1;
            if (p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->s[p->pos] == (obj ? '}' : ']')) {
                p->pos++;
                v->end = p->pos;
                return 0;
            }
            return perr(p, "expected ',' or '%c'", obj ? '}' : ']'), -1;
        }
    }
    if (c == '"') {
        v->type = MS_JSON_STR;
        v->str = parse_string(p);
        v->end = p->pos;
        return v->str ? 0 : -1;
    }
    if (p->len - p->pos >= 4 && !strncmp(p->s + p->pos, "true", 4)) {
        v->type = MS_JSON_BOOL;
        v->boolean = 1;
        p->pos += 4;
    } else if (p->len - p->pos >= 5 && !strncmp(p->s + p->pos, "false", 5)) {
        v->type = MS_JSON_BOOL;
        p->pos += 5;
    } else if (p->len - p->pos >= 4 && !strncmp(p->s + p->pos, "null", 4)) {
        v->type = MS_JSON_NULL;
        p->pos += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        size_t s = p->pos;
        while (p->pos < p->len && strchr("+-0123456789.eE", p->s[p->pos])) p->pos++;
        size_t n = p->pos - s;
        v->type = MS_JSON_NUM;
        v->str = malloc(n + 1);
        if (!v->str) return perr(p, "out of memory"), -1;
        memcpy(v->str, p->s + s, n);
        v->str[n] = 0;
        char *end;
        v->num = strtod(v->str, &end);
        if (*end || n == 0) return perr(p, "bad number"), -1;
    } else {
        return perr(p, "unexpected character '%c'", c), -1;
    }
    v->end = p->pos;
    return 0;
}

ms_json *ms_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    parser p = {text, len, 0, err, errlen, 0};
    ms_json *v = calloc(1, sizeof *v);
    if (!v) {
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (parse_value(&p, v, 0) < 0) {
        free_node(v);
        free(v);
        return NULL;
    }
    ws(&p);
    if (p.pos != p.len) {
        perr(&p, "trailing characters");
        free_node(v);
        free(v);
        return NULL;
    }
    return v;
}

void ms_json_free(ms_json *v)
{
    if (!v) return;
    free_node(v);
    free(v);
}

const ms_json *ms_json_get(const ms_json *obj, const char *key)
{
    if (!obj || obj->type != MS_JSON_OBJ) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] && !strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

char *ms_json_source(const ms_json *v, const char *text)
{
    size_t n = v->end - v->start;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, text + v->start, n);
    s[n] = 0;
    return s;
}

int ms_json_quote(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t need = *len + strlen(s) * 6 + 3;
    if (need > *cap) {
        size_t nc = *cap ? *cap : 64;
        while (nc < need) nc *= 2;
        char *b = realloc(*buf, nc);
        if (!b) return -1;
        *buf = b;
        *cap = nc;
    }
    char *o = *buf + *len;
    *o++ = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else if (c < 0x20) {
            o += sprintf(o, "\\u%04x", c);
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    *o = 0;
    *len = (size_t)(o - *buf);
    return 0;
}
