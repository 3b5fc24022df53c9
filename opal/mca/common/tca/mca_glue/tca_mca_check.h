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

#include "opal/mca/base/mca_base_var.h"
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
    if (NULL == text)
        return;
    fputs(text, stderr);
    fflush(stderr);
    free(text);
}

/* Largest byte count a size-like parameter may take: anything near 2^64 is a
 * negative number in disguise, and thresholds above 1 TiB mean nothing here. */
#define TCA_MCA_MAX_BYTES (UINT64_C(1) << 40)

/* Make help-btl-tca.txt / help-coll-tca.txt findable by opal_show_help,
 * which looks for a file name (never a path) in Open MPI's own data
 * directory and then in the directories added here, in order.  Only
 * directories holding help_file are added, so that whichever way the
 * component was loaded its messages arrive (plain mpirun with the build
 * tree's .libs on mca_base_component_path, scripts/tca-mpirun, an install,
 * one made with `make install prefix=DIR` or DESTDIR, or moved since):
 *   1. each directory of TCA_HELP_DIR (colon-separated): an explicit choice;
 *   2. beside the component's own DSO (found with dladdr), then where the
 *      install puts the help files relative to the components
 *      (TCA_COMPONENT_INSTALL_DIR -> TCA_HELP_INSTALL_DIR, e.g.
 *      ../../share/tca-ompi), then the source directory relative to a
 *      build tree's .libs (../src_subdir);
 *   3. the configured install directory and the configured source directory
 *      (a VPATH build). */
#include <dlfcn.h>
#include <unistd.h>

static inline void tca_mca_help_add_if_there(const char *dir, const char *help_file) {
    char path[4096];
    if (NULL == dir || '\0' == *dir)
        return;
    if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, help_file) >= sizeof(path))
        return;
    if (0 == access(path, R_OK))
        (void) opal_show_help_add_dir(dir); /* opal_argv copies it */
}

/* rel (at most size bytes): the path leading from directory `from` to
 * directory `to`, both absolute ("../../share/tca-ompi").  0: none. */
static inline int tca_mca_relative_dir(const char *from, const char *to, char *rel, size_t size) {
    if ('/' != from[0] || '/' != to[0])
        return 0;
    size_t common = 0, i = 0;
    for (;; ++i) { /* the longest common prefix ending at a component boundary */
        const char a = from[i], b = to[i];
        if (('/' == a || '\0' == a) && ('/' == b || '\0' == b))
            common = i;
        if (a != b || '\0' == a)
            break;
    }
    size_t used = 0;
    rel[0] = '\0';
    for (const char *p = from + common; '\0' != *p;
         ++p) { /* one ".." per remaining component of from */
        if ('/' == p[0] && '\0' != p[1] && '/' != p[1]) {
            if (used + 3 >= size)
                return 0;
            memcpy(rel + used, "../", 4);
            used += 3;
        }
    }
    const char *rest = to + common;
    while ('/' == *rest)
        ++rest;
    if (used + strlen(rest) + 2 > size)
        return 0;
    strcpy(rel + used, '\0' == *rest ? "." : rest);
    return 1;
}

static inline void tca_mca_help_dirs(const char *help_file, const char *src_subdir) {
    const char *env = getenv("TCA_HELP_DIR");
    if (NULL != env && '\0' != *env) {
        char *copy = strdup(env);
        if (NULL != copy) {
            char *save = NULL;
            for (char *dir = strtok_r(copy, ":", &save); NULL != dir;
                 dir = strtok_r(NULL, ":", &save))
                tca_mca_help_add_if_there(dir, help_file);
            free(copy);
        }
    }
    Dl_info info;
    char own[4096], dir[8192];
    if (0 != dladdr((void *) &tca_mca_help_dirs, &info) && NULL != info.dli_fname &&
        NULL != realpath(info.dli_fname, own)) {
        char *slash = strrchr(own, '/');
        if (NULL != slash) {
            *slash = '\0'; /* the component's directory */
            tca_mca_help_add_if_there(own, help_file);
#if defined(TCA_COMPONENT_INSTALL_DIR) && defined(TCA_HELP_INSTALL_DIR)
            char rel[2048];
            if (tca_mca_relative_dir(TCA_COMPONENT_INSTALL_DIR, TCA_HELP_INSTALL_DIR, rel,
                                     sizeof(rel))) {
                snprintf(dir, sizeof(dir), "%s/%s", own, rel);
                tca_mca_help_add_if_there(dir, help_file);
            }
#endif
            if (NULL != src_subdir) {
                snprintf(dir, sizeof(dir), "%s/../%s", own, src_subdir);
                tca_mca_help_add_if_there(dir, help_file);
            }
        }
    }
#ifdef TCA_HELP_INSTALL_DIR
    tca_mca_help_add_if_there(TCA_HELP_INSTALL_DIR, help_file);
#endif
#ifdef TCA_HELP_SRC_DIR
    tca_mca_help_add_if_there(TCA_HELP_SRC_DIR, help_file);
#endif
}

