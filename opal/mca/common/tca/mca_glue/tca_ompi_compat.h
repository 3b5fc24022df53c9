/*
 * tca_ompi_compat.h - every difference between the Open MPI 4.1 and 5.0
 * interfaces that btl tca, coll tca and the TCA session use, in one place.
 * The glue includes this header instead of the headers that moved, and uses
 * the TCA_OMPI_* names below wherever the two releases name a thing
 * differently; nothing else in the glue tests the version.
 *
 * Keyed on OPAL_MAJOR_VERSION (opal_config.h of both releases; the same as
 * OMPI_MAJOR_VERSION, which the opal-level btl cannot see).  What changed
 * and why it matters: ../shared/ompi5-notes.md.
 */
#ifndef TCA_OMPI_COMPAT_H
#define TCA_OMPI_COMPAT_H

#include "opal_config.h"

#include "opal/mca/btl/btl.h"
#include "opal/mca/rcache/rcache.h"

#if OPAL_MAJOR_VERSION >= 5
#include "opal/mca/accelerator/accelerator.h"
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/threads/mutex.h"
#else
#include "opal/mca/pmix/pmix.h"
#include "opal/threads/mutex.h"
#endif

#ifndef OPAL_CUDA_SUPPORT
#define OPAL_CUDA_SUPPORT 0
#endif
#ifndef OPAL_CUDA_GDR_SUPPORT
#define OPAL_CUDA_GDR_SUPPORT 0
#endif

#if OPAL_MAJOR_VERSION >= 5

/* Exported symbols of a component (OPAL_MODULE_DECLSPEC is gone in 5.0). */
#define TCA_OPAL_COMPONENT_DECLSPEC OPAL_DECLSPEC
#define TCA_OMPI_COMPONENT_DECLSPEC OMPI_DECLSPEC
/* coll 2.4.0: coll_agree/coll_iagree added, ft_event dropped (fields are set by name). */
#define TCA_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
/* The modex is PMIx's own API. */
#define TCA_MODEX_LOCAL PMIX_LOCAL
#define TCA_MODEX_GLOBAL PMIX_GLOBAL
#define TCA_MODEX_JOB_SIZE PMIX_JOB_SIZE
#define TCA_MODEX_UINT32 PMIX_UINT32
/* GPU memory: the accelerator framework replaces opal/cuda. */
#define TCA_BTL_FLAGS_GPU_GET MCA_BTL_FLAGS_ACCELERATOR_GET
#define TCA_BTL_ERROR_FLAGS_ADD_GPU_IPC MCA_BTL_ERROR_FLAGS_ADD_ACCELERATOR_IPC
#define TCA_RCACHE_FLAGS_GPU_MEM MCA_RCACHE_FLAGS_ACCELERATOR_MEM

/* Asks the launcher to remove a file when the job ends, aborted or not. */
static inline void tca_ompi_register_cleanup(char *path) {
    (void) opal_pmix_register_cleanup(path, false, false, false);
}

/* 1: Open MPI's accelerator framework says the buffer is device memory, 0:
 * host memory; the TCA core then never asks CUDA about host buffers. */
static inline int tca_ompi_buffer_on_gpu(const void *buffer) {
    uint64_t flags = 0;
    int dev_id = MCA_ACCELERATOR_NO_DEVICE_ID;
    return opal_accelerator.check_addr(buffer, &dev_id, &flags) > 0;
}

/* GPU support starts in opal_init (the accelerator framework): nothing to do. */
static inline int tca_ompi_gpu_init(void) {
    return 0;
}
static inline void tca_ompi_gpu_fini(void) {}

/* One received message to ob1's (or another client's) handler: 5.0 passes a
 * receive descriptor carrying the endpoint, tag and callback data. */
static inline void tca_btl_upcall(const mca_btl_active_message_callback_t *reg,
                                  struct mca_btl_base_module_t *btl,
                                  struct mca_btl_base_endpoint_t *endpoint, mca_btl_base_tag_t tag,
                                  mca_btl_base_segment_t *segment) {
    const mca_btl_base_receive_descriptor_t desc = {.endpoint = endpoint,
                                                    .des_segments = segment,
                                                    .des_segment_count = 1,
                                                    .tag = tag,
                                                    .cbdata = reg->cbdata};
    reg->cbfunc(btl, &desc);
}

#else /* Open MPI 4.1 */

#if OPAL_CUDA_SUPPORT
#include "opal/mca/common/cuda/common_cuda.h"
#endif

#define TCA_OPAL_COMPONENT_DECLSPEC OPAL_MODULE_DECLSPEC
#define TCA_OMPI_COMPONENT_DECLSPEC OMPI_MODULE_DECLSPEC
#define TCA_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define TCA_MODEX_LOCAL OPAL_PMIX_LOCAL
#define TCA_MODEX_GLOBAL OPAL_PMIX_GLOBAL
#define TCA_MODEX_JOB_SIZE OPAL_PMIX_JOB_SIZE
#define TCA_MODEX_UINT32 OPAL_UINT32
#if OPAL_CUDA_SUPPORT
#define TCA_BTL_FLAGS_GPU_GET MCA_BTL_FLAGS_CUDA_GET
#define TCA_BTL_ERROR_FLAGS_ADD_GPU_IPC MCA_BTL_ERROR_FLAGS_ADD_CUDA_IPC
#endif
#if OPAL_CUDA_GDR_SUPPORT
#define TCA_RCACHE_FLAGS_GPU_MEM MCA_RCACHE_FLAGS_CUDA_GPU_MEM
#endif

static inline void tca_ompi_register_cleanup(char *path) {
    if (NULL != opal_pmix.register_cleanup)
        (void) opal_pmix.register_cleanup(path, false, false, false);
}

/* -1: not known here; the TCA core asks CUDA itself (4.1 has no accelerator
 * framework to ask). */
static inline int tca_ompi_buffer_on_gpu(const void *buffer) {
    (void) buffer;
    return -1;
}

/* The convertor recognises GPU buffers (and packs them with CUDA copies) only
 * once Open MPI's common CUDA code is initialised; smcuda starts it from its
 * init too.  Without libcuda (opal_warn_on_missing_libcuda=0 on GPU-less
 * machines) it leaves CUDA off and every buffer is host memory.  Reference
 * counted: smcuda's fini may run too. */
static inline int tca_ompi_gpu_init(void) {
#if OPAL_CUDA_SUPPORT
    (void) mca_common_cuda_stage_one_init();
    return 1;
#else
    return 0;
#endif
}
static inline void tca_ompi_gpu_fini(void) {
#if OPAL_CUDA_SUPPORT
    mca_common_cuda_fini();
#endif
}

static inline void tca_btl_upcall(const mca_btl_active_message_callback_t *reg,
                                  struct mca_btl_base_module_t *btl,
                                  struct mca_btl_base_endpoint_t *endpoint, mca_btl_base_tag_t tag,
                                  mca_btl_base_segment_t *segment) {
    mca_btl_base_descriptor_t desc = {.des_segments = segment, .des_segment_count = 1};
    (void) endpoint;
    reg->cbfunc(btl, tag, &desc, reg->cbdata);
}

#endif /* OPAL_MAJOR_VERSION */

#endif /* TCA_OMPI_COMPAT_H */
