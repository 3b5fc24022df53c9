// launch_info.hpp - who we are in the sub-cluster: job key, node id and node
// count, from explicit parameters, TCA_* variables, or the Open MPI launcher.
#pragma once

#include <string>

#include "model/result.hpp"
#include "tca.h"

namespace tca::loopback {

struct LaunchInfo {
    std::string job_key;  // already sanitised for use in a shm name
    int node_id = 0;
    int num_nodes = 1;
    std::string source;   // where the values came from, for tca_info / logs
};

// Precedence: params fields > TCA_JOB_KEY / TCA_NODE_ID / TCA_NUM_NODES >
// Open MPI (OMPI_COMM_WORLD_LOCAL_RANK / _LOCAL_SIZE, job id) > a one-node
// sub-cluster keyed by the pid.
Result resolve_launch_info(const tcaInitParams *params, LaunchInfo *out);

// Keep [A-Za-z0-9._-], map the rest to '_', shorten long keys with a hash.
std::string sanitize_job_key(const std::string &key);

}  // namespace tca::loopback
