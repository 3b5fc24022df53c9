// env_settings.hpp - libtca's numeric environment variables (TCA_INTERNAL_SIZE,
// TCA_SPIN_NS, TCA_TIMEOUT_MS, TCA_SHARED_HEAP), read through the one size parser (tca_units.h)
// and range-checked: a bad value fails tcaInit with a line that names the
// variable, its value and what is allowed - never a silent default.
#pragma once

#include <cstdint>
#include <string>

#include "model/result.hpp"

namespace tca::loopback {

struct EnvRange {
    uint64_t fallback;  // when the variable is unset
    uint64_t min, max;
    bool units;  // accept k/M/G/T suffixes (sizes); plain counts otherwise
};

// tcaSuccess and *out = value (or the fallback); tcaErrorInvalidValue after
// printing "tca: NAME='value' is invalid: ... (allowed: min..max)".
Result env_number(const char *name, const EnvRange &range, uint64_t *out);

// "64K", "1G", "300" - a byte count the way a user would write it.
std::string format_size(uint64_t bytes);

}  // namespace tca::loopback
