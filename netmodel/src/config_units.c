/* Units and quantities: SI and IEC prefixes, unit bases, nm_parse_quantity. */
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
size_t cfg_scan_number(const char *s, int *is_integer)
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

int cfg_is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

int nm_parse_quantity(const char *unit, const char *text, double *out)
{
    if (!text || !unit) return -1;
    while (cfg_is_space(*text)) text++;
    int is_int;
    size_t nlen = cfg_scan_number(text, &is_int);
    if (nlen == 0 || nlen > 64) return -1;
    char num[72];
    memcpy(num, text, nlen);
    num[nlen] = '\0';
    errno = 0;
    double x = strtod(num, NULL);
    if (errno == ERANGE || !isfinite(x)) return -1;
    const char *suf = text + nlen;
    while (cfg_is_space(*suf)) suf++;
    size_t slen = strlen(suf);
    while (slen > 0 && cfg_is_space(suf[slen - 1])) slen--;
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
