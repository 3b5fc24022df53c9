/* bcast_init.h - the persistent broadcast by its name in the Open MPI the
 * program is built with: MPI_Bcast_init (MPI 4) in Open MPI 5, the pcollreq
 * extension's MPIX_Bcast_init in 4.1.  5.0's mpi.h still says MPI_VERSION 3,
 * so Open MPI's own version decides (MPI_VERSION for any other MPI). */
#ifndef TCA_TEST_BCAST_INIT_H
#define TCA_TEST_BCAST_INIT_H

#include <mpi.h>
#if defined(OPEN_MPI)
#include <mpi-ext.h> /* and MPIX_CUDA_AWARE_SUPPORT, in both */
#endif

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5
#define BCAST_INIT MPIX_Bcast_init
#define BCAST_INIT_NAME "MPIX_Bcast_init"
#elif defined(OPEN_MPI) || MPI_VERSION >= 4
#define BCAST_INIT MPI_Bcast_init
#define BCAST_INIT_NAME "MPI_Bcast_init"
#else
#error "no persistent broadcast: MPI 4 (MPI_Bcast_init) or Open MPI 4.1 (MPIX_Bcast_init) needed"
#endif

#endif
