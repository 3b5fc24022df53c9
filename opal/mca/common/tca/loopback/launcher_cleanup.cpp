// launcher_cleanup.cpp - see launcher_cleanup.hpp.  libpmix is looked up in
// the process (dlopen RTLD_NOLOAD), not linked: libtca must not pull a PMIx
// client into programs that have none, nor a second one into an MPI whose
// PMIx is embedded.
#include "launcher_cleanup.hpp"

#ifdef TCA_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#endif

namespace tca::loopback {

#ifdef TCA_HAVE_PMIX
namespace {

using initialized_fn = int (*)();
using job_control_nb_fn = pmix_status_t (*)(const pmix_proc_t[], size_t, const pmix_info_t[],
                                            size_t, pmix_info_cbfunc_t, void *);

struct Pending {
    std::atomic<int> done{0};
    std::atomic<pmix_status_t> status{PMIX_ERROR};
};

void on_done(pmix_status_t status, pmix_info_t *, size_t, void *cbdata,
             pmix_release_cbfunc_t release_fn, void *release_cbdata) {
    auto *p = static_cast<Pending *>(cbdata);
    if (release_fn != nullptr)
        release_fn(release_cbdata);
    p->status.store(status, std::memory_order_relaxed);
    p->done.store(1, std::memory_order_release);
}

}  // namespace

bool register_launcher_cleanup(const std::string &shm_name) noexcept {
    if (shm_name.empty() || shm_name[0] != '/')
        return false;
    void *lib = dlopen("libpmix.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr)
        return false;
    auto initialized = reinterpret_cast<initialized_fn>(dlsym(lib, "PMIx_Initialized"));
    auto job_control = reinterpret_cast<job_control_nb_fn>(dlsym(lib, "PMIx_Job_control_nb"));
    bool ok = false;
    if (initialized != nullptr && job_control != nullptr && initialized() != 0) {
        std::string path = "/dev/shm" + shm_name;
        pmix_info_t info;
        std::memset(&info, 0, sizeof info);
        std::strncpy(info.key, PMIX_REGISTER_CLEANUP, PMIX_MAX_KEYLEN);
        info.value.type = PMIX_STRING;
        info.value.data.string = path.data();
        // The request is copied before the call returns; `pending` must
        // outlive the answer, which can come after we stop waiting.
        auto *pending = new (std::nothrow) Pending;
        if (pending != nullptr &&
            job_control(nullptr, 0, &info, 1, on_done, pending) == PMIX_SUCCESS) {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            while (!pending->done.load(std::memory_order_acquire) &&
                   std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            if (pending->done.load(std::memory_order_acquire)) {
                ok = pending->status.load(std::memory_order_relaxed) == PMIX_SUCCESS;
                delete pending;
            }  // else: leaked on purpose, the late answer still writes it
        } else {
            delete pending;
        }
    }
    dlclose(lib);
    return ok;
}

#else

bool register_launcher_cleanup(const std::string &) noexcept {
    return false;
}

#endif

}  // namespace tca::loopback
