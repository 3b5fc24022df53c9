// env_settings.hpp - libtca's settings (settings_catalog.hpp), every one read
// where setting_source.hpp says (a value given through tcaSetSetting, else the
// TCA_* environment variable) and parsed through
// the one parser (tca_units.h) and checked: a bad value fails tcaInit with a
// line that names the setting as it was given, its value and what is allowed - never a
// silent default.  An unset variable takes the default; an empty one is
// refused like any other value that is not one of the accepted spellings.
#pragma once

#include "plugin_api.hpp"

#include <cstdint>
#include <string>

#include "model/result.hpp"
#include "model/timing_model.hpp"

namespace tca {

struct EnvRange {
    uint64_t fallback;  // when the variable is unset
    uint64_t min, max;
    bool units;            // accept k/M/G/T suffixes (sizes); plain counts otherwise
    bool auto_ok = false;  // "auto" (any case) means the fallback
};

struct RealRange {
    double fallback;  // when the variable is unset
    double min, max;
};

// tcaSuccess and *out = value (or the fallback); tcaErrorInvalidValue after
// printing "tca: NAME='value' is invalid: ... (allowed: min..max)".
Result env_number(const char *name, const EnvRange &range, uint64_t *out);
// The same for a non-negative real (no inf, nan, sign or hex).
Result env_real(const char *name, const RealRange &range, double *out);
// The same for 0/1, on/off, yes/no, true/false (any case).
Result env_bool(const char *name, bool fallback, bool *out);
// TCA_SINGLE_COPY's values: a boolean (Single, Bounce) or "auto" (any case).
enum class CopyPath { Auto, Single, Bounce };
Result env_copy_path(const char *name, CopyPath fallback, CopyPath *out);

// TCA_TIMING and the model's parameters (TimingModel::parameters(), each
// within its min..max; TCA_LINK_BANDWIDTH_MBS is the old name of
// TCA_HOST_BANDWIDTH_MBS, which wins where both are set).
Result timing_from_environment(TimingModel *out);

// How blocking calls wait, on every backend.
struct TCA_PLUGIN_API WaitPolicy {
    int64_t spin_ns = 20'000;             // busy-poll this long before sleeping (TCA_SPIN_NS)
    int64_t timeout_ns = 30'000'000'000;  // give up after (TCA_TIMEOUT_MS)
    // The ucx device's progress thread drives its worker only this long
    // after an application thread last did (a wait in libtca, tcaProgress):
    // sooner, it competes for UCX's worker lock with a thread that is only
    // off its core for a moment (TCA_TAKEOVER_US; tcaSetProgressTakeover
    // changes it on the running device).
    int64_t takeover_ns = 1'000'000;
    // tcaErrorInvalidValue (after a line naming the variable) on a bad value.
    static Result from_environment(WaitPolicy *out);
};

// Internal memory per node (TCA_INTERNAL_SIZE): at least what the rings of a
// small job need, at most what fits a node's internal region of the address map.
constexpr EnvRange kInternalSize{8ull << 20, 64ull << 10, 1ull << 30, true};

// Bytes in one DMA run from which its copies use non-temporal stores
// (TCA_STREAMING_MIN); 0, the default: the last-level cache's size, at most 8 MiB.
constexpr EnvRange kStreamingMin{0, 0, 1ull << 50, true};

// Everything the environment configures in a device, read and checked before
// anything is created.
struct TCA_PLUGIN_API DeviceSettings {
    uint64_t internal_size = kInternalSize.fallback;  // TCA_INTERNAL_SIZE
    // TCA_SHARED_HEAP=0: tcaMalloc(tcaMemoryCPU) memory is private, so puts into
    // it take process_vm_writev or the bounce path (their tests, locked-down hosts).
    bool shared_heap = true;
    bool s_links = false;  // TCA_S_LINKS: two rings joined by S links (even N >= 4)
    // TCA_SINGLE_COPY: how puts reach another process's private memory:
    // 1 process_vm_writev, 0 the bounce path, auto (unset): PIO writes as
    // measured at start-up (copy_probe.hpp), DMA runs by process_vm_writev.
    CopyPath single_copy = CopyPath::Auto;
    uint64_t streaming_min = kStreamingMin.fallback;  // TCA_STREAMING_MIN (0: auto)
    WaitPolicy policy;                                // TCA_SPIN_NS, TCA_TIMEOUT_MS
    TimingModel timing;                               // TCA_TIMING and the model's parameters

    static Result from_environment(DeviceSettings *out);
};

// "64K", "1G", "300" - a byte count the way a user would write it.
std::string format_size(uint64_t bytes);

}  // namespace tca