/* Why the text of OMPI_MCA_<name> does not say what Open MPI stored (NULL:
 * it does, or it is not set there): not a number, negative where that is
 * not allowed, or a number Open MPI refused or wrapped (value_bits is the
 * stored value, a signed one as its two's complement; not compared when
 * compare is 0, for values the BTL base adjusts after reading them). */
static inline const char *tca_mca_text_problem(const char *name, int allow_negative,
                                               uint64_t value_bits, int compare) {
    char var[256];
    snprintf(var, sizeof(var), "OMPI_MCA_%s", name);
    const char *text = getenv(var);
    if (NULL == text)
        return NULL;
    while (' ' == *text || '\t' == *text)
        ++text;
    const int negative = '-' == *text;
    if (negative && !allow_negative)
        return tca_parse_status_string(TCA_PARSE_NEGATIVE);
    if (negative)
        ++text;
    if ('0' == text[0] && ('x' == text[1] || 'X' == text[1]))
        return NULL; /* Open MPI reads hex */
    uint64_t n = 0;
    const tca_parse_status st = tca_parse_size(text, 1, &n);
    if (TCA_PARSE_OK != st)
        return tca_parse_status_string(st);
    if (negative && n > (uint64_t) INT64_MAX)
        return tca_parse_status_string(TCA_PARSE_OVERFLOW);
    const uint64_t bits = negative ? (uint64_t) (-(int64_t) n) : n;
    if (compare && bits != value_bits)
        return "outside what the parameter's type holds (Open MPI kept another value)";
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

/* 1: no problem with the text (problem NULL) and within the range (neither
 * below nor above).  0: help shown naming the parameter and the problem. */
static inline int tca_mca_verdict(const char *help_file, const char *name, const char *shown,
                                  const char *problem, int below, int above, const char *allowed) {
    if (NULL == problem && (below || above))
        problem = below ? "below the minimum" : "above the maximum";
    if (NULL == problem)
        return 1;
    tca_mca_show_invalid(help_file, name, shown, problem, allowed);
    return 0;
}

/* 1: value (an unsigned parameter as Open MPI read it) is in [min, max] and
 * was written as a number.  0: help shown naming the parameter. */
static inline int tca_mca_check_size_as(const char *help_file, const char *name, uint64_t value,
                                        uint64_t min, uint64_t max, const char *allowed,
                                        int compare) {
    char shown[32];
    snprintf(shown, sizeof(shown), "%" PRIu64, value);
    return tca_mca_verdict(help_file, name, shown, tca_mca_text_problem(name, 0, value, compare),
                           value<min, value> max, allowed);
}

static inline int tca_mca_check_size(const char *help_file, const char *name, uint64_t value,
                                     uint64_t min, uint64_t max, const char *allowed) {
    return tca_mca_check_size_as(help_file, name, value, min, max, allowed, 1);
}

/* For a value the BTL base changes after reading it (mca_btl_base_param_verify
 * turns a put limit of 0 into SIZE_MAX and raises min_rdma_pipeline_size):
 * the text is checked, but need not equal the value. */
static inline int tca_mca_check_size_adjusted(const char *help_file, const char *name,
                                              uint64_t value, uint64_t min, uint64_t max,
                                              const char *allowed) {
    return tca_mca_check_size_as(help_file, name, value, min, max, allowed, 0);
}

/* The same for a signed parameter. */
static inline int tca_mca_check_int(const char *help_file, const char *name, int64_t value,
                                    int64_t min, int64_t max, const char *allowed) {
    char shown[32];
    snprintf(shown, sizeof(shown), "%" PRId64, value);
    return tca_mca_verdict(help_file, name, shown,
                           tca_mca_text_problem(name, min < 0, (uint64_t) value, 1),
                           value<min, value> max, allowed);
}

/* 1: the text of OMPI_MCA_<name>, if set there, is one of the enumerators
 * (or its number).  Open MPI refuses an unknown one but keeps the default, so
 * a typo would silently run in another mode: 0, help shown, instead. */
static inline int tca_mca_check_enum(const char *help_file, const char *name,
                                     const char *const *names, int count, const char *allowed) {
    char var[256];
    snprintf(var, sizeof(var), "OMPI_MCA_%s", name);
    const char *text = getenv(var);
    if (NULL == text)
        return 1;
    for (int i = 0; i < count; ++i) {
        char number[16];
        snprintf(number, sizeof(number), "%d", i);
        if (0 == strcasecmp(text, names[i]) || 0 == strcmp(text, number))
            return 1;
    }
    tca_show_help(help_file, "invalid-param", name, text, "not one of the names", allowed);
    return 0;
}

/* 1: the variable holds Open MPI's default, not a value the user set (where
 * the component may choose one by the device); also where it is unknown. */
static inline int tca_mca_var_is_default(const char *project, const char *framework,
                                         const char *component, const char *name) {
    mca_base_var_source_t source;
    const int index = mca_base_var_find(project, framework, component, name);
    return index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, NULL, &source, NULL) ||
           MCA_BASE_VAR_SOURCE_DEFAULT == source;
}

#endif /* TCA_MCA_CHECK_H */
