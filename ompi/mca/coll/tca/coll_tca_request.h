/* coll_tca_request.h - the persistent broadcast request, shared by its three
 * files: bcast_init.c (planning and the agreement of the ranks),
 * coll_tca_connect.c (posting the one-time exchange with the tree
 * neighbours) and coll_tca_request.c (the engine built from it, start,
 * progress, free). */
#ifndef MCA_COLL_TCA_REQUEST_H
#define MCA_COLL_TCA_REQUEST_H

#include "coll_tca.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

/* FAILED: the request can never run (its exchange, engine or a start
 * failed, said once where it happened); every start completes at once with
 * its error class. */
enum { EXCHANGING, IDLE, RUNNING, FAILED };

typedef struct mca_coll_tca_request_t {
    ompi_request_t super;
    tca_coll_bcast_t *core;
    ompi_datatype_t *datatype; /* retained if not predefined (4.1.4 does not) */
    int state;
    int start_pending;
    int error_class; /* FAILED: what every start completes with */
    tca_coll_peer_info_t mine, parent, *children;
    ompi_request_t **exchange; /* PML requests of the one-time exchange */
    int nexchange;
    char shape[224]; /* the verbose line's description, printed once the engine is built */
} mca_coll_tca_request_t;
OBJ_CLASS_DECLARATION(mca_coll_tca_request_t);

/* request.c */
/* c->lock held: the one-time exchange is done (its PML requests freed)? */
int mca_coll_tca_exchange_finished(mca_coll_tca_request_t *r);
/* Exchange done?  Then build the engine and say which one runs.  0: not yet;
 * 1: built (IDLE); -1: failed (FAILED). */
int mca_coll_tca_try_connect(mca_coll_tca_request_t *r);

/* A built request for the core planned in bcast_init, taking over core,
 * children and exchange (NULL: no memory; the caller still owns them). */
mca_coll_tca_request_t *
mca_coll_tca_request_new(tca_coll_bcast_t *core, const tca_coll_peer_info_t *mine,
                         tca_coll_peer_info_t *children, ompi_request_t **exchange,
                         struct ompi_communicator_t *comm, struct ompi_datatype_t *datatype);
/* On the active list, progressed until its exchange is done. */
void mca_coll_tca_request_track(mca_coll_tca_request_t *r);
/* On the freed list (c->lock held), progressed until it can go. */
void mca_coll_tca_request_park_locked(mca_coll_tca_request_t *r);
/* Says once what failed; the MPI error class the request completes with. */
int mca_coll_tca_request_fail(const char *what, tcaResult r);
/* Test hook (TCA_COLL_TEST_FAIL, read once by the component): the named step
 * fails as a device without resources would make it fail. */
tcaResult mca_coll_tca_injected(int step);

/* connect.c */
int mca_coll_tca_post_exchange(mca_coll_tca_request_t *r, struct ompi_communicator_t *comm);
void mca_coll_tca_park_after_failed_post(mca_coll_tca_request_t *r);
END_C_DECLS

#endif
