#!/bin/sh
# header_check.sh - the published TCA headers (tca-api.h, tca-help.h,
# mpi-help.h, cuda-help.h) compile in every include order published programs
# use, twice over (idempotent), as C99 (mpicc -std=c99 -Wall -Werror) and as
# C++ (mpicxx); a program in the style of one that includes only tca-api.h
# and defines its own check macros, tcaCreateHandleList declaration and
# type-suffixed TCA_OP_* names compiles; the reduction vocabulary has the
# published encoding.  cuda-help.h is checked where the CUDA headers exist
# (CUDA_INCDIR), else it must stop with a message that says what is missing.
srcdir=${srcdir:-.}
inc="$srcdir/opal/mca/common/tca"
MPICC=${MPICC:-mpicc}
MPICXX=${MPICXX:-$(d=$(dirname "$(command -v "$MPICC" || echo mpicc)"); [ -x "$d/mpicxx" ] && echo "$d/mpicxx" || echo mpicxx)}
# The CUDA include directory: from configure's CUDA_CPPFLAGS (make check), else the default toolkit.
if [ -z "$CUDA_INCDIR" ]; then
    for f in ${CUDA_CPPFLAGS:-}; do case "$f" in -I*) CUDA_INCDIR=${f#-I} ;; esac; done
fi
CUDA_INCDIR=${CUDA_INCDIR:-/usr/local/cuda/include}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
have_cuda=0
[ -f "$CUDA_INCDIR/cuda_runtime.h" ] && have_cuda=1

# compile NAME FILE: as C99 and as C++, -Wall -Werror
compile() {
    for lang in c99 c++; do
        if [ $lang = c99 ]; then cc="$MPICC -std=c99 -x c"; else cc="$MPICXX -x c++"; fi
        # shellcheck disable=SC2086
        if $cc -Wall -Werror -I"$inc" -I"$CUDA_INCDIR" -c "$2" -o "$tmp/out.o" >"$tmp/err" 2>&1; then
            echo "ok ($lang): $1"
        else
            echo "FAIL ($lang): $1"; sed 's/^/    /' "$tmp/err" | head -20; status=1
        fi
    done
}

# The orders seen in published programs, then every helper header twice.
n=0
for order in "mpi-help.h cuda-help.h tca-help.h" "mpi.h tca-help.h cuda-help.h" "mpi.h tca-api.h cuda_runtime.h" \
             "tca-api.h" "tca-help.h" "cuda_runtime.h tca-api.h" "tca-help.h mpi-help.h cuda-help.h" \
             "cuda-help.h tca-help.h mpi-help.h" "tca-api.h tca-help.h mpi-help.h cuda-help.h"; do
    case "$order" in *cuda*) [ $have_cuda = 1 ] || continue ;; esac
    n=$((n + 1))
    f="$tmp/order$n.c"
    for h in $order $order; do echo "#include <$h>"; done >"$f"
    cat >>"$f" <<'PROG'
#include <stdio.h>
int main(int argc, char **argv)
{
    tcaresult r = TCA_SUCCESS;
    tcaHandle h;
    off_t off = 0;
    size_t n = sizeof h;
    (void)argc; (void)argv;
    printf("%s %d %ld %zu\n", TCA_LIB_VERSION, (int)r, (long)off, n);
    return 0;
}
PROG
    compile "$order (each twice)" "$f"
done

# The helpers' macros and tcaCreateHandleList, used as published programs do.
if [ $have_cuda = 1 ]; then cudah='#include <cuda-help.h>'; else cudah=''; fi
cat >"$tmp/helpers.c" <<PROG
#include <mpi-help.h>
$cudah
#include <tca-help.h>
int main(int argc, char **argv)
{
    tcaHandle *list = NULL;
    double *buf = NULL;
    int nprocs = 0;
    MPI_SAFE_CALL(MPI_Init(&argc, &argv));
    MPI_SAFE_CALL(MPI_Comm_size(MPI_COMM_WORLD, &nprocs));
    TCA_SAFE_CALL(tcaInit());
    TCA_SAFE_CALL(tcaMalloc((void **)&buf, 64, tcaMemoryCPU));
    tcaCreateHandleList(&list, nprocs, buf, 64);
    free(list);
    MPI_Finalize();
    return 0;
}
PROG
compile "MPI_SAFE_CALL, TCA_SAFE_CALL, tcaCreateHandleList from the helper headers" "$tmp/helpers.c"

