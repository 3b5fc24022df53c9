// launch_info.cpp - the node id is the local rank, so the processes of one host
// that share a job form the sub-cluster (DESIGN.md section 3).  Published TCA
// programs run under MVAPICH2's mpirun_rsh and index handles by MPI rank, so
// tca reads the usual launchers itself; none of them needs a TCA_* variable.
#include "loopback/launch_info.hpp"
#include "base/env_settings.hpp"
#include "tca_units.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>

namespace tca::loopback {

namespace {
const char *env(const char *name) {
    const char *v = std::getenv(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
}

constexpr uint64_t kMaxLaunchValue = 1'000'000;

// A launcher's count or rank, through the one parser (tca_units.h).
bool parse_int(const char *s, int *out) {
    uint64_t v = 0;
    if (tca_parse_size(s, 0, &v) != TCA_PARSE_OK || v > kMaxLaunchValue)
        return false;
    *out = static_cast<int>(v);
    return true;
}

std::optional<int> env_int(const char *name) {
    int v = 0;
    if (!parse_int(env(name), &v) || v < 0)
        return std::nullopt;
    return v;
}

// What one launcher says about this process: a job key shared by the
// processes of the job, the local rank and the local process count.
struct Found {
    std::string key;
    int node = -1;
    int nodes = 0;
    std::string source;
};

// Open MPI's mpirun (ORTE or PRRTE): local rank/size, job id or namespace.
std::optional<Found> open_mpi() {
    auto rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK"), size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!rank || !size)
        return std::nullopt;
    for (const char *v : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"})
        if (env(v))
            return Found{std::string("ompi.") + env(v), *rank, *size, "Open MPI launcher"};
    return std::nullopt;
}

// A task of srun: SLURM_LOCALID is set only in tasks (not in a batch script).
std::optional<Found> slurm() {
    auto local = env_int("SLURM_LOCALID");
    const char *job = env("SLURM_JOB_ID") ? env("SLURM_JOB_ID") : env("SLURM_JOBID");
    const char *step = env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : env("SLURM_STEPID");
    if (!local || job == nullptr || step == nullptr)
        return std::nullopt;
    const int node_index = env_int("SLURM_NODEID").value_or(0);
    int tasks = -1;
    if (const char *l = env("SLURM_STEP_TASKS_PER_NODE"))
        tasks = slurm_tasks_on_node(l, node_index);
    if (tasks < 0)
        tasks = env_int("SLURM_NTASKS_PER_NODE").value_or(-1);
    if (tasks < 0)
        if (const char *l = env("SLURM_TASKS_PER_NODE"))
            tasks = slurm_tasks_on_node(l, node_index);
    if (tasks <= 0)
        return std::nullopt;
    return Found{std::string("slurm.") + job + "." + step, *local, tasks, "Slurm srun"};
}

// MVAPICH2's mpirun_rsh (the launcher of the published runs).
std::optional<Found> mvapich2() {
    const char *id = env("MPIRUN_ID");
    if (id == nullptr)
        return std::nullopt;
    const std::string key = std::string("mv2.") + id;
    auto rank = env_int("MV2_COMM_WORLD_LOCAL_RANK"), size = env_int("MV2_COMM_WORLD_LOCAL_SIZE");
    if (rank && size)
        return Found{key, *rank, *size, "MVAPICH2 mpirun_rsh"};
    // Older launchers: no local rank, but a job on one host or one process
    // per host (the published runs) still tells where this process stands.
    auto grank = env_int("MPIRUN_RANK"), gsize = env_int("MPIRUN_NPROCS");
    auto hosts = env_int("MV2_NUM_NODES_IN_JOB");
    if (!grank || !gsize || !hosts)
        return std::nullopt;
    if (*hosts == 1)
        return Found{key, *grank, *gsize, "MVAPICH2 mpirun_rsh (one host)"};
    if (*hosts == *gsize) {
        auto host = env_int("MV2_NODE_ID");
        return Found{key + "." + std::to_string(host.value_or(*grank)), 0, 1,
                     "MVAPICH2 mpirun_rsh (one process per host)"};
    }
    return std::nullopt;
}

// MPICH's Hydra (and Intel MPI): PMI rank/size, local rank/count.  Hydra names
// no job in the environment; the local processes of one job are children of
// the same proxy, so its pid keys the job.
std::optional<Found> pmi_hydra() {
    auto rank = env_int("PMI_RANK"), size = env_int("PMI_SIZE");
    if (!rank || !size)
        return std::nullopt;
    std::string key;
    if (const char *j = env("PMI_JOBID"))
        key = std::string("pmi.") + j;
    else if (const char *k = env("PMI_KVSNAME"))
        key = std::string("pmi.") + k;
    else
        key = "pmi.ppid." + std::to_string(getppid());
    auto lrank = env_int("MPI_LOCALRANKID"), lsize = env_int("MPI_LOCALNRANKS");
    if (lrank && lsize)
        return Found{key, *lrank, *lsize, "PMI/Hydra"};
    if (*size == 1)
        return Found{key, 0, 1, "PMI (one process)"};
    return std::nullopt;  // ranks spread over hosts we cannot see: unknown
}

// A PMIx launcher other than Open MPI's: the namespace keys the job; the
// local rank and count are in the environment only if the launcher exports
// them (the PMIx library, which tca does not link, knows them otherwise).
std::optional<Found> pmix() {
    const char *ns = env("PMIX_NAMESPACE");
    auto rank = env_int("PMIX_RANK");
    if (ns == nullptr || !rank)
        return std::nullopt;
    auto lrank = env_int("PMIX_LOCAL_RANK"), lsize = env_int("PMIX_LOCAL_SIZE");
    if (lrank && lsize)
        return Found{std::string("pmix.") + ns, *lrank, *lsize, "PMIx launcher"};
    if (*rank == 0 && !env("PMIX_LOCAL_SIZE"))  // e.g. an Open MPI singleton
        return Found{std::string("pmix.") + ns, 0, 1, "PMIx (singleton)"};
    return std::nullopt;
}

std::optional<Found> detect_launcher() {
    for (auto detect : {open_mpi, slurm, mvapich2, pmi_hydra, pmix})
        if (auto f = detect())
            return f;
    return std::nullopt;
}

// Variables that say "one of several processes" when no launcher above could
// be read completely: without a node id each would become node 0 of a
// sub-cluster of its own and fail later in a misleading way.
const char *foreign_launcher_variable() {
    struct Sign {
        const char *name;
        int above;  // a sign when the value is greater than this
    };
    for (Sign s : {Sign{"PMI_SIZE", 1}, Sign{"PMI_RANK", 0}, Sign{"MPI_LOCALNRANKS", 1},
                   Sign{"MV2_COMM_WORLD_SIZE", 1}, Sign{"MPIRUN_NPROCS", 1},
                   Sign{"SLURM_STEP_NUM_TASKS", 1}, Sign{"PMIX_RANK", 0},
                   Sign{"OMPI_COMM_WORLD_SIZE", 1}, Sign{"PALS_RANKID", 0}, Sign{"ALPS_APP_PE", 0},
                   Sign{"FLUX_TASK_RANK", 0}, Sign{"JSM_NAMESPACE_SIZE", 1}, Sign{"MP_CHILD", 0}}) {
        int n = 0;
        if (parse_int(env(s.name), &n) && n > s.above)
            return s.name;
    }
    return nullptr;
}
}  // namespace

int slurm_tasks_on_node(const std::string &list, int node_index) {
    // Entries "N" or "N(xR)", comma-separated.
    size_t at = 0;
    int index = 0;
    while (at < list.size()) {
        char *end = nullptr;
        const long n = std::strtol(list.c_str() + at, &end, 10);
        if (end == list.c_str() + at || n < 0)
            return -1;
        at = static_cast<size_t>(end - list.c_str());
        long repeat = 1;
        if (list.compare(at, 2, "(x") == 0) {
            repeat = std::strtol(list.c_str() + at + 2, &end, 10);
            if (*end != ')' || repeat <= 0)
                return -1;
            at = static_cast<size_t>(end - list.c_str()) + 1;
        }
        if (node_index < index + repeat)
            return static_cast<int>(n);
        index += static_cast<int>(repeat);
        if (at < list.size()) {
            if (list[at] != ',')
                return -1;
            ++at;
        }
    }
    return -1;
}

std::string sanitize_job_key(const std::string &key) {
    std::string out;
    for (char c : key) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '_';
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
        if (params->job_key != nullptr)
            key = params->job_key;
        node = params->node_id;
        nodes = params->num_nodes;
        if (nodes < 0 || node < -1)
            return tcaErrorInvalidValue;
        source = "parameters";
    }
    if (key.empty() && env("TCA_JOB_KEY"))
        key = env("TCA_JOB_KEY"), source = "environment (TCA_*)";
    // Through the one parser (a line naming the variable on a bad value); the
    // bounds against each other and TCA_MAX_NODES are checked below.
    uint64_t v = 0;
    if (node < 0 && std::getenv("TCA_NODE_ID") != nullptr) {
        if (Result r = env_number("TCA_NODE_ID", {0, 0, kMaxLaunchValue, false}, &v);
            r != tcaSuccess)
            return r;
        node = static_cast<int>(v);
    }
    if (nodes == 0 && std::getenv("TCA_NUM_NODES") != nullptr) {
        if (Result r = env_number("TCA_NUM_NODES", {1, 1, kMaxLaunchValue, false}, &v);
            r != tcaSuccess)
            return r;
        nodes = static_cast<int>(v);
    }

    if (key.empty() || node < 0 || nodes == 0) {
        if (auto f = detect_launcher()) {
            if (key.empty())
                key = f->key, source = f->source;
            if (node < 0)
                node = f->node;
            if (nodes == 0)
                nodes = f->nodes;
            if (source.empty())
                source = f->source;
        } else if (node < 0 && nodes == 0) {
            if (const char *v = foreign_launcher_variable()) {
                std::fprintf(
                    stderr,
                    "tca: this process is one of several started by a launcher whose environment "
                    "tca "
                    "cannot read (%s=%s is set, but not the variables tca reads for Open MPI, "
                    "Slurm srun, "
                    "MVAPICH2 mpirun_rsh, PMI/Hydra or PMIx), so it cannot tell which node of the "
                    "sub-cluster it is. Set TCA_JOB_KEY, TCA_NODE_ID and TCA_NUM_NODES for every "
                    "process "
                    "(or pass them to tcaInitWithParams).\n",
                    v, env(v));
                return tcaErrorNotSupported;
            }
        }
    }

    if (key.empty()) {  // a lone process: its own one-node sub-cluster
        key = "pid." + std::to_string(getpid());
        if (source.empty())
            source = "singleton";
    }
    if (node < 0)
        node = 0;
    if (nodes == 0)
        nodes = 1;
    if (nodes > TCA_MAX_NODES)
        return tcaErrorInvalidValue;
    if (node >= nodes)
        return tcaErrorInvalidNode;

    li.job_key = sanitize_job_key(key);
    li.node_id = node;
    li.num_nodes = nodes;
    li.source = source.empty() ? "parameters" : source;
    *out = std::move(li);
    return tcaSuccess;
}

}  // namespace tca::loopback
