/*
 * tca_error_text.h - a libtca result as the components show it in their help
 * messages: the code's text, then what libtca knows more about this thread's
 * failure (tcaGetErrorDetail: e.g. how much /dev/shm a start needed and had),
 * so the cause is in the help message itself, not only in a "tca:" line that
 * mpirun may print elsewhere.
 */
#ifndef TCA_ERROR_TEXT_H
#define TCA_ERROR_TEXT_H

#include <stdio.h>

#include "tca.h"

static inline const char *tca_error_text(tcaResult r, char *buf, size_t len) {
    char detail[512];
    if (tcaSuccess != tcaGetErrorDetail(detail, sizeof(detail)) || '\0' == detail[0])
        snprintf(buf, len, "%s", tcaGetErrorString(r));
    else
        snprintf(buf, len, "%s\n          %s", tcaGetErrorString(r), detail);
    return buf;
}

#endif /* TCA_ERROR_TEXT_H */
