/*
 * tca_units.h - the one parser for size-like settings (environment variables
 * of libtca, MCA values of btl tca and coll tca): "4096", "64k", "10M", "1g",
 * "2T", optionally followed by "b"/"B" ("64kB"); binary units (k = 1024).
 * Unlike strtoull it rejects what it cannot read whole: a sign ("-1" is not
 * SIZE_MAX), junk ("12abc", "0x10"), nothing at all, and values that do not
 * fit 64 bits ("9223372036854775808k").  Like UCX's ucs_config_sscanf_memunits.
 *
 * Header-only C (static inline) so the C++ device layer and the C glue of the
 * components share the code without exporting it from libtca.
 */
#ifndef TCA_UNITS_H
#define TCA_UNITS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tca_parse_status {
    TCA_PARSE_OK = 0,
    TCA_PARSE_EMPTY,     /* "" or only blanks */
    TCA_PARSE_NEGATIVE,  /* a leading '-' */
    TCA_PARSE_NOT_NUMBER, /* does not start with a decimal digit */
    TCA_PARSE_JUNK,      /* something after the number that is not a unit */
    TCA_PARSE_OVERFLOW   /* more than 2^64 - 1 */
} tca_parse_status;

static inline const char *tca_parse_status_string(tca_parse_status s) {
    switch (s) {
    case TCA_PARSE_OK: return "ok";
    case TCA_PARSE_EMPTY: return "empty";
    case TCA_PARSE_NEGATIVE: return "negative";
    case TCA_PARSE_NOT_NUMBER: return "not a decimal number";
    case TCA_PARSE_JUNK: return "unexpected characters after the number";
    case TCA_PARSE_OVERFLOW: return "too large";
    }
    return "invalid";
}

static inline int tca_units_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Parse s into *out.  allow_units = 0: a plain decimal count (no suffix). */
static inline tca_parse_status tca_parse_size(const char *s, int allow_units, uint64_t *out) {
    uint64_t v = 0;
    unsigned shift = 0;
    if (s == 0) return TCA_PARSE_EMPTY;
    while (tca_units_blank(*s)) ++s;
    if (*s == '\0') return TCA_PARSE_EMPTY;
    if (*s == '-') return TCA_PARSE_NEGATIVE;
    if (*s < '0' || *s > '9') return TCA_PARSE_NOT_NUMBER;
    for (; *s >= '0' && *s <= '9'; ++s) {
        const uint64_t d = (uint64_t) (*s - '0');
        if (v > (UINT64_MAX - d) / 10) return TCA_PARSE_OVERFLOW;
        v = v * 10 + d;
    }
    /* "0x10" would be 0 followed by junk: say junk, not 0. */
    if (allow_units) {
        switch (*s) {
        case 'k': case 'K': shift = 10; ++s; break;
        case 'm': case 'M': shift = 20; ++s; break;
        case 'g': case 'G': shift = 30; ++s; break;
        case 't': case 'T': shift = 40; ++s; break;
        default: break;
        }
        if (*s == 'b' || *s == 'B') ++s;
    }
    while (tca_units_blank(*s)) ++s;
    if (*s != '\0') return TCA_PARSE_JUNK;
    if (shift != 0 && v > (UINT64_MAX >> shift)) return TCA_PARSE_OVERFLOW;
    *out = v << shift;
    return TCA_PARSE_OK;
}

#ifdef __cplusplus
}
#endif

#endif /* TCA_UNITS_H */
