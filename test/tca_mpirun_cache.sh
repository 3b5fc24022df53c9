#!/bin/sh
# tca_mpirun_cache.sh - scripts/tca-mpirun keeps Open MPI's answers in a cache
# file: from a cold cache, a warm one and none (TCA_CACHE_DIR where none can be
# made) it hands mpirun the same command line and environment, and the warm
# run asks neither ompi_info nor ldd.  mpirun is a stub that prints what it was
# given; ompi_info and ldd are wrappers that count their calls.
#   1. the cached facts are what ompi_info says (component path, version);
#   2. what a user sets wins, cache or not: ~/.openmpi/mca-params.conf naming
#      the component path or show_load_errors (also written after the cache
#      was), OMPI_MCA_mca_base_component_path, its synonym, its opal_ name,
#      another mca_base_* variable, show_load_errors in the environment or on
#      the command line; TCA_COMPONENT_DIR=ompi;
#   3. Open MPI 5's CUDA components (an ompi_info that answers as 5.0 does,
#      components built here that need libcuda.so.1): their load errors are
#      kept quiet while the loader finds no libcuda.so.1, and shown again as
#      soon as one appears in their RUNPATH, in LD_LIBRARY_PATH, or goes.
srcdir=${srcdir:-.}
run_script=$srcdir/scripts/tca-mpirun
status=0
fail() { echo "FAIL: $*"; status=1; }
real_ompi_info=$(command -v ompi_info) || { echo "SKIP: no ompi_info on PATH"; exit 77; }
real_ldd=$(command -v ldd) || real_ldd=
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# The environment make check sets for Open MPI 5 (test/ompi_env.sh) would hide
# what is tested here.
unset OMPI_MCA_mca_base_component_show_load_errors OMPI_MCA_mca_base_component_path \
    OMPI_MCA_mca_component_path PMIX_MCA_mca_base_component_path LD_PRELOAD
mkdir -p "$tmp/bin" "$tmp/comp" "$tmp/home"
: >"$tmp/comp/mca_btl_tca.so"
cat >"$tmp/bin/mpirun" <<'EOF'
#!/bin/sh
echo "mpirun $*"
env | grep -E '^(OMPI|PMIX)_MCA_' | sort
EOF
cat >"$tmp/bin/ompi_info" <<EOF
#!/bin/sh
echo x >>"$tmp/ompi_info.calls"
exec "$real_ompi_info" "\$@"
EOF
if [ -n "$real_ldd" ]; then
    cat >"$tmp/bin/ldd" <<EOF
#!/bin/sh
echo x >>"$tmp/ldd.calls"
exec "$real_ldd" "\$@"
EOF
fi
chmod +x "$tmp/bin/"*
calls() { [ -f "$tmp/$1.calls" ] && wc -l <"$tmp/$1.calls" || echo 0; }

