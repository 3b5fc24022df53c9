/*
 * tca_mca_check.h - checks of btl tca's and coll tca's MCA values after Open
 * MPI registered them, and where their help files are.  Shared by both
 * components (static inline: each .so gets its own copy, libtca stays free
 * of Open MPI).
 *
 * Open MPI 4.1.4's parser (mca_base_var.c, int_from_string) reads integers
 * with strtoull(base 0) and then a k/m/g suffix.  Measured with ompi_info:
 *   size_t:       "10G" -> 10 GiB, "-1" -> 2^64-1, "9223372036854775808" -> 2^63,
 *                 "18446744073709551616" -> 2^64-1 (saturated)
 *   int:          "-1" -> -1, "18446744073709551616" -> -1, "1g" -> 2^30;
 *                 "10G" and "9223372036854775808" refused (help-mca-var.txt
 *                 names the variable) and the default kept - the job runs on
 *   unsigned int: "-1", "10G", 2^63, 2^64 refused, default kept
 *   all:          "abc" and "" -> 0, "12abc" -> 12, "1.5G" -> 1, "010" -> 8,
 *                 without a word
 *   enum:         a name or its number; anything else refused, default kept.
 * So a component checks ranges itself, and where the text came from the
 * environment (mpirun --mca arrives there too) it also checks the text with
 * tca_units.h's parser and that Open MPI stored what it says.  Values from
 * parameter files are range-checked only.
 */
#ifndef TCA_MCA_CHECK_H
#define TCA_MCA_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opal/util/show_help.h"
#include "tca_units.h"

/* Show a help text of help-btl-tca.txt / help-coll-tca.txt.  Rendered here
 * (opal_show_help_vstring) and written to this process's stderr, which
 * mpirun forwards, instead of opal_show_help: in Open MPI 4.1.4 that one
 * relays the text to mpirun through PMIx_Log, and when several ranks do so
 * at once mpirun now and then unpacks garbage ("ORTE_ERROR_LOG: Data unpack
 * would read past end of buffer"), drops the message and may even report a
 * job that passed as failed.  The price: no aggregation across ranks. */
static inline void tca_show_help(const char *file, const char *topic, ...) {
    va_list ap;
    va_start(ap, topic);
    char *text = opal_show_help_vstring(file, topic, true, ap);
    va_end(ap);
    if (NULL == text) return;
    fputs(text, stderr);
    fflush(stderr);
    free(text);
}

/* Largest byte count a size-like parameter may take: anything near 2^64 is a
 * negative number in disguise, and thresholds above 1 TiB mean nothing here. */
#define TCA_MCA_MAX_BYTES (UINT64_C(1) << 40)

/* Make help-btl-tca.txt / help-coll-tca.txt findable by opal_show_help: the
 * install directory, then each directory of TCA_HELP_DIR (colon-separated;
 * scripts/tca-mpirun sets it to the source tree for builds that are not
 * installed).  Later directories are searched after Open MPI's own. */
static inline void tca_mca_help_dirs(void) {
#ifdef TCA_HELP_INSTALL_DIR
    (void) opal_show_help_add_dir(TCA_HELP_INSTALL_DIR);
#endif
    const char *env = getenv("TCA_HELP_DIR");
    if (NULL == env || '\0' == *env) return;
    char *copy = strdup(env);
    if (NULL == copy) return;
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); NULL != dir; dir = strtok_r(NULL, ":", &save))
        (void) opal_show_help_add_dir(dir); /* opal_argv copies it */
    free(copy);
}

/* Why the text of OMPI_MCA_<name> does not say what Open MPI stored (NULL:
 * it does, or it is not set there): not a number, negative where that is
 * not allowed, or a number Open MPI refused or wrapped (value_bits is the
 * stored value, a signed one as its two's complement; not compared when
 * compare is 0, for values the BTL base adjusts after reading them). */
