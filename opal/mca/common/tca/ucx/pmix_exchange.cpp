// pmix_exchange.cpp - see pmix_exchange.hpp.  Only pmix.h's types and
// constants are used; every function comes from dlsym, and pmix_info_t /
// pmix_value_t are filled by hand (PMIx's macros call library functions,
// which would link libpmix into libtca).
#include "ucx/pmix_exchange.hpp"

#include <dlfcn.h>
#include <pmix.h>

#include <cstdlib>
#include <cstring>

namespace tca::ucx {

struct PmixExchange::Api {
    pmix_status_t (*init)(pmix_proc_t *, pmix_info_t[], size_t) = nullptr;
    pmix_status_t (*finalize)(const pmix_info_t[], size_t) = nullptr;
    pmix_status_t (*put)(pmix_scope_t, const char[], pmix_value_t *) = nullptr;
    pmix_status_t (*commit)() = nullptr;
    pmix_status_t (*get)(const pmix_proc_t *, const char[], const pmix_info_t[], size_t,
                         pmix_value_t **) = nullptr;
    pmix_proc_t self{};
    bool initialized = false;
};

namespace {

template <class F>
bool bind(void *lib, const char *name, F *f) {
    *f = reinterpret_cast<F>(dlsym(lib, name));
    return *f != nullptr;
}

// A value PMIx_Get returned (pmix_value_t, perhaps with a byte object).
void free_value(pmix_value_t *v) {
    if (v == nullptr)
        return;
    if (v->type == PMIX_BYTE_OBJECT)
        std::free(v->data.bo.bytes);
    std::free(v);
}

}  // namespace

Result PmixExchange::open(std::unique_ptr<PmixExchange> *out, std::string *why) {
    std::unique_ptr<PmixExchange> x(new PmixExchange);
    x->api_ = std::make_unique<Api>();
    // Already in the process (an MPI's client), else loaded for our own client.
    x->lib_ = dlopen("libpmix.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (x->lib_ == nullptr)
        x->lib_ = dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (x->lib_ == nullptr) {
        *why = std::string("no PMIx library (libpmix.so.2): ") + dlerror();
        return tcaErrorNotSupported;
    }
    Api &a = *x->api_;
    if (!bind(x->lib_, "PMIx_Init", &a.init) || !bind(x->lib_, "PMIx_Finalize", &a.finalize) ||
        !bind(x->lib_, "PMIx_Put", &a.put) || !bind(x->lib_, "PMIx_Commit", &a.commit) ||
        !bind(x->lib_, "PMIx_Get", &a.get)) {
        *why = "libpmix.so.2 lacks PMIx_Init/Put/Commit/Get";
        return tcaErrorNotSupported;
    }
    // Reference counted: an MPI's client is joined, and our Finalize leaves it running.
    if (const pmix_status_t s = a.init(&a.self, nullptr, 0); s != PMIX_SUCCESS) {
        *why = "PMIx_Init failed (status " + std::to_string(s) +
               "): not started by a PMIx launcher such as mpirun";
        return tcaErrorNotSupported;
    }
    a.initialized = true;
    x->nspace_.assign(a.self.nspace, strnlen(a.self.nspace, PMIX_MAX_NSLEN));
    x->rank_ = static_cast<int>(a.self.rank);
    pmix_proc_t job{};
    std::memcpy(job.nspace, a.self.nspace, sizeof(job.nspace));
    job.rank = PMIX_RANK_WILDCARD;
    pmix_value_t *v = nullptr;
    if (a.get(&job, PMIX_JOB_SIZE, nullptr, 0, &v) != PMIX_SUCCESS || v == nullptr ||
        v->type != PMIX_UINT32) {
        free_value(v);
        *why = "the launcher did not say how many processes the job has (PMIX_JOB_SIZE)";
        return tcaErrorNotSupported;
    }
    x->job_size_ = static_cast<int>(v->data.uint32);
    free_value(v);
    *out = std::move(x);
    return tcaSuccess;
}

PmixExchange::~PmixExchange() {
    if (api_ && api_->initialized)
        (void) api_->finalize(nullptr, 0);
    if (lib_ != nullptr)
        dlclose(lib_);
}

Result PmixExchange::put(const std::string &key, std::span<const std::byte> value) {
    if (key.size() > PMIX_MAX_KEYLEN)
        return tcaErrorInvalidValue;
    pmix_value_t v{};
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes =
        const_cast<char *>(reinterpret_cast<const char *>(value.data()));  // PMIx copies it
    v.data.bo.size = value.size();
    if (api_->put(PMIX_GLOBAL, key.c_str(), &v) != PMIX_SUCCESS)
        return tcaErrorSystem;
    return api_->commit() == PMIX_SUCCESS ? tcaSuccess : tcaErrorSystem;
}

Result PmixExchange::get(int rank, const std::string &key, int timeout_s,
                         std::vector<std::byte> *out) {
    if (key.size() > PMIX_MAX_KEYLEN || rank < 0 || rank >= job_size_)
        return tcaErrorInvalidValue;
    pmix_proc_t proc{};
    std::memcpy(proc.nspace, api_->self.nspace, sizeof(proc.nspace));
    proc.rank = static_cast<pmix_rank_t>(rank);
    pmix_info_t info{};
    std::strncpy(info.key, PMIX_TIMEOUT, PMIX_MAX_KEYLEN);
    info.value.type = PMIX_INT;
    info.value.data.integer = timeout_s;
    pmix_value_t *v = nullptr;
    const pmix_status_t s = api_->get(&proc, key.c_str(), &info, 1, &v);
    if (s != PMIX_SUCCESS || v == nullptr || v->type != PMIX_BYTE_OBJECT) {
        free_value(v);
        return s == PMIX_ERR_TIMEOUT ? tcaErrorTimeout : tcaErrorPeerGone;
    }
    const auto *b = reinterpret_cast<const std::byte *>(v->data.bo.bytes);
    out->assign(b, b + v->data.bo.size);
    free_value(v);
    return tcaSuccess;
}

}  // namespace tca::ucx
