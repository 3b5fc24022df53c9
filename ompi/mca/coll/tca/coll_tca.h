/*
 * coll tca: offloaded persistent broadcast (MPIX_Bcast_init) over the TCA
 * device.  This directory is the Open MPI glue, in C because coll.h is not
 * valid C++; the planner and the engines are in tca-coll/ (C++).
 */
#ifndef MCA_COLL_TCA_H
#define MCA_COLL_TCA_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/class/opal_list.h"

#include "tca_coll_core.h"
#include "mca_glue/tca_ompi_compat.h"

BEGIN_C_DECLS

typedef struct mca_coll_tca_component_t {
    mca_coll_base_component_t super;
    int priority;
    int engine;               /* TCA_COLL_ENGINE_* */
    size_t segment_bytes;     /* pipeline segment of chains */
    size_t gpu_segment_bytes; /* the same where a rank's buffer is GPU memory */
    size_t ucx_segment_bytes; /* the same (host buffers) on the ucx device */
    size_t chain_threshold;   /* at or above: pipelined chain, below: tree */
    size_t min_bytes;         /* below: libnbc */
    size_t staging_bytes;     /* up to: staged through landing slots (parents run ahead) */
    int stage_all;            /* coll_tca_stage_all: 1, 0, -1 (where single copy is dear) */
    int host_puts_by_target;  /* the device copies host puts in by the target (tcaBackendAttr) */
    int thread_takeover_us; /* coll_tca_thread_takeover_us: -1 (1 ms, 5 ms where Open MPI yields when idle) */
    /* requests the progress function looks after */
    opal_mutex_t lock;
    opal_list_t active;
    opal_list_t freed; /* freed by the user; their resources go back once no late peer can write */
    int progress_registered;
    int session_joined;   /* this process's TCA session (common_tca_session.h) is ours to leave */
    int test_fail;        /* TCA_COLL_FAIL_*: a step the tests make fail (TCA_COLL_TEST_FAIL) */
    bool build_optimized; /* coll tca's C++ core and libtca's were compiled with optimization */
} mca_coll_tca_component_t;

/* Test hook: TCA_COLL_TEST_FAIL=post|connect|start makes that step of every
 * persistent broadcast fail as a device without resources would (the tests
 * of the request's failure paths); unset, nothing fails. */
enum { TCA_COLL_FAIL_NONE, TCA_COLL_FAIL_POST, TCA_COLL_FAIL_CONNECT, TCA_COLL_FAIL_START };

TCA_OMPI_COMPONENT_DECLSPEC extern mca_coll_tca_component_t mca_coll_tca_component;

typedef struct mca_coll_tca_module_t {
    mca_coll_base_module_t super;
    /* libnbc's implementation, for what we do not handle */
    mca_coll_base_module_bcast_init_fn_t previous_bcast_init;
    mca_coll_base_module_t *previous_bcast_init_module;
    /* -1 unknown yet, 0 some member is not in our sub-cluster, 1 all are */
    int usable;
    int *node_of; /* device node of every rank */
} mca_coll_tca_module_t;
OBJ_CLASS_DECLARATION(mca_coll_tca_module_t);

int mca_coll_tca_init_query(bool enable_progress_threads, bool enable_mpi_threads);
/* false (after showing help that names the parameter) if an MCA value is unusable */
bool mca_coll_tca_params_valid(void);
/* Tells the thread engine when the progress thread takes over (coll_tca_thread_takeover_us). */
void mca_coll_tca_apply_thread_takeover(void);
mca_coll_base_module_t *mca_coll_tca_comm_query(struct ompi_communicator_t *comm, int *priority);
/* 1 when every member of comm is in this process's TCA sub-cluster (decided
 * lazily, on the communicator's first persistent broadcast). */
int mca_coll_tca_module_usable(mca_coll_tca_module_t *m, struct ompi_communicator_t *comm);
int mca_coll_tca_bcast_init(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_tca_progress(void);
void mca_coll_tca_release_freed(int force);

END_C_DECLS
#endif
