/*
 * tca_cuda_abi.h - a component built against one Open MPI must not run inside
 * an Open MPI with other CUDA support: OPAL_CUDA_SUPPORT changes the layout
 * of structures the components share with Open MPI (mca_btl_base_module_t,
 * registrations, convertors), so a mismatch corrupts memory silently.  The
 * components compare the value they were compiled with against the running
 * library's before they touch any such structure, and decline with a help
 * message instead.
 */
#ifndef TCA_CUDA_ABI_H
#define TCA_CUDA_ABI_H

#include "opal_config.h"
#include "opal/runtime/opal_params.h"

#include <stdbool.h>

#include "tca_mca_check.h"

#ifndef OPAL_CUDA_SUPPORT
#define OPAL_CUDA_SUPPORT 0
#endif

/* Test hook: TCA_TEST_CUDA_ABI_BUILT=0|1 pretends the component was compiled
 * against an Open MPI with that CUDA support, so the refusal can be tested
 * without a second installation at hand. */
static inline bool tca_cuda_abi_compiled(void) {
    const char *v = getenv("TCA_TEST_CUDA_ABI_BUILT");
    int built = 0;
    if (TCA_PARSE_OK == tca_parse_bool(v, &built))
        return 0 != built; /* unset or not a boolean: not a test */
    return OPAL_CUDA_SUPPORT != 0;
}

/* true: safe to go on.  false: help shown, the component must decline. */
static inline bool tca_cuda_abi_check(const char *help_file, const char *component) {
    const bool compiled = tca_cuda_abi_compiled();
    if (compiled == opal_built_with_cuda_support)
        return true;
    tca_show_help(help_file, "cuda-abi-mismatch", component, compiled ? "with" : "without",
                  opal_built_with_cuda_support ? "with" : "without");
    return false;
}

#endif /* TCA_CUDA_ABI_H */
