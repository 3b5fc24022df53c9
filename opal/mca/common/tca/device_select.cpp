// device_select.cpp - which backend tcaInit starts (TCA_DEVICE; unset: the
// loopback, or ucx for a job that spans hosts).  The ucx
// device lives in a plugin beside libtca (tca_ucx.so), loaded only when asked
// for, so programs on the loopback never load UCX (its libraries install
// signal handlers and start threads of their own).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "base/setting_source.hpp"
#include "device.hpp"

namespace tca {

namespace {

using MakeUcx = tcaResult (*)(const tcaInitParams *, Device **);

// The directory libtca was loaded from ("" where it is linked statically).
std::string own_directory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&make_device), &info) == 0 || info.dli_fname == nullptr)
        return "";
    const std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

Result make_ucx(const tcaInitParams *params, std::unique_ptr<Device> *out) {
    const std::string plugin = own_directory() + "/tca_ucx.so";
    void *lib = dlopen(plugin.c_str(),
                       RTLD_NOW | RTLD_LOCAL);  // kept loaded: the device's code lives there
    if (lib == nullptr) {
        std::fprintf(stderr,
                     "tca: TCA_DEVICE=ucx: cannot load %s (%s); this libtca was built without the "
                     "ucx device "
                     "where UCX (libucx-dev) or the PMIx headers (libpmix-dev) were missing\n",
                     plugin.c_str(), dlerror());
        return tcaErrorNotSupported;
    }
    auto make = reinterpret_cast<MakeUcx>(dlsym(lib, "tca_ucx_make_device"));
    if (make == nullptr) {
        std::fprintf(stderr, "tca: TCA_DEVICE=ucx: %s has no tca_ucx_make_device\n",
                     plugin.c_str());
        return tcaErrorNotSupported;
    }
    Device *dev = nullptr;
    if (const Result r = make(params, &dev); r != tcaSuccess)
        return r;
    out->reset(dev);
    return tcaSuccess;
}

// A launcher's count, or -1 where it is not set or not a number.
long launcher_count(const char *name) {
    const char *text = std::getenv(name);
    if (text == nullptr || *text == '\0')
        return -1;
    char *end = nullptr;
    const long n = std::strtol(text, &end, 10);
    return *end == '\0' && n >= 0 ? n : -1;
}

// The launcher says the job has processes on more than one host: fewer
// processes here than in the job (Open MPI, MVAPICH2, Hydra), or a Slurm
// step over several nodes.
bool job_spans_hosts() {
    const std::pair<const char *, const char *> job_and_here[] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
        {"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"},
        {"PMI_SIZE", "MPI_LOCALNRANKS"},
    };
    for (const auto &[job, here] : job_and_here) {
        const long all = launcher_count(job), local = launcher_count(here);
        if (all > 0 && local > 0)
            return local < all;
    }
    long hosts = launcher_count("SLURM_STEP_NUM_NODES");
    if (hosts < 0)
        hosts = launcher_count("SLURM_NNODES");
    return std::getenv("SLURM_LOCALID") != nullptr && hosts > 1;
}

bool ucx_plugin_there() {
    return access((own_directory() + "/tca_ucx.so").c_str(), R_OK) == 0;
}

}  // namespace

const char *default_device_name(const tcaInitParams *params, bool ucx_built) {
    const bool placed = (params != nullptr && (params->node_id >= 0 || params->num_nodes > 0)) ||
                        std::getenv("TCA_NODE_ID") != nullptr ||
                        std::getenv("TCA_NUM_NODES") != nullptr;
    // The ucx device's nodes meet through PMIx: without it, it could not start.
    const bool pmix = std::getenv("PMIX_NAMESPACE") != nullptr;
    return !placed && ucx_built && pmix && job_spans_hosts() ? "ucx" : "loopback";
}

Result choose_device(const tcaInitParams *params, const char **name) {
    const SettingText given = setting_text("TCA_DEVICE");
    if (!given.given || given.text == "auto") {
        *name = default_device_name(params, ucx_plugin_there());
        return tcaSuccess;
    }
    static constexpr const char *kDevices[] = {"loopback", "ucx"};
    const char *which = nullptr;
    for (const char *d : kDevices)
        if (given.text == d)
            which = d;  // static: the caller keeps the name
    if (which == nullptr) {
        const std::string line = given.given_by + "='" + given.text +
                                 "' is invalid: no such device (allowed: loopback, ucx, auto)";
        std::fprintf(stderr, "tca: %s\n", line.c_str());
        set_error_detail(line.c_str());
        return tcaErrorInvalidValue;
    }
    *name = which;
    return tcaSuccess;
}

bool device_spans_hosts(const char *name) {
    return std::strcmp(name, "ucx") == 0;
}

Result make_device(const tcaInitParams *params, std::unique_ptr<Device> *out) {
    const char *which = nullptr;
    if (Result r = choose_device(params, &which); r != tcaSuccess)
        return r;
    return std::strcmp(which, "ucx") == 0 ? make_ucx(params, out)
                                          : make_loopback_device(params, out);
}

}  // namespace tca
