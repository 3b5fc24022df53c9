# -*- shell-script -*-
#
# opal/mca/btl/tca/configure.m4 - btl tca builds, inside Open MPI's source
# tree, wherever the TCA device layer does (opal/mca/common/tca/configure.m4:
# --with-tca, a C++20 compiler).

# Always a DSO: its core is C++ (see common/tca's configure.m4).
AC_DEFUN([MCA_opal_btl_tca_COMPILE_MODE], [
    AC_MSG_CHECKING([for MCA component $2:$3 compile mode])
    $4="dso"
    # Open MPI 5.0.x's MCA_COMPONENT_COMPILE_MODE reads the answer through one
    # indirection too many (it copies the variable that $4's value names):
    # the variable named dso must say dso as well.
    dso="dso"
    AC_MSG_RESULT([$$4])
])

# MCA_opal_btl_tca_CONFIG([action-if-can-compile], [action-if-cant-compile])
AC_DEFUN([MCA_opal_btl_tca_CONFIG],[
    AC_CONFIG_FILES([opal/mca/btl/tca/Makefile])
    AS_IF([test "$opal_common_tca_happy" = "yes"],
          [$1
           OPAL_MCA_CHECK_DEPENDENCY([opal], [btl], [tca], [opal], [common], [tca])],
          [$2])
])dnl
