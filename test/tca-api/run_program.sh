#!/bin/sh
# run_program.sh - build and run a published-style TCA program the way its
# users do: against the *installed* headers and libraries, with
#   mpicc -std=c99 -Wall -O3 -I<prefix>/include prog.c -L<prefix>/lib -ltca -ltcacomm [LIBS]
# (GPU programs add -I<CUDA>/include -L<CUDA>/lib64 -lcudart), run by plain
#   mpirun --oversubscribe -np N ./prog
# with only libtca's directory on LD_LIBRARY_PATH, at each N of NP, then once
# more with the timing model on (TCA_TIMING=1).
#
# Usage (from the top build directory):
#   test/tca-api/run_program.sh CASE.tca       (make check's log compiler)
#   test/tca-api/run_program.sh PROG.c [N...]  (by hand; N default 2 4 8)
# A case file is sourced; it may set
#   PROG=file.c         the program (default: the case's name with .c, beside it)
#   NP="2 4 8"          rank counts, one run each
#   TIMING_NP=2         ranks of the TCA_TIMING=1 run ("" = none; default: first of NP)
#   LIBS=-lm            extra link flags after -ltca -ltcacomm
#   GPU=1               a CUDA program: compiled with the CUDA headers and -lcudart
#                       (exit 77, skipped, where this build has no CUDA)
#   ARGS="..."          program arguments
#   MAX_SECONDS=180     per run
#   EXPECT=regex        the output of every run must match it
#   ALLOW_WARNINGS=1    compiler warnings do not fail the test (by default they do)
#   DEVICE=ucx          every run on the ucx device (TCA_DEVICE=ucx, UCX over
#                       UCX_TLS=tcp,self, as between hosts), the timing-model
#                       run too; skipped (77) where this build has no ucx device
#   DEVICE_UCX_TLS=all  with DEVICE=ucx: UCX_TLS of the runs (default tcp,self;
#                       "all": UCX_TLS as the caller left it, so Open MPI's own
#                       pml ucx may run beside the device)
# The private installation is made (once, under a lock) by
# `make test/tca-api/stage.stamp`: DESTDIR=test/tca-api/stage, whose paths are
# in test/tca-api/stage.env.  A program exiting 77 on every rank (e.g. "SKIP:
# no GPU") skips the test.
top=$(pwd)
srcdir=${srcdir:-.}
arg=${1:?usage: run_program.sh CASE.tca | PROG.c [NP...]}
shift
PROG= NP="2 4 8" TIMING_NP=unset LIBS= GPU=0 ARGS= MAX_SECONDS=180 EXPECT= ALLOW_WARNINGS=0 DEVICE=
DEVICE_UCX_TLS=tcp,self
case "$arg" in
*.c) PROG=$arg; [ $# -gt 0 ] && NP="$*" ;;
*) . "$arg"
   dir=$(dirname "$arg")
   [ -n "$PROG" ] || PROG=$(basename "$arg" .tca).c
   case "$PROG" in /*) ;; *) if [ -f "$dir/$PROG" ]; then PROG="$dir/$PROG"; else PROG="$srcdir/test/tca-api/$PROG"; fi ;; esac ;;
esac
[ "$TIMING_NP" = unset ] && TIMING_NP=${NP%% *}
[ -f "$PROG" ] || { echo "FAIL: no program $PROG"; exit 1; }

# The private installation (serialised: tests run in parallel).
mkdir -p "$top/test/tca-api"
if ! flock "$top/test/tca-api/stage.lock" ${MAKE:-make} -s test/tca-api/stage.stamp >"$top/test/tca-api/stage.lock.log" 2>&1; then
    cat "$top/test/tca-api/stage.lock.log"
    echo "FAIL: could not install into test/tca-api/stage (make test/tca-api/stage.stamp)"
    exit 1
fi
. "$top/test/tca-api/stage.env"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exe="$tmp/$(basename "$PROG" .c)"

device_env=TCA_DEVICE=loopback
if [ "$DEVICE" = ucx ]; then
    if [ ! -f "$TCA_API_LIBDIR/tca_ucx.so" ]; then
        echo "SKIP: this build has no ucx device (UCX or PMIx headers missing at configure time)"
        exit 77
    fi
    device_env="TCA_DEVICE=ucx UCX_TLS=$DEVICE_UCX_TLS"
    [ "$DEVICE_UCX_TLS" = all ] && device_env="TCA_DEVICE=ucx"
fi

cuda_flags=
if [ "$GPU" = 1 ]; then
    if [ -z "$CUDA_DIR" ] || [ ! -f "$CUDA_DIR/include/cuda_runtime.h" ]; then
        echo "SKIP: a CUDA program, and this build has no CUDA toolkit"
        exit 77
    fi
    cuda_flags="-I$CUDA_DIR/include"
    cuda_libs="-L$CUDA_DIR/lib64 -lcudart"
fi
# As published programs are built (their Makefiles: mpicc -Wall -O3 -std=c99).
set -- "$MPICC" -std=c99 -Wall -O3 -I"$TCA_API_INCDIR" $cuda_flags "$PROG" -o "$exe" \
    -L"$TCA_API_LIBDIR" -ltca -ltcacomm $cuda_libs $LIBS
echo "build: $*"
if ! "$@" >"$tmp/cc.log" 2>&1; then
    cat "$tmp/cc.log"; echo "FAIL: does not compile against the installed headers and libraries"; exit 1
fi
if [ -s "$tmp/cc.log" ]; then
    cat "$tmp/cc.log"
    [ "$ALLOW_WARNINGS" = 1 ] || { echo "FAIL: compiler warnings"; exit 1; }
fi

# Only libtca's directory on LD_LIBRARY_PATH, as the published job scripts
# have it: libtcacomm must not be needed at run time, libtca must come from
# the installation.
LD_LIBRARY_PATH=$TCA_API_LIBDIR
export LD_LIBRARY_PATH
if ldd "$exe" | grep -q libtcacomm; then echo "FAIL: the program needs libtcacomm at run time"; exit 1; fi
got=$(ldd "$exe" | sed -n 's/.*libtca\.so[^ ]* => \([^ ]*\).*/\1/p')
case "$got" in "$TCA_API_LIBDIR"/*) ;; *) echo "FAIL: libtca resolves to '$got', not the installation"; exit 1 ;; esac

shm_before="$tmp/shm_before"
ls /dev/shm 2>/dev/null | grep '^tca-' >"$shm_before"
status=0 ran=0 skipped=0
# run LABEL NP [ENV...]
run() {
    label=$1 np=$2
    shift 2
    echo "== $label: mpirun --oversubscribe -np $np $(basename "$exe") $ARGS"
    start=$(date +%s)
    # shellcheck disable=SC2086
    env "$@" timeout "$MAX_SECONDS" "$MPIRUN" --oversubscribe -np "$np" "$exe" $ARGS </dev/null >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    echo "== $label: exit $rc after $(($(date +%s) - start)) s"
    ran=$((ran + 1))
    if [ $rc -eq 77 ]; then
        # Skipped (e.g. no GPU): the other runs would skip as well.
        [ $ran -eq 1 ] && { echo "SKIP: the program skipped itself"; exit 77; }
        skipped=$((skipped + 1)); return
    fi
    if [ $rc -ne 0 ]; then
        [ $rc -eq 124 ] && echo "FAIL: $label: no result within $MAX_SECONDS s"
        echo "FAIL: $label: exit status $rc"; status=1; return
    fi
    if [ -n "$EXPECT" ] && ! grep -Eq "$EXPECT" "$tmp/out"; then
        echo "FAIL: $label: output does not match /$EXPECT/"; status=1
    fi
}
# shellcheck disable=SC2086
for np in $NP; do run "np $np${DEVICE:+, $DEVICE device}" "$np" TCA_TIMING=0 $device_env; done
# shellcheck disable=SC2086
[ -n "$TIMING_NP" ] && run "np $TIMING_NP${DEVICE:+, $DEVICE device}, timing model on" "$TIMING_NP" TCA_TIMING=1 $device_env

# A failed run's killed ranks cannot clean up; a passing run must leave nothing.
if ! left=$(sh "$srcdir/test/shm_left_behind.sh" "$shm_before"); then
    if [ $status -eq 0 ]; then echo "FAIL: segments left behind in /dev/shm: $left"; status=1
    else echo "(removing the failed runs' segments: $left)"; fi
    for f in $left; do rm -f "/dev/shm/$f"; done
fi
if [ $status -eq 0 ] && [ $skipped -gt 0 ]; then
    [ $skipped -eq $ran ] && exit 77
    echo "FAIL: skipped in some runs only"; exit 1
fi
exit $status