# A program that includes only tca-api.h defines and declares these itself.
cat >"$tmp/own.c" <<'PROG'
#include <mpi.h>
#include <tca-api.h>
#define TCA_SAFE_CALL(call) do { tcaresult r_ = (call); if (TCA_SUCCESS != r_) return 1; } while (0)
#define CUDA_SAFE_CALL(call) (call)
#define TCA_CHECK(call) TCA_SAFE_CALL(call)
#define CUDA_CHECK(call) (call)
#define DMA_CH 0
#define DMAC_CH 0
#define DMA_FLAG (tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify)
#define LAST_FLAG DMA_FLAG
#define WAIT_TAG 0x100
#define COUNT 10
#define WARMUP 1
#define TIMES 10
#define IS_POW_2(x) (((x) & ((x) - 1)) == 0)
#define OP_FUNC_3OP(x) x
#define TCA_TYPE_FUNCTIONS(x) x
enum { TCA_OP_INT8, TCA_OP_UINT8, TCA_OP_INT16, TCA_OP_UINT16, TCA_OP_INT32, TCA_OP_UINT32, TCA_OP_INT64,
       TCA_OP_UINT64, TCA_OP_FLOAT, TCA_OP_DOUBLE, TCA_OP_LONG_DOUBLE, TCA_OP_TYPE_MAX };
typedef void (*tca_op_func_3op_handler_t)(void *, void *, void *, int);
void tcaCreateHandleList(tcaHandle **list, int nprocs, double *ptr, size_t size);
static const int flags = DMA_FLAG;
static int sum_int(void) { return 0; }
static int (*const op_table[TCA_OP_NOOP + 1])(void) = { [TCA_OP_SUM] = sum_int, [TCA_OP_PROD] = sum_int };
static const int type_index[(TCA_LONG_DOUBLE & 0xff) + 1] = {
    [TCA_CHAR & 0xff] = 1, [TCA_SIGNED_CHAR & 0xff] = 2, [TCA_UNSIGNED_CHAR & 0xff] = 3, [TCA_BYTE & 0xff] = 4,
    [TCA_SHORT & 0xff] = 5, [TCA_UNSIGNED_SHORT & 0xff] = 6, [TCA_INT & 0xff] = 7, [TCA_UNSIGNED & 0xff] = 8,
    [TCA_LONG & 0xff] = 9, [TCA_UNSIGNED_LONG & 0xff] = 10, [TCA_LONG_LONG & 0xff] = 11,
    [TCA_UNSIGNED_LONG_LONG & 0xff] = 12, [TCA_FLOAT & 0xff] = 13, [TCA_DOUBLE & 0xff] = 14,
    [TCA_LONG_DOUBLE & 0xff] = 15 };
int main(void)
{
    tcaOp op;
    tcaDataType t = TCA_DOUBLE;
    tcaPIOHandle *pio = (tcaPIOHandle *)malloc(sizeof(tcaPIOHandle) * 4);
    tcaDMAFlag f = tcaDMANotify | tcaDMAContinue;
    memset(&op, 0, sizeof op);
    op = TCA_OP_SUM;
    if ((t >> 8) != sizeof(double) || (TCA_LONG_DOUBLE >> 8) != sizeof(long double)) return 1;
    if (TCA_ERROR_INVALID_VALUE == TCA_SUCCESS || TCA_ERROR_OUT_OF_MEMORY == TCA_ERROR_NOT_SUPPORTED) return 1;
    TCA_SAFE_CALL(tcaDMADescInt_Init());
    TCA_SAFE_CALL(tcaSetPIORegion(&pio[0], NULL, 0, 64));
    TCA_SAFE_CALL(tcaSendPIO(&pio[0], 64, pio, 8));
    tcaSendPIOCommit();
    free(pio);
    return op_table[op]() + type_index[t & 0xff] + flags + f;
}
PROG
sed -i 's/#include <tca-api.h>/#include <tca-api.h>\n#include <stdlib.h>\n#include <string.h>/' "$tmp/own.c"
compile "a program with its own check macros and tcaCreateHandleList(double *)" "$tmp/own.c"

