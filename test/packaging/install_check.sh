#!/bin/sh
# install_check.sh - `make install` (into a staging DESTDIR) installs
# tca-mpirun, tca_info, both libraries, tca.h and both components; the
# components load from there (their rpath finds the library), and the
# installed tca-mpirun uses the installed component directory.  Then the
# same for `make install prefix=DIR` (the README offers it; libtool refused
# to relink the components for another directory), and from both installs
# an MPI ping-pong over btl tca and a refusal that prints the component's own
# help text.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset TCA_COMPONENT_DIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

# Both installs run in a copy of this build tree: installing, libtool links
# libmca_common_tca and the components again in the tree, and meanwhile its
# .libs holds a half-written library - an MPI test running beside this one
# failed to load it ("file too short").  The copy's .la files name the copy,
# so that happens there.  (A VPATH build installs in place: the copy would
# need its sources.)
build=$(pwd)
installer=$build
if [ "${srcdir:-.}" = . ]; then
    mkdir "$tmp/tree"
    tar -cf - --exclude=./.git --exclude=./build . | (cd "$tmp/tree" && tar -xpf -)
    find "$tmp/tree" -name '*.la' -exec sed -i "s|$build|$tmp/tree|g" {} +
    installer=$tmp/tree
fi
if ! (cd "$installer" && ${MAKE:-make} install DESTDIR="$tmp/root") >"$tmp/install.log" 2>&1; then
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
# libtca exports the TCA API and, for its device plugins, the C++ pieces
# marked TCA_PLUGIN_API (namespace tca), nothing else (no std instantiation).
others=$(nm -D --defined-only "$staged_lib"/libtca.so | awk '$2 ~ /^[TDBVW]$/ && $3 !~ /^tca/ {print $3}' |
    c++filt | grep -v '^tca::')
[ -z "$others" ] || fail "libtca.so exports symbols outside the tca API and namespace: $others"
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
[ -x "${run%/*}/tca_device_bench" ] || fail "tca_device_bench not beside tca-mpirun"
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

# run_from WHAT TCA-MPIRUN [VAR=VALUE]: a ping-pong over btl tca (tca-mpirun's
# default btl tca,self: nothing else could carry it), then a value btl tca
# refuses, whose message must come from the installed help file.
run_from() {
    what=$1 tca_mpirun=$2
    shift 2
    if [ ! -x "$build/tca_p2p_test" ]; then
        echo "SKIP: $what: no tca_p2p_test to run"
        return
    fi
    out=$(cd "$tmp" && env "$@" timeout 120 "$tca_mpirun" --oversubscribe --bind-to none -np 2 \
        "$build/tca_p2p_test" pingpong 2>&1 </dev/null)
    echo "$out" | grep -q "pingpong: passed" || fail "$what: ping-pong did not pass: $(echo "$out" | tail -5)"
    out=$(cd "$tmp" && env "$@" timeout 120 "$tca_mpirun" --oversubscribe --bind-to none -np 2 \
        --mca btl_tca_poll_batch 0 "$build/tca_p2p_test" pingpong 2>&1 </dev/null)
    echo "$out" | grep -q "btl_tca_poll_batch has a value btl tca cannot use" ||
        fail "$what: no help text for a refused value: $(echo "$out" | head -8)"
    ! echo "$out" | grep -q "couldn't open the help file" || fail "$what: the help file was not found"
    echo "ok: $what runs MPI and shows its help"
}
run_from "the DESTDIR install" "$run" TCA_COMPONENT_DIR="$staged_components" TCA_HELP_DIR=

# The tarball holds every file git tracks (the dist-hook compares them; it
# once missed a header and carried a GPU log committed by mistake).
mkdir "$tmp/dist"
if ${MAKE:-make} distdir distdir="$tmp/dist/tca" >"$tmp/dist.log" 2>&1; then
    echo "ok: make distdir (every tracked file in the tarball)"
else
    grep -A20 'dist-hook:' "$tmp/dist.log" | head -20
    fail "make distdir failed"
fi

# make install prefix=DIR, in the copy of this build tree (it links the
# libraries again for DIR).
if [ "$installer" = "$build" ]; then
    echo "SKIP: make install prefix=DIR (checked in an in-tree build only: the copy needs its sources)"
    exit $status
fi
prefix=$tmp/prefix
if ! (cd "$tmp/tree" && ${MAKE:-make} install prefix="$prefix") >"$tmp/install-prefix.log" 2>&1; then
    tail -20 "$tmp/install-prefix.log"
    fail "make install prefix=DIR failed"
    exit 1
fi
for f in bin/tca-mpirun bin/tca_info bin/tca_device_bench lib/tca-ompi/mca_btl_tca.so lib/tca-ompi/mca_coll_tca.so \
         share/tca-ompi/help-btl-tca.txt share/tca-ompi/help-coll-tca.txt include/tca.h lib/pkgconfig/tca.pc; do
    [ -e "$prefix/$f" ] || fail "make install prefix=DIR: $f not installed"
done
ls "$prefix"/lib/libtca.so* >/dev/null 2>&1 || fail "make install prefix=DIR: libtca.so not installed"
ls "$prefix"/lib/libmca_common_tca.so* >/dev/null 2>&1 || fail "make install prefix=DIR: libmca_common_tca.so not installed"
grep -qx "installed_dir=\"$prefix/lib/tca-ompi\"" "$prefix/bin/tca-mpirun" ||
    fail "make install prefix=DIR: tca-mpirun names $(grep '^installed_dir=' "$prefix/bin/tca-mpirun")"
grep -qx "libdir=$prefix/lib" "$prefix/lib/pkgconfig/tca.pc" || fail "make install prefix=DIR: tca.pc names another libdir"
# The components load the libtca of their own install, not another one.
for so in "$prefix"/lib/tca-ompi/mca_*_tca.so; do
    rp=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]/\1/p')
    case ":$rp:" in
    *:"$prefix/lib":* | *:'$ORIGIN/..':*) ;;
    *) fail "make install prefix=DIR: ${so##*/} has runpath '$rp'" ;;
    esac
    case ":$rp:" in *"$tmp/tree"* | *"$build"*) fail "make install prefix=DIR: ${so##*/} runpath names a build tree: $rp" ;; esac
done
run_from "the prefix=DIR install" "$prefix/bin/tca-mpirun" TCA_HELP_DIR=
[ $status -eq 0 ] && echo "ok: make install prefix=DIR"
exit $status
