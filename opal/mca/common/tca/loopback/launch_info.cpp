// launch_info.cpp - the node id is the local rank, so the processes of one host
// that share a job form the sub-cluster (DESIGN.md section 3).
#include "loopback/launch_info.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

namespace tca::loopback {

namespace {
const char *env(const char *name) {
    const char *v = std::getenv(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
}

bool parse_int(const char *s, int *out) {
    if (s == nullptr) return false;
    char *end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < -1 || v > 1'000'000) return false;
    *out = static_cast<int>(v);
    return true;
}

// Launchers that start several processes but tell them nothing tca reads:
// without a node id each would become node 0 of a sub-cluster of its own, and
// the first handle of another process would fail as a "stale handle".  The
// variable that gives it away, or nullptr.
const char *foreign_launcher_variable() {
    for (const char *v : {"PMI_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"}) {
        int n = 0;
        if (parse_int(env(v), &n) && n > 1) return v;
    }
    int rank = 0;  // any PMIx launcher; an Open MPI singleton is PMIx rank 0
    if (parse_int(env("PMIX_RANK"), &rank) && rank > 0) return "PMIX_RANK";
    return nullptr;
}
}  // namespace

std::string sanitize_job_key(const std::string &key) {
    std::string out;
    for (char c : key) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '.' || c == '_';
        out.push_back(ok ? c : '_');
    }
    if (out.size() > 40) {
        const auto h = std::hash<std::string>{}(key);
        out = out.substr(0, 24) + "_" + std::to_string(h % 1000000000000ull);
    }
    return out.empty() ? std::string("default") : out;
}

Result resolve_launch_info(const tcaInitParams *params, LaunchInfo *out) {
    LaunchInfo li;
    std::string key;
    int node = -1, nodes = 0;
    std::string source;

    if (params != nullptr) {
        if (params->job_key != nullptr) key = params->job_key;
        node = params->node_id;
        nodes = params->num_nodes;
        if (nodes < 0 || node < -1) return tcaErrorInvalidValue;
        source = "parameters";
    }
    if (key.empty() && env("TCA_JOB_KEY")) key = env("TCA_JOB_KEY"), source = "environment (TCA_*)";
    if (node < 0 && env("TCA_NODE_ID") && !parse_int(env("TCA_NODE_ID"), &node)) return tcaErrorInvalidValue;
    if (nodes == 0 && env("TCA_NUM_NODES") && !parse_int(env("TCA_NUM_NODES"), &nodes))
        return tcaErrorInvalidValue;

    // Open MPI's launcher: local rank/size and a job id shared by the job.
    if (key.empty()) {
        for (const char *v : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"}) {
            if (env(v)) {
                key = std::string("ompi.") + env(v);
                source = "Open MPI launcher";
                break;
            }
        }
    }
    if (node < 0 && env("OMPI_COMM_WORLD_LOCAL_RANK")) parse_int(env("OMPI_COMM_WORLD_LOCAL_RANK"), &node);
    if (nodes == 0 && env("OMPI_COMM_WORLD_LOCAL_SIZE")) parse_int(env("OMPI_COMM_WORLD_LOCAL_SIZE"), &nodes);

    if (node < 0 && nodes == 0) {
        if (const char *v = foreign_launcher_variable()) {
            std::fprintf(stderr,
                         "tca: this process is one of several started by a launcher tca does not recognise (%s=%s), "
                         "so it cannot tell which node of the sub-cluster it is. Run under Open MPI's mpirun, or set "
                         "TCA_JOB_KEY, TCA_NODE_ID and TCA_NUM_NODES for every process (or pass them to "
                         "tcaInitWithParams).\n",
                         v, env(v));
            return tcaErrorNotSupported;
        }
    }

    if (key.empty()) {  // a lone process: its own one-node sub-cluster
        key = "pid." + std::to_string(getpid());
        if (source.empty()) source = "singleton";
    }
    if (node < 0) node = 0;
    if (nodes == 0) nodes = 1;
    if (nodes > TCA_MAX_NODES) return tcaErrorInvalidValue;
    if (node >= nodes) return tcaErrorInvalidNode;

    li.job_key = sanitize_job_key(key);
    li.node_id = node;
    li.num_nodes = nodes;
    li.source = source.empty() ? "parameters" : source;
    *out = std::move(li);
    return tcaSuccess;
}

}  // namespace tca::loopback