# Distinct type indices, TCA_LONG_DOUBLE the largest; operators 0..TCA_OP_NOOP.
cat >"$tmp/enc.c" <<'PROG'
#include <tca-api.h>
#include <stdio.h>
int main(void)
{
    const int t[] = { TCA_CHAR, TCA_SIGNED_CHAR, TCA_UNSIGNED_CHAR, TCA_BYTE, TCA_SHORT, TCA_UNSIGNED_SHORT, TCA_INT,
                      TCA_UNSIGNED, TCA_LONG, TCA_UNSIGNED_LONG, TCA_LONG_LONG, TCA_UNSIGNED_LONG_LONG, TCA_FLOAT,
                      TCA_DOUBLE, TCA_LONG_DOUBLE };
    const size_t sz[] = { sizeof(char), sizeof(signed char), sizeof(unsigned char), 1, sizeof(short),
                          sizeof(unsigned short), sizeof(int), sizeof(unsigned), sizeof(long), sizeof(unsigned long),
                          sizeof(long long), sizeof(unsigned long long), sizeof(float), sizeof(double),
                          sizeof(long double) };
    const int ops[] = { TCA_OP_SUM, TCA_OP_PROD, TCA_OP_BAND, TCA_OP_LAND, TCA_OP_BOR, TCA_OP_LOR, TCA_OP_BXOR,
                        TCA_OP_LXOR, TCA_OP_MAX, TCA_OP_MIN, TCA_OP_NOOP };
    int seen[256] = {0}, bad = 0, i;
    for (i = 0; i < 15; ++i) {
        if ((size_t)(t[i] >> 8) != sz[i]) { printf("type %d: size %d, want %zu\n", i, t[i] >> 8, sz[i]); bad = 1; }
        if (seen[t[i] & 0xff]++) { printf("type %d: index %d taken twice\n", i, t[i] & 0xff); bad = 1; }
        if ((t[i] & 0xff) > (TCA_LONG_DOUBLE & 0xff)) { printf("type %d: index above TCA_LONG_DOUBLE's\n", i); bad = 1; }
    }
    for (i = 0; i < 11; ++i)
        if (ops[i] < 0 || ops[i] > TCA_OP_NOOP || (i > 0 && ops[i] == ops[i - 1])) { printf("op %d: %d\n", i, ops[i]); bad = 1; }
    if (TCA_OP_NOOP != 10) { printf("TCA_OP_NOOP is %d\n", TCA_OP_NOOP); bad = 1; }
    return bad;
}
PROG
if gcc -std=c99 -Wall -Werror -I"$inc" "$tmp/enc.c" -o "$tmp/enc" >"$tmp/err" 2>&1 && "$tmp/enc"; then
    echo "ok: reduction vocabulary encoding"
else
    echo "FAIL: reduction vocabulary encoding"; cat "$tmp/err"; status=1
fi

# Without the CUDA headers cuda-help.h says what it needs.
printf '#include <cuda-help.h>\nint main(void) { return 0; }\n' >"$tmp/nocuda.c"
mkdir "$tmp/empty"
if gcc -std=c99 -nostdinc -isystem /usr/include -I"$inc" -c "$tmp/nocuda.c" -o "$tmp/nocuda.o" >"$tmp/err" 2>&1; then
    if [ -f /usr/include/cuda_runtime.h ]; then echo "ok: (CUDA headers in /usr/include: no missing-header case)"
    else echo "FAIL: cuda-help.h compiled without the CUDA headers"; status=1; fi
elif grep -q "cuda-help.h needs the CUDA toolkit's headers" "$tmp/err"; then
    echo "ok: cuda-help.h without the CUDA headers says what it needs"
else
    echo "FAIL: cuda-help.h without the CUDA headers: unclear error"; cat "$tmp/err"; status=1
fi
exit $status
