// pmix_exchange.hpp - how nodes of the ucx device find each other: through
// the launcher's PMIx key-value store (never files: hosts share none).  Each
// node publishes its blobs (the worker address) under its PMIx rank, and a
// peer reads them when it first needs them; PMIx fetches a remote proc's
// values from its host on demand, so no collective fence is needed at start.
//
// libpmix is looked up at run time (dlopen), not linked, as for the launcher
// cleanup: the process joins the PMIx client its MPI already started, or
// starts one itself when a launcher started it without MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/result.hpp"

namespace tca::ucx {

class PmixExchange {
public:
    // tcaErrorNotSupported, with *why, where there is no PMIx launcher
    // (libpmix missing, or PMIx_Init refused: not started by one).
    static Result open(std::unique_ptr<PmixExchange> *out, std::string *why);
    ~PmixExchange();
    PmixExchange(const PmixExchange &) = delete;
    PmixExchange &operator=(const PmixExchange &) = delete;

    int rank() const noexcept { return rank_; }
    int job_size() const noexcept { return job_size_; }
    const std::string &nspace() const noexcept { return nspace_; }

    // Publish `value` under `key` for every proc of the job (PMIx_Put global + Commit).
    Result put(const std::string &key, std::span<const std::byte> value);
    // Read proc `rank`'s value of `key`, waiting up to timeout_s seconds for
    // it to be published (tcaErrorTimeout).
    Result get(int rank, const std::string &key, int timeout_s, std::vector<std::byte> *out);

    struct Api;  // the libpmix functions in use

private:
    PmixExchange() = default;
    std::unique_ptr<Api> api_;
    void *lib_ = nullptr;
    std::string nspace_;
    int rank_ = -1;
    int job_size_ = 0;
};

}  // namespace tca::ucx
