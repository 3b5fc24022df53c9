#!/bin/sh
# install_check.sh - `make install` (into a staging DESTDIR) installs
# tca-mpirun, tca_info, both libraries, tca.h and both components; the
# components load from there (their rpath finds the library), and the
# installed tca-mpirun uses the installed component directory.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TCA_COMPONENT_DIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

if ! ${MAKE:-make} install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    fail "make install DESTDIR=... failed"
    exit 1
fi
find "$tmp/root" -type f | sed "s|^$tmp/root||" | sort

btl=$(find "$tmp/root" -name mca_btl_tca.so)
[ -n "$btl" ] || { fail "mca_btl_tca.so not installed"; exit 1; }
staged_components=${btl%/mca_btl_tca.so}
componentdir=${staged_components#"$tmp/root"}
staged_lib=${staged_components%/*}
[ -f "$staged_components/mca_coll_tca.so" ] || fail "mca_coll_tca.so not beside mca_btl_tca.so"
# The components find the common library one level up ($ORIGIN/..).
ls "$staged_lib"/libtca.so* >/dev/null 2>&1 || fail "libtca.so not in $staged_lib"
[ -f "$staged_lib/libtcacomm.a" ] || fail "libtcacomm.a not in $staged_lib"
[ -f "$staged_lib/pkgconfig/tca.pc" ] || fail "tca.pc not in $staged_lib/pkgconfig"
for h in tca.h tca-api.h tca-help.h mpi-help.h cuda-help.h; do
    [ -n "$(find "$tmp/root" -name "$h")" ] || fail "$h not installed"
done
# libtca exports the TCA API and nothing else.
others=$(nm -D --defined-only "$staged_lib"/libtca.so | awk '$2 ~ /^[TDBVW]$/ && $3 !~ /^tca/ {print $3}')
[ -z "$others" ] || fail "libtca.so exports non-tca symbols: $others"
nm -D --defined-only "$staged_lib"/libtca.so | grep -q ' T tcaSendPIO$' || fail "libtca.so lacks tcaSendPIO"
# A user's build: pkg-config's flags (plus -ltcacomm) compile and link a
# tca-help.h program; it runs with only libtca's directory on LD_LIBRARY_PATH.
if command -v pkg-config >/dev/null 2>&1; then
    flags=$(PKG_CONFIG_SYSROOT_DIR="$tmp/root" PKG_CONFIG_PATH="$staged_lib/pkgconfig" pkg-config --cflags --libs tca) ||
        fail "pkg-config does not know tca"
    echo "pkg-config --cflags --libs tca: $flags"
    printf '%s\n' '#include <mpi-help.h>' '#include <tca-help.h>' \
        'int main(int c, char **v) { MPI_SAFE_CALL(MPI_Init(&c, &v)); printf("%s\n", TCA_LIB_VERSION);' \
        '  if (c < 0) { TCA_SAFE_CALL(tcaInit()); tcaCreateHandleList(NULL, 0, NULL, 0); }' '  MPI_Finalize(); return 0; }' >"$tmp/user.c"
    # shellcheck disable=SC2086
    if ${MPICC:-mpicc} -std=c99 -Wall -Werror "$tmp/user.c" -o "$tmp/user" $flags -ltcacomm >"$tmp/cc.log" 2>&1; then
        out=$(LD_LIBRARY_PATH="$staged_lib" "$tmp/user" 2>&1) || fail "the pkg-config-built program does not run: $out"
        LD_LIBRARY_PATH="$staged_lib" ldd "$tmp/user" | grep -q "$staged_lib/libtca.so" || fail "the program does not load the installed libtca: $(LD_LIBRARY_PATH="$staged_lib" ldd "$tmp/user")"
    else
        cat "$tmp/cc.log"; fail "a tca-help.h program does not build with pkg-config's flags and -ltcacomm"
    fi
fi
# Every help file of the components (opal_show_help texts).
for h in $(cd "${srcdir:-.}" && find opal ompi -name 'help-*.txt'); do
    [ -n "$(find "$tmp/root" -name "${h##*/}")" ] || fail "${h##*/} not installed"
done

run=$(find "$tmp/root" -name tca-mpirun)
[ -n "$run" ] && [ -x "$run" ] || { fail "tca-mpirun not installed (or not executable)"; exit 1; }
[ -x "${run%/*}/tca_info" ] || fail "tca_info not beside tca-mpirun"
grep -qx "installed_dir=\"$componentdir\"" "$run" || fail "installed tca-mpirun does not name $componentdir: $(grep '^installed_dir=' "$run")"

# Staged, not yet at $componentdir: the installed script must look there (and
# say so), not in a build tree.
if [ ! -e "$componentdir/mca_btl_tca.so" ]; then
    out=$("$run" -np 1 true 2>&1) && fail "installed tca-mpirun ran without its components"
    echo "$out" | grep -q "not found in $componentdir" || fail "installed tca-mpirun did not look in $componentdir: $out"
fi
# The staged components load (ompi_info under tca-mpirun lists their parameters).
out=$(TCA_COMPONENT_DIR="$staged_components" timeout 60 "$run" -np 1 ompi_info --parsable --param all tca --level 9 2>&1)
echo "$out" | grep -q '^mca:btl:tca:param:btl_tca_eager_limit:' || fail "installed btl tca does not load: $(echo "$out" | tail -3)"
echo "$out" | grep -q '^mca:coll:tca:param:coll_tca_priority:' || fail "installed coll tca does not load: $(echo "$out" | tail -3)"
[ $status -eq 0 ] && echo "ok: installed into $componentdir and loadable"
exit $status