# check NAME [VAR=VALUE ...] -- ARGS: without a cache, with a cold one, a warm
# one, and one written without the VAR=VALUE settings, tca-mpirun hands mpirun
# the same; the warm run asks ompi_info only where WARM_ASKS=yes (a user
# setting), and else runs no ldd either.
n=0
check() {
    name=$1; shift
    n=$((n + 1))
    envs=""
    while [ "$1" != -- ]; do envs="$envs $1"; shift; done
    shift
    # shellcheck disable=SC2086 # envs: VAR=VALUE words, no blanks in them
    ref=$(env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" \
        TCA_CACHE_DIR=/dev/null/none $envs sh "$run_script" "$@" 2>&1)
    # shellcheck disable=SC2086
    cold=$(env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" \
        TCA_CACHE_DIR="$tmp/cache$n" $envs sh "$run_script" "$@" 2>&1)
    before_info=$(calls ompi_info) before_ldd=$(calls ldd)
    # shellcheck disable=SC2086
    warm=$(env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" \
        TCA_CACHE_DIR="$tmp/cache$n" $envs sh "$run_script" "$@" 2>&1)
    asked_info=$(($(calls ompi_info) - before_info)) asked_ldd=$(($(calls ldd) - before_ldd))
    # A cache written before the user's settings (from the same files).
    env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" \
        TCA_CACHE_DIR="$tmp/pre$n" sh "$run_script" "$@" >/dev/null 2>&1
    # shellcheck disable=SC2086
    pre=$(env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" \
        TCA_CACHE_DIR="$tmp/pre$n" $envs sh "$run_script" "$@" 2>&1)
    [ "$pre" = "$ref" ] || fail "$name: a cache written before these settings gave
$pre
without one:
$ref"
    [ "$cold" = "$ref" ] || fail "$name: a cold cache gave
$cold
without one:
$ref"
    [ "$warm" = "$ref" ] || fail "$name: a warm cache gave
$warm
without one:
$ref"
    if [ "${WARM_ASKS:-no}" = no ] && [ "$asked_info" != 0 ]; then
        fail "$name: the warm run asked ompi_info $asked_info times"
    elif [ "${WARM_ASKS:-no}" = yes ] && [ "$asked_info" = 0 ]; then
        fail "$name: a user setting, and the warm run did not ask ompi_info"
    fi
    # (Where ompi_info is asked, so is ldd: a CUDA-aware Open MPI 5.)
    if [ "${WARM_ASKS:-no}" = no ] && [ "$asked_ldd" != 0 ]; then
        fail "$name: the warm run ran ldd $asked_ldd times"
    fi
    last=$ref
}

# 1. Defaults, and the facts against ompi_info.
check "defaults" -- -np 2 ./app
echo "$last" | grep -q '^mpirun ' || fail "defaults: mpirun was not run: $last"
cf=""
for f in "$tmp/cache1/mpirun/"ompi-*; do [ -f "$f" ] && cf=$f; done
if [ -z "$cf" ]; then
    fail "no cache file written in $tmp/cache1/mpirun"
else
    want=$(HOME="$tmp/home" "$real_ompi_info" --parsable --param mca base --level 9 2>/dev/null |
        sed -n 's/^mca:mca:base:param:mca_base_component_path:value:"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p')
    [ "$(sed -n 's/^path=//p' "$cf")" = "$want" ] ||
        fail "cached component path $(sed -n 's/^path=//p' "$cf"), ompi_info: $want"
    want=$("$real_ompi_info" --version 2>/dev/null | head -1)
    [ "$(sed -n 's/^version=//p' "$cf")" = "$want" ] ||
        fail "cached version $(sed -n 's/^version=//p' "$cf"), ompi_info: $want"
fi
mkdir -p "$tmp/home/.openmpi/components"
check "HOME/.openmpi/components" -- -np 2 ./app
echo "$last" | grep -q "$tmp/home/.openmpi/components:$tmp/comp" ||
    fail "HOME/.openmpi/components not on the path: $last"

# 2. What a user sets.
printf '# mca_base_component_path = /nowhere\n' >"$tmp/home/.openmpi/mca-params.conf"
check "a parameter file's comment" -- -np 2 ./app
printf 'mca_base_component_path = %s\n' "$tmp/comp" >"$tmp/home/.openmpi/mca-params.conf"
WARM_ASKS=yes check "component path in a parameter file" -- -np 2 ./app
echo "$last" | grep -q "mca_base_component_path $tmp/comp:$tmp/comp\|=$tmp/comp:$tmp/comp" ||
    fail "the parameter file's component path not used: $last"
printf 'mca_component_show_load_errors = 0\n' >"$tmp/home/.openmpi/mca-params.conf"
WARM_ASKS=yes check "show_load_errors in a parameter file" -- -np 2 ./app
rm "$tmp/home/.openmpi/mca-params.conf"
WARM_ASKS=yes check "OMPI_MCA_mca_base_component_path" OMPI_MCA_mca_base_component_path="$tmp/comp" -- -np 2 ./app
WARM_ASKS=yes check "OMPI_MCA_mca_component_path" OMPI_MCA_mca_component_path="$tmp/comp" -- -np 2 ./app
WARM_ASKS=yes check "OMPI_MCA_opal_mca_base_component_path" OMPI_MCA_opal_mca_base_component_path="$tmp/comp" -- -np 2 ./app
WARM_ASKS=yes check "another mca_base_* variable" OMPI_MCA_mca_base_param_files="$tmp/none.conf" -- -np 2 ./app
check "show_load_errors in the environment" OMPI_MCA_mca_base_component_show_load_errors=all -- -np 2 ./app
check "show_load_errors on the command line" -- --mca mca_base_component_show_load_errors all -np 2 ./app
check "user pml and btl" OMPI_MCA_pml=cm OMPI_MCA_btl=self -- -np 2 ./app
check "TCA_COMPONENT_DIR=ompi" TCA_COMPONENT_DIR=ompi -- -np 2 ./app
# A parameter file written after the cache: read at the next launch.
rm -rf "$tmp/home/.openmpi" "$tmp/late"
env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" TCA_CACHE_DIR="$tmp/late" \
    sh "$run_script" -np 1 ./app >/dev/null 2>&1
mkdir -p "$tmp/home/.openmpi"
printf 'mca_base_component_path = %s\n' "$tmp/comp" >"$tmp/home/.openmpi/mca-params.conf"
late=$(env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" TCA_CACHE_DIR="$tmp/late" \
    sh "$run_script" -np 1 ./app 2>&1)
echo "$late" | grep -q "$tmp/comp:$tmp/comp" || fail "a parameter file written after the cache was not read: $late"
rm -rf "$tmp/home/.openmpi"

# 3. Open MPI 5's CUDA components, with an ompi_info (and pmix_info) in place
# of the wrapper that answers as 5.0's does (show_load_errors a string; its
# source the environment or the parameter file where set there).
cc=${CC:-cc}
mkdir -p "$tmp/cuda" "$tmp/ompi5/lib/openmpi" "$tmp/ompi5/lib/pmix" "$tmp/home/.openmpi/components"
echo 'int tca_test_f(void) { return 0; }' >"$tmp/cuda/f.c"
if [ -z "$real_ldd" ]; then
    echo "note: no ldd: the CUDA components part skipped"
elif ! "$cc" -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$tmp/cuda/libcuda.so.1" "$tmp/cuda/f.c" 2>/dev/null; then
    echo "note: no C compiler ($cc): the CUDA components part skipped"
else
    ln -s libcuda.so.1 "$tmp/cuda/libcuda.so"
    for fc in accelerator_cuda rcache_gpusm rcache_rgpusm; do
        "$cc" -shared -fPIC -o "$tmp/ompi5/lib/openmpi/mca_$fc.so" "$tmp/cuda/f.c" -Wl,--no-as-needed \
            -L"$tmp/cuda" -lcuda -Wl,-rpath,"$tmp/rpath" || fail "cannot build a fake mca_$fc.so"
    done
    cat >"$tmp/bin/ompi_info" <<EOF
#!/bin/sh
echo x >>"$tmp/ompi_info.calls"
case "\$*" in *--version*) echo "Open MPI v5.0.7"; exit 0 ;; esac
p=mca:mca:base:param
src=default
[ -n "\${OMPI_MCA_mca_base_component_show_load_errors+set}\${OMPI_MCA_opal_mca_base_component_show_load_errors+set}" ] &&
    src=environment
grep -qs show_load_errors "\$HOME/.openmpi/mca-params.conf" && src=file
echo "\$p:mca_base_param_files:value:\$HOME/.openmpi/mca-params.conf,$tmp/ompi5/etc/openmpi-mca-params.conf"
echo "\$p:mca_base_override_param_file:value:$tmp/ompi5/etc/openmpi-mca-params-override.conf"
echo "\$p:mca_base_component_path:value:\"${tmp}/ompi5/lib/openmpi:\$HOME/.openmpi/components\""
echo "\$p:mca_base_component_path:source:default"
echo "\$p:mca_base_component_show_load_errors:value:all"
echo "\$p:mca_base_component_show_load_errors:source:\$src"
echo "\$p:mca_base_component_show_load_errors:type:string"
EOF
    printf '#!/bin/sh\necho "           Pkglibdir: %s"\n' "$tmp/ompi5/lib/pmix" >"$tmp/bin/pmix_info"
    chmod +x "$tmp/bin/"*
    mv "$tmp/cuda/libcuda.so.1" "$tmp/libcuda.so.1"
    quiet="OMPI_MCA_mca_base_component_show_load_errors=^accelerator/cuda,rcache/gpusm,rcache/rgpusm"
    check "5.0, no libcuda.so.1" -- -np 2 ./app
    echo "$last" | grep -qx "$quiet" || fail "5.0 without libcuda.so.1: not quiet: $last"
    echo "$last" | grep -qx "PMIX_MCA_mca_base_component_path=$tmp/ompi5/lib/pmix" ||
        fail "5.0: PMIx's component directory not set: $last"
    # The same cache, after a libcuda.so.1 appears in the components' RUNPATH
    # and goes again.
    c5=$tmp/cache5
    launch5() {
        env HOME="$tmp/home" PATH="$tmp/bin:$PATH" TCA_COMPONENT_DIR="$tmp/comp" TCA_CACHE_DIR="$c5" "$@" \
            sh "$run_script" -np 2 ./app 2>&1
    }
    launch5 >/dev/null
    mkdir -p "$tmp/rpath"
    cp "$tmp/libcuda.so.1" "$tmp/rpath/"
    out=$(launch5)
    echo "$out" | grep -q show_load_errors && fail "a libcuda.so.1 in the RUNPATH: still quiet: $out"
    rm "$tmp/rpath/libcuda.so.1"
    out=$(launch5)
    echo "$out" | grep -qx "$quiet" || fail "libcuda.so.1 gone from the RUNPATH: not quiet again: $out"
    mkdir -p "$tmp/ldlp"
    cp "$tmp/libcuda.so.1" "$tmp/ldlp/"
    check "5.0, libcuda.so.1 in LD_LIBRARY_PATH" LD_LIBRARY_PATH="$tmp/ldlp" -- -np 2 ./app
    echo "$last" | grep -q show_load_errors && fail "a libcuda.so.1 in LD_LIBRARY_PATH: still quiet: $last"
    out=$(launch5 LD_LIBRARY_PATH="$tmp/ldlp")
    echo "$out" | grep -q show_load_errors && fail "LD_LIBRARY_PATH with a libcuda.so.1, after a cache without: quiet: $out"
    check "5.0, show_load_errors in the environment" OMPI_MCA_mca_base_component_show_load_errors=all -- -np 2 ./app
    echo "$last" | grep -qx "OMPI_MCA_mca_base_component_show_load_errors=all" || fail "5.0: the user's show_load_errors changed: $last"
    check "5.0, opal_mca_base_component_show_load_errors" OMPI_MCA_opal_mca_base_component_show_load_errors=all -- -np 2 ./app
    echo "$last" | grep -q "^OMPI_MCA_mca_base_component_show_load_errors" && fail "5.0: set beside the user's opal_mca_*: $last"
    check "5.0, show_load_errors on the command line" -- --mca mca_component_show_load_errors all -np 2 ./app
    echo "$last" | grep -q "OMPI_MCA_mca_base_component_show_load_errors" && fail "5.0: set beside the command line's: $last"
    printf 'mca_base_component_show_load_errors = all\n' >"$tmp/home/.openmpi/mca-params.conf"
    WARM_ASKS=yes check "5.0, show_load_errors in a parameter file" -- -np 2 ./app
    echo "$last" | grep -q "OMPI_MCA_mca_base_component_show_load_errors" && fail "5.0: set beside the parameter file's: $last"
    rm "$tmp/home/.openmpi/mca-params.conf"
    rm "$tmp/ompi5/lib/openmpi/mca_rcache_gpusm.so"
    check "5.0, two CUDA components" -- -np 2 ./app
    echo "$last" | grep -qx "OMPI_MCA_mca_base_component_show_load_errors=^accelerator/cuda,rcache/rgpusm" ||
        fail "5.0 with two CUDA components: $last"
fi
[ $status -eq 0 ] && echo "PASS: tca-mpirun hands mpirun the same with a cold cache, a warm one and none; $n cases"
exit $status