static inline const char *tca_mca_text_problem(const char *name, int allow_negative, uint64_t value_bits,
                                               int compare) {
    char var[256];
    snprintf(var, sizeof(var), "OMPI_MCA_%s", name);
    const char *text = getenv(var);
    if (NULL == text) return NULL;
    while (' ' == *text || '\t' == *text) ++text;
    const int negative = '-' == *text;
    if (negative && !allow_negative) return tca_parse_status_string(TCA_PARSE_NEGATIVE);
    if (negative) ++text;
    if ('0' == text[0] && ('x' == text[1] || 'X' == text[1])) return NULL; /* Open MPI reads hex */
    uint64_t n = 0;
    const tca_parse_status st = tca_parse_size(text, 1, &n);
    if (TCA_PARSE_OK != st) return tca_parse_status_string(st);
    if (negative && n > (uint64_t) INT64_MAX) return tca_parse_status_string(TCA_PARSE_OVERFLOW);
    const uint64_t bits = negative ? (uint64_t) (-(int64_t) n) : n;
    if (compare && bits != value_bits) return "outside what the parameter's type holds (Open MPI kept another value)";
    return NULL;
}

static inline void tca_mca_show_invalid(const char *help_file, const char *name, const char *value,
                                        const char *problem, const char *allowed) {
    char var[256];
    snprintf(var, sizeof(var), "OMPI_MCA_%s", name);
    const char *text = getenv(var);
    char shown[320];
    if (NULL != text && 0 != strcmp(text, value))
        snprintf(shown, sizeof(shown), "%s (given as '%s')", value, text);
    else
        snprintf(shown, sizeof(shown), "%s", value);
    tca_show_help(help_file, "invalid-param", name, shown, problem, allowed);
}

/* 1: value (an unsigned parameter as Open MPI read it) is in [min, max] and
 * was written as a number.  0: help shown naming the parameter. */
static inline int tca_mca_check_size_as(const char *help_file, const char *name, uint64_t value, uint64_t min,
                                        uint64_t max, const char *allowed, int compare) {
    char shown[32];
    snprintf(shown, sizeof(shown), "%" PRIu64, value);
    const char *problem = tca_mca_text_problem(name, 0, value, compare);
    if (NULL == problem && (value < min || value > max))
        problem = value < min ? "below the minimum" : "above the maximum";
    if (NULL == problem) return 1;
    tca_mca_show_invalid(help_file, name, shown, problem, allowed);
    return 0;
}

static inline int tca_mca_check_size(const char *help_file, const char *name, uint64_t value, uint64_t min,
                                     uint64_t max, const char *allowed) {
    return tca_mca_check_size_as(help_file, name, value, min, max, allowed, 1);
}

/* For a value the BTL base changes after reading it (mca_btl_base_param_verify
 * turns a put limit of 0 into SIZE_MAX and raises min_rdma_pipeline_size):
 * the text is checked, but need not equal the value. */
static inline int tca_mca_check_size_adjusted(const char *help_file, const char *name, uint64_t value,
                                              uint64_t min, uint64_t max, const char *allowed) {
    return tca_mca_check_size_as(help_file, name, value, min, max, allowed, 0);
}

/* The same for a signed parameter. */
static inline int tca_mca_check_int(const char *help_file, const char *name, int64_t value, int64_t min,
                                    int64_t max, const char *allowed) {
    char shown[32];
    snprintf(shown, sizeof(shown), "%" PRId64, value);
    const char *problem = tca_mca_text_problem(name, min < 0, (uint64_t) value, 1);
    if (NULL == problem && (value < min || value > max))
        problem = value < min ? "below the minimum" : "above the maximum";
    if (NULL == problem) return 1;
    tca_mca_show_invalid(help_file, name, shown, problem, allowed);
    return 0;
}

/* 1: the text of OMPI_MCA_<name>, if set there, is one of the enumerators
 * (or its number).  Open MPI refuses an unknown one but keeps the default, so
 * a typo would silently run in another mode: 0, help shown, instead. */
static inline int tca_mca_check_enum(const char *help_file, const char *name, const char *const *names, int count,
                                     const char *allowed) {
    char var[256];
    snprintf(var, sizeof(var), "OMPI_MCA_%s", name);
    const char *text = getenv(var);
    if (NULL == text) return 1;
    for (int i = 0; i < count; ++i) {
        char number[16];
        snprintf(number, sizeof(number), "%d", i);
        if (0 == strcasecmp(text, names[i]) || 0 == strcmp(text, number)) return 1;
    }
    tca_show_help(help_file, "invalid-param", name, text, "not one of the names", allowed);
    return 0;
}

#endif /* TCA_MCA_CHECK_H */
