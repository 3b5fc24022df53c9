# -*- shell-script -*-
#
# opal/mca/common/tca/configure.m4 - whether Open MPI builds the TCA device
# layer (libtca) and the TCA session btl tca and coll tca share, when this
# directory sits in Open MPI's source tree (scripts/ompi-in-tree.sh).
#
# --with-tca (default: build where possible) / --without-tca.  The TCA code is
# C++20: without such a compiler the three TCA components are skipped with a
# warning and Open MPI builds as it would without them.

# Always a DSO: libtca and the components are C++, and libstdc++ must not be
# linked into libopen-pal / libmpi (nor C++ sources into their link).
AC_DEFUN([MCA_opal_common_tca_COMPILE_MODE], [
    AC_MSG_CHECKING([for MCA component $2:$3 compile mode])
    $4="dso"
    # Open MPI 5.0.x's MCA_COMPONENT_COMPILE_MODE reads the answer through one
    # indirection too many (it copies the variable that $4's value names):
    # the variable named dso must say dso as well.
    dso="dso"
    AC_MSG_RESULT([$$4 (C++: never linked into Open MPI's libraries)])
])

# MCA_opal_common_tca_CONFIG([action-if-can-compile], [action-if-cant-compile])
AC_DEFUN([MCA_opal_common_tca_CONFIG],[
    AC_CONFIG_FILES([opal/mca/common/tca/Makefile])
    OPAL_VAR_SCOPE_PUSH([common_tca_save_CXXFLAGS common_tca_cuda_dir common_tca_cxx_opt common_tca_word])

    AC_ARG_WITH([tca],
        [AS_HELP_STRING([--with-tca],
            [Build the TCA transport (btl tca, coll tca and libtca; needs a C++20 compiler).
             Default: build it where it can be built; --without-tca leaves it out.])])

    opal_common_tca_happy=no
    AS_IF([test "$with_tca" = "no"],
          [AC_MSG_NOTICE([TCA transport: disabled (--without-tca)])],
          [AC_LANG_PUSH([C++])
           AC_MSG_CHECKING([whether $CXX compiles C++20 for the TCA transport])
           common_tca_save_CXXFLAGS=$CXXFLAGS
           CXXFLAGS="$CXXFLAGS -std=c++20"
           AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <span>
#include <bit>
#include <atomic>]], [[std::span<int> s; std::atomic<unsigned> a{3u}; return std::bit_ceil(a.load()) == 4u ? 0 : 1;]])],
                             [opal_common_tca_happy=yes], [opal_common_tca_happy=no])
           CXXFLAGS=$common_tca_save_CXXFLAGS
           AC_LANG_POP([C++])
           AC_MSG_RESULT([$opal_common_tca_happy])
           AS_IF([test "$opal_common_tca_happy" = "no"],
                 [AC_MSG_WARN([TCA transport: no C++20 compiler ($CXX); btl tca, coll tca and libtca are skipped])])])

    # GPU buffers: libtca finds the CUDA runtime at run time, compiled against
    # the toolkit Open MPI was configured with (OPAL_CHECK_CUDA).
    common_tca_CPPFLAGS="-DTCA_HAVE_PMIX=1"
    AS_IF([test "$opal_common_tca_happy" = "yes"],
          [OPAL_CHECK_CUDA([common_tca])
           AS_IF([test "x$CUDA_SUPPORT" = "x1" && test -n "$opal_cuda_incdir"],
                 [common_tca_cuda_dir=`dirname "$opal_cuda_incdir"`
                  common_tca_CPPFLAGS="$common_tca_CPPFLAGS -DTCA_HAVE_CUDA=1 -I$opal_cuda_incdir"
                  common_tca_CPPFLAGS="$common_tca_CPPFLAGS -DTCA_CUDA_LIBDIR=\\\"$common_tca_cuda_dir/lib64\\\""])])

    # The ucx device (TCA_DEVICE=ucx), a plugin beside libtca, where Open MPI
    # found UCX.
    common_tca_ucx_happy=no
    AS_IF([test "$opal_common_tca_happy" = "yes"],
          [OMPI_CHECK_UCX([common_tca_ucx], [common_tca_ucx_happy=yes], [common_tca_ucx_happy=no])])
    AM_CONDITIONAL([MCA_common_tca_UCX_DEVICE], [test "$common_tca_ucx_happy" = "yes"])

    # Optimization of the C++ core.  Open MPI's configure makes sure its C
    # flags optimize (-O3 with GNU compilers, unless --enable-debug or the
    # builder's CFLAGS chose) but leaves CXXFLAGS as given: without this the
    # core (libtca, btl tca's and coll tca's C++) builds with no -O at all,
    # and a message path of inlined templates runs several times slower.
    # The C flags' -O level goes into common_tca_CXXFLAGS (-O2 where they
    # have none, and none in a debug build); an -O in the builder's CXXFLAGS
    # wins (automake puts CXXFLAGS after AM_CXXFLAGS).
    common_tca_CXXFLAGS=
    AS_IF([test "$opal_common_tca_happy" = "yes"],
          [AC_MSG_CHECKING([for the TCA transport's C++ optimization flags])
           common_tca_cxx_opt=
           for common_tca_word in $CXXFLAGS; do
               AS_CASE([$common_tca_word], [-O|-O@<:@0-9sgz@:>@|-Ofast], [common_tca_cxx_opt=$common_tca_word])
           done
           AS_IF([test -n "$common_tca_cxx_opt"],
                 [AC_MSG_RESULT([$common_tca_cxx_opt (from CXXFLAGS)])],
                 [for common_tca_word in $CFLAGS; do
                      AS_CASE([$common_tca_word], [-O|-O@<:@0-9sgz@:>@|-Ofast], [common_tca_CXXFLAGS=$common_tca_word])
                  done
                  AS_IF([test -n "$common_tca_CXXFLAGS"],
                        [AC_MSG_RESULT([$common_tca_CXXFLAGS (the C flags' level)])],
                        [test "$WANT_DEBUG" = "1"],
                        [AC_MSG_RESULT([none (debug build)])],
                        [common_tca_CXXFLAGS=-O2
                         AC_MSG_RESULT([$common_tca_CXXFLAGS (neither CFLAGS nor CXXFLAGS set a level)])])])])

    AS_IF([test "$opal_common_tca_happy" = "yes"], [$1], [$2])

    AC_SUBST([common_tca_CPPFLAGS])
    AC_SUBST([common_tca_CXXFLAGS])
    AC_SUBST([common_tca_ucx_CPPFLAGS])
    AC_SUBST([common_tca_ucx_LDFLAGS])
    AC_SUBST([common_tca_ucx_LIBS])
    OPAL_VAR_SCOPE_POP
])dnl
