/* Copied unchanged (but for this note) from the Open MPI 5.0.7 source tree:
 * opal_config.h of every 5.0.x includes it, and no 5.0 install has it
 * (opal/mca/threads/pthreads/Makefile.am installs nothing).  Only a fallback:
 * compat/openmpi-5.0 is searched after every other include directory
 * (-idirafter), so an installed copy always wins.  Open MPI's BSD license
 * and copyright notices follow. */
/* -*- Mode: C; c-basic-offset:4 ; indent-tabs-mode:nil -*- */
/*
 * Copyright (c) 2020      High Performance Computing Center Stuttgart,
 *                         University of Stuttgart.  All rights reserved.
 *
 * $COPYRIGHT$
 *
 * Additional copyrights may follow
 *
 * $HEADER$
 */

#ifndef OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_H
#define OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_H

#include "opal/mca/threads/thread.h"
#include <stdint.h>
#include <time.h>

typedef void(opal_threads_pthreads_yield_fn_t)(void);

OPAL_DECLSPEC int opal_threads_pthreads_yield_init(const mca_base_component_t *component);

OPAL_DECLSPEC extern opal_threads_pthreads_yield_fn_t *opal_threads_pthreads_yield_fn;

#endif /* OPAL_MCA_THREADS_PTHREADS_THREADS_PTHREADS_H */
