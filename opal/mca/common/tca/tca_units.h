/*
 * tca_units.h - the one parser for settings (environment variables of libtca,
 * MCA values of btl tca and coll tca).  Three kinds of value:
 *   tca_parse_size: sizes and counts: "4096", "64k", "10M", "1g",
 * "2T", optionally followed by "b"/"B" ("64kB"); binary units (k = 1024).
 * Unlike strtoull it rejects what it cannot read whole: a sign ("-1" is not
 * SIZE_MAX), junk ("12abc", "0x10"), nothing at all, and values that do not
 * fit 64 bits ("9223372036854775808k").  Like UCX's ucs_config_sscanf_memunits.
 *   tca_parse_real: a non-negative decimal real ("3500", "0.5", "2e3"); no
 *     sign, no "inf"/"nan", no hex, nothing that does not fit a double.
 *   tca_parse_bool: 1/0, on/off, yes/no, true/false (any case).
 * Every one refuses "" (TCA_PARSE_EMPTY): an empty value is not "unset".
 * Range checks are the caller's (env_number, env_real in env_settings.hpp).
 *
 * Header-only C (static inline) so the C++ device layer and the C glue of the
 * components share the code without exporting it from libtca.
 */
#ifndef TCA_UNITS_H
#define TCA_UNITS_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tca_parse_status {
    TCA_PARSE_OK = 0,
    TCA_PARSE_EMPTY,      /* "" or only blanks */
    TCA_PARSE_NEGATIVE,   /* a leading '-' */
    TCA_PARSE_NOT_NUMBER, /* does not start with a decimal digit */
    TCA_PARSE_JUNK,       /* something after the number that is not a unit */
    TCA_PARSE_OVERFLOW,   /* more than 2^64 - 1 (a real: more than a double holds) */
    TCA_PARSE_NOT_BOOLEAN /* not one of 0/1, on/off, yes/no, true/false */
} tca_parse_status;

static inline const char *tca_parse_status_string(tca_parse_status s) {
    switch (s) {
    case TCA_PARSE_OK:
        return "ok";
    case TCA_PARSE_EMPTY:
        return "empty";
    case TCA_PARSE_NEGATIVE:
        return "negative";
    case TCA_PARSE_NOT_NUMBER:
        return "not a decimal number";
    case TCA_PARSE_JUNK:
        return "unexpected characters after the number";
    case TCA_PARSE_OVERFLOW:
        return "too large";
    case TCA_PARSE_NOT_BOOLEAN:
        return "not a boolean (0/1, on/off, yes/no, true/false)";
    }
    return "invalid";
}

static inline int tca_units_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Parse s into *out.  allow_units = 0: a plain decimal count (no suffix). */
static inline tca_parse_status tca_parse_size(const char *s, int allow_units, uint64_t *out) {
    uint64_t v = 0;
    unsigned shift = 0;
    if (s == 0)
        return TCA_PARSE_EMPTY;
    while (tca_units_blank(*s))
        ++s;
    if (*s == '\0')
        return TCA_PARSE_EMPTY;
    if (*s == '-')
        return TCA_PARSE_NEGATIVE;
    if (*s < '0' || *s > '9')
        return TCA_PARSE_NOT_NUMBER;
    for (; *s >= '0' && *s <= '9'; ++s) {
        const uint64_t d = (uint64_t) (*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return TCA_PARSE_OVERFLOW;
        v = v * 10 + d;
    }
    /* "0x10" would be 0 followed by junk: say junk, not 0. */
    if (allow_units) {
        switch (*s) {
        case 'k':
        case 'K':
            shift = 10;
            ++s;
            break;
        case 'm':
        case 'M':
            shift = 20;
            ++s;
            break;
        case 'g':
        case 'G':
            shift = 30;
            ++s;
            break;
        case 't':
        case 'T':
            shift = 40;
            ++s;
            break;
        default:
            break;
        }
        if (*s == 'b' || *s == 'B')
            ++s;
    }
    while (tca_units_blank(*s))
        ++s;
    if (*s != '\0')
        return TCA_PARSE_JUNK;
    if (shift != 0 && v > (UINT64_MAX >> shift))
        return TCA_PARSE_OVERFLOW;
    *out = v << shift;
    return TCA_PARSE_OK;
}

static inline int tca_units_digit(char c) {
    return c >= '0' && c <= '9';
}

/* A non-negative real: digits [. digits] [e|E [+|-] digits], or ". digits"
 * first; blanks around it.  The syntax is checked here, so strtod only turns
 * it into a double (it would also read "inf", "nan", "0x1p3" and "+1"). */
static inline tca_parse_status tca_parse_real(const char *s, double *out) {
    const char *p, *start;
    char buf[128];
    size_t n;
    char *end = 0;
    double v;
    if (s == 0)
        return TCA_PARSE_EMPTY;
    while (tca_units_blank(*s))
        ++s;
    if (*s == '\0')
        return TCA_PARSE_EMPTY;
    if (*s == '-')
        return TCA_PARSE_NEGATIVE;
    if (!tca_units_digit(*s) && !(*s == '.' && tca_units_digit(s[1])))
        return TCA_PARSE_NOT_NUMBER;
    start = p = s;
    while (tca_units_digit(*p))
        ++p;
    if (*p == '.') {
        ++p;
        while (tca_units_digit(*p))
            ++p;
    }
    if ((*p == 'e' || *p == 'E') &&
        (tca_units_digit(p[1]) || ((p[1] == '+' || p[1] == '-') && tca_units_digit(p[2])))) {
        p += 2;
        while (tca_units_digit(*p))
            ++p;
    }
    n = (size_t) (p - start);
    s = p;
    while (tca_units_blank(*s))
        ++s;
    if (*s != '\0')
        return TCA_PARSE_JUNK;
    if (n >= sizeof(buf))
        return TCA_PARSE_OVERFLOW; /* 127 digits: beyond any setting */
    memcpy(buf, start, n);
    buf[n] = '\0';
    v = strtod(buf, &end);
    if (end != buf + n)
        return TCA_PARSE_JUNK; /* a locale whose decimal point is not '.' */
    if (!(v <= DBL_MAX))
        return TCA_PARSE_OVERFLOW; /* "1e999": HUGE_VAL */
    *out = v;
    return TCA_PARSE_OK;
}

/* 1/0, on/off, yes/no, true/false, in any case, blanks around it. */
static inline tca_parse_status tca_parse_bool(const char *s, int *out) {
    static const struct {
        const char *word;
        int value;
    } words[] = {{"1", 1}, {"on", 1},  {"yes", 1}, {"true", 1},
                 {"0", 0}, {"off", 0}, {"no", 0},  {"false", 0}};
    size_t n, i;
    if (s == 0)
        return TCA_PARSE_EMPTY;
    while (tca_units_blank(*s))
        ++s;
    n = strlen(s);
    while (n > 0 && tca_units_blank(s[n - 1]))
        --n;
    if (n == 0)
        return TCA_PARSE_EMPTY;
    for (i = 0; i < sizeof(words) / sizeof(words[0]); ++i)
        if (strlen(words[i].word) == n && strncasecmp(s, words[i].word, n) == 0) {
            *out = words[i].value;
            return TCA_PARSE_OK;
        }
    return TCA_PARSE_NOT_BOOLEAN;
}

#ifdef __cplusplus
}
#endif

#endif /* TCA_UNITS_H */
