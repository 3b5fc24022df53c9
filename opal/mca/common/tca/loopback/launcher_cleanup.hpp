// launcher_cleanup.hpp - asks the launcher to remove this node's /dev/shm
// files when the job ends, however its processes end: MPI_Abort leaves by
// _exit (no destructor, no signal), SIGKILL leaves no chance at all, and a
// sub-cluster whose processes all end so has no survivor to sweep the files.
// Open MPI's daemons (and other PMIx servers) remove files registered with
// PMIX_REGISTER_CLEANUP at the end of the job.
#pragma once

#include <string>

namespace tca::loopback {

// Registers `shm_name` ("/...", a POSIX shm name) for removal at the end of
// the job.  Only where this process already is a PMIx client through the
// system's libpmix (an MPI built with it has called MPI_Init); never starts a
// client of its own, because an MPI with an embedded PMIx would then be a
// second client of the same server.  False where it could not ask.
bool register_launcher_cleanup(const std::string &shm_name) noexcept;

}  // namespace tca::loopback
