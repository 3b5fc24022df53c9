// launch_info.hpp - who we are in the sub-cluster: job key, node id and node
// count, from explicit parameters, TCA_* variables, or the launcher's
// environment (Open MPI, Slurm, MVAPICH2 mpirun_rsh, PMI/Hydra, PMIx).
#pragma once

#include <string>

#include "model/result.hpp"
#include "tca.h"

namespace tca::loopback {

struct LaunchInfo {
    std::string job_key;  // already sanitised for use in a shm name
    int node_id = 0;
    int num_nodes = 1;
    std::string source;  // where the values came from, for tca_info / logs
};

// Precedence, field by field: params > TCA_JOB_KEY / TCA_NODE_ID /
// TCA_NUM_NODES > the first launcher whose variables are all there (Open MPI,
// Slurm srun, MVAPICH2 mpirun_rsh, PMI/Hydra, PMIx) > a one-node sub-cluster
// keyed by the pid.  The loopback is one host, so a launcher's node id is the
// process's local rank and the node count its number of local processes; the
// MPI rank may differ (handles carry the node).  A process that one of
// several a launcher started but whose variables tca cannot read fails with
// tcaErrorNotSupported and a message that names the variable.
Result resolve_launch_info(const tcaInitParams *params, LaunchInfo *out);

// Keep [A-Za-z0-9._-], map the rest to '_', shorten long keys with a hash.
std::string sanitize_job_key(const std::string &key);

// The entry of this node in a Slurm task list such as "2(x3),1" (3 nodes of
// 2 tasks, then one of 1), or -1 if the list is malformed or too short.
int slurm_tasks_on_node(const std::string &list, int node_index);

}  // namespace tca::loopback
