// result.cpp - one readable message per tcaResult code.
#include "model/result.hpp"

#include <array>

namespace tca {

namespace {
constexpr std::array<const char *, tcaErrorResultCount> kMessages = {
    "success",
    "invalid argument (NULL pointer, zero or negative size, or unknown flags)",
    "TCA not initialised: call tcaInit first",
    "TCA already initialised in this process as another node (tcaInit is reference counted: a "
    "second call with compatible parameters shares the node)",
    "invalid handle: NULL, corrupt, or not created by tcaCreateHandle",
    "offset + size lies outside the registered memory of the handle",
    "source memory is not local: the device is put-only and cannot read remote memory",
    "too many descriptors: a chain holds at most 255 (TCA_MAX_DESCRIPTORS)",
    "invalid DMA channel: valid channels are 0..3",
    "memory not registered, or its registration was destroyed (stale handle)",
    "peer node has exited or is unreachable",
    "timed out waiting (see TCA_TIMEOUT_MS)",
    "out of memory",
    "not supported here (GPU memory needs a CUDA build and a CUDA device; an unrecognised launcher "
    "needs "
    "TCA_NODE_ID/TCA_NUM_NODES)",
    "an operating-system call failed (details were logged to stderr)",
    "DMA channel busy: it is still running a chain",
    "invalid notification slot: valid slots are 0..TCA_NOTIFY_SLOTS-1",
    "invalid counter index: valid counters are 0..TCA_NUM_COUNTERS-1",
    "another live process is already this node of this job (job key in use)",
    "not ready yet",
    "no descriptor chain loaded in this channel (call tcaDescSet first)",
    "node id outside the sub-cluster",
    "no free resource: every DMA channel / counter / notification slot asked for is held, or a "
    "source has "
    "notifications of more than TCA_NOTIFY_TAGS tags unconsumed on one slot (see tcaQueryDevice)",
    "a DMA channel / counter / notification slot named by someone other than its holder "
    "(tca*Acquire): by its plain number, by an id kept past its release, or released twice",
    "DMA run aborted: tcaAbortDMAC dropped it before it completed",
};
}  // namespace

const char *result_message(Result r) noexcept {
    const auto i = static_cast<int>(r);
    if (i < 0 || i >= tcaErrorResultCount)
        return "unknown TCA result code";
    return kMessages[static_cast<size_t>(i)];
}

namespace {
thread_local std::string t_detail;
}  // namespace

const std::string &last_error_detail() noexcept {
    return t_detail;
}

void set_error_detail(const char *text) noexcept {
    try {
        t_detail = text;
    } catch (...) {  // no memory for the text: the "tca:" line on stderr still says it
        t_detail.clear();
    }
}

}  // namespace tca
