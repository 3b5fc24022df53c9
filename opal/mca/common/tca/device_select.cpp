// device_select.cpp - which backend tcaInit starts (TCA_DEVICE).  The ucx
// device lives in a plugin beside libtca (tca_ucx.so), loaded only when asked
// for, so programs on the loopback never load UCX (its libraries install
// signal handlers and start threads of their own).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device.hpp"

namespace tca {

namespace {

using MakeUcx = tcaResult (*)(const tcaInitParams *, Device **);

// The directory libtca was loaded from ("" where it is linked statically).
std::string own_directory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&make_device), &info) == 0 || info.dli_fname == nullptr) return "";
    const std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

Result make_ucx(const tcaInitParams *params, std::unique_ptr<Device> *out) {
    const std::string plugin = own_directory() + "/tca_ucx.so";
    void *lib = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept loaded: the device's code lives there
    if (lib == nullptr) {
        std::fprintf(stderr,
                     "tca: TCA_DEVICE=ucx: cannot load %s (%s); this libtca was built without the ucx device "
                     "where UCX (libucx-dev) or the PMIx headers (libpmix-dev) were missing\n",
                     plugin.c_str(), dlerror());
        return tcaErrorNotSupported;
    }
    auto make = reinterpret_cast<MakeUcx>(dlsym(lib, "tca_ucx_make_device"));
    if (make == nullptr) {
        std::fprintf(stderr, "tca: TCA_DEVICE=ucx: %s has no tca_ucx_make_device\n", plugin.c_str());
        return tcaErrorNotSupported;
    }
    Device *dev = nullptr;
    if (const Result r = make(params, &dev); r != tcaSuccess) return r;
    out->reset(dev);
    return tcaSuccess;
}

}  // namespace

Result make_device(const tcaInitParams *params, std::unique_ptr<Device> *out) {
    const char *which = std::getenv("TCA_DEVICE");
    if (which == nullptr || std::strcmp(which, "loopback") == 0) return make_loopback_device(params, out);
    if (std::strcmp(which, "ucx") == 0) return make_ucx(params, out);
    std::fprintf(stderr, "tca: TCA_DEVICE='%s' is invalid: no such device (allowed: loopback, ucx)\n", which);
    return tcaErrorInvalidValue;
}

}  // namespace tca
