/*
 * tca-api.h - the TCA library header under its published name.
 *
 * Programs written for PEACH2's libtca include this (or tca-help.h, which
 * includes it) and link -ltca.  It is tca.h (types, functions, extensions)
 * plus the published spellings and vocabulary: tcaresult and TCA_SUCCESS,
 * TCA_LIB_VERSION, the PIO API, tcaDMADescInt_Init, and the reduction
 * vocabulary (tcaOp, tcaDataType).  Includable from C99 and C++ (C linkage),
 * in any order with the helper headers, any number of times.
 *
 * Deliberately absent, because programs define or declare them themselves:
 * tcaCreateHandleList (declared by tca-help.h; a program that includes only
 * this header declares it with its own pointer type), TCA_SAFE_CALL,
 * CUDA_SAFE_CALL, TCA_CHECK, CUDA_CHECK, and type-suffixed TCA_OP_<type> names.
 */
#ifndef TCA_API_H
#define TCA_API_H

#include <stddef.h>    /* size_t */
#include <sys/types.h> /* off_t */

#include "tca.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A string, printed by programs with %s: the library, not the device a run
 * uses (TCA_DEVICE or tcaQueryBackendChoice says that). */
#define TCA_LIB_VERSION "1.0 (tca-ompi: loopback and ucx devices)"

/* Published result spellings.  Macros, not enumerators: they have the type
 * tcaresult itself, so C++ compares and returns them without enum warnings. */
#define TCA_SUCCESS tcaSuccess
#define TCA_ERROR_INVALID_VALUE tcaErrorInvalidValue
#define TCA_ERROR_OUT_OF_MEMORY tcaErrorNoMemory
#define TCA_ERROR_NOT_SUPPORTED tcaErrorNotSupported

/* Descriptor flags as a named type (an int: an OR of the tcaDMA* flags). */
typedef int tcaDMAFlag;

/* ---- reduction vocabulary ----
 * No library function takes these; programs use them for their own CPU-side
 * reductions and index arrays with them, so the values are fixed:
 * tcaOp runs 0..TCA_OP_NOOP; a tcaDataType is (element size << 8) | index,
 * the indices 0..14 distinct, TCA_LONG_DOUBLE the largest. */
typedef enum tcaOp {
    TCA_OP_SUM = 0,
    TCA_OP_PROD = 1,
    TCA_OP_BAND = 2,
    TCA_OP_LAND = 3,
    TCA_OP_BOR = 4,
    TCA_OP_LOR = 5,
    TCA_OP_BXOR = 6,
    TCA_OP_LXOR = 7,
    TCA_OP_MAX = 8,
    TCA_OP_MIN = 9,
    TCA_OP_NOOP = 10
} tcaOp;

#define TCA_DATA_TYPE_(size, index) ((int) ((size) << 8) | (index))
typedef enum tcaDataType {
    TCA_CHAR = TCA_DATA_TYPE_(sizeof(char), 0),
    TCA_SIGNED_CHAR = TCA_DATA_TYPE_(sizeof(signed char), 1),
    TCA_UNSIGNED_CHAR = TCA_DATA_TYPE_(sizeof(unsigned char), 2),
    TCA_BYTE = TCA_DATA_TYPE_(1, 3),
    TCA_SHORT = TCA_DATA_TYPE_(sizeof(short), 4),
    TCA_UNSIGNED_SHORT = TCA_DATA_TYPE_(sizeof(unsigned short), 5),
    TCA_INT = TCA_DATA_TYPE_(sizeof(int), 6),
    TCA_UNSIGNED = TCA_DATA_TYPE_(sizeof(unsigned), 7),
    TCA_LONG = TCA_DATA_TYPE_(sizeof(long), 8),
    TCA_UNSIGNED_LONG = TCA_DATA_TYPE_(sizeof(unsigned long), 9),
    TCA_LONG_LONG = TCA_DATA_TYPE_(sizeof(long long), 10),
    TCA_UNSIGNED_LONG_LONG = TCA_DATA_TYPE_(sizeof(unsigned long long), 11),
    TCA_FLOAT = TCA_DATA_TYPE_(sizeof(float), 12),
    TCA_DOUBLE = TCA_DATA_TYPE_(sizeof(double), 13),
    TCA_LONG_DOUBLE = TCA_DATA_TYPE_(sizeof(long double), 14)
} tcaDataType;
#undef TCA_DATA_TYPE_

/* ---- PIO: CPU stores into a window on another node's host memory ----
 * A window is a plain value (programs malloc arrays of them and never free
 * them through the library). */
typedef struct tcaPIOHandle {
    tcaHandle remote;     /* the memory the window lies in */
    uint64_t offset;      /* window start inside `remote` */
    uint64_t size;        /* declared window size (informational, see tcaSendPIO) */
    uint64_t reserved[2]; /* zero */
} tcaPIOHandle;

/* Open a window of `size` bytes at `offset` in the memory named by `remote`
 * (any node's handle, usually a peer's tcaMemoryCPU buffer).  The window
 * must lie inside the registration (tcaErrorOutOfRange otherwise). */
TCA_API tcaresult tcaSetPIORegion(tcaPIOHandle *pio, tcaHandle *remote, off_t offset, size_t size);
/* Store `size` bytes from `src` at window offset `offset`.  The offset may run
 * past the declared window size, as long as the bytes stay inside the remote
 * handle's registration (else tcaErrorOutOfRange).  Ordering: the message's
 * final 8 bytes become visible only after all its other bytes, and an
 * 8-byte-aligned final word is stored whole (a marker word may be polled). */
TCA_API tcaresult tcaSendPIO(tcaPIOHandle *pio, size_t offset, void *src, size_t size);
/* Make every earlier tcaSendPIO of this process visible (a store fence;
 * tcaSendPIO already returns with its bytes visible on the loopback device). */
TCA_API tcaresult tcaSendPIOCommit(void);

/* Switch descriptor handling to the board's internal memory.  The loopback
 * device always behaves as if it had been called: success, no effect. */
TCA_API tcaresult tcaDMADescInt_Init(void);

#ifdef __cplusplus
}
#endif

#endif /* TCA_API_H */
