// env_settings.cpp - strict parsing of libtca's numeric environment variables.
#include "loopback/env_settings.hpp"

#include <cstdio>
#include <cstdlib>

#include "tca_units.h"

namespace tca::loopback {

std::string format_size(uint64_t bytes) {
    static constexpr struct {
        unsigned shift;
        char unit;
    } units[] = {{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}};
    for (const auto &u : units)
        if (bytes != 0 && bytes % (uint64_t{1} << u.shift) == 0)
            return std::to_string(bytes >> u.shift) + u.unit;
    return std::to_string(bytes);
}

Result env_number(const char *name, const EnvRange &range, uint64_t *out) {
    const char *v = std::getenv(name);
    if (v == nullptr) {
        *out = range.fallback;
        return tcaSuccess;
    }
    uint64_t n = 0;
    const tca_parse_status st = tca_parse_size(v, range.units ? 1 : 0, &n);
    const auto bound = [&](uint64_t x) { return range.units ? format_size(x) : std::to_string(x); };
    const char *why = st != TCA_PARSE_OK ? tca_parse_status_string(st)
                      : n < range.min   ? "below the minimum"
                      : n > range.max   ? "above the maximum"
                                        : nullptr;
    if (why == nullptr) {
        *out = n;
        return tcaSuccess;
    }
    std::fprintf(stderr, "tca: %s='%s' is invalid: %s (allowed: %s..%s%s)\n", name, v, why,
                 bound(range.min).c_str(), bound(range.max).c_str(),
                 range.units ? " bytes, optionally with a K, M, G or T suffix" : "");
    return tcaErrorInvalidValue;
}

}  // namespace tca::loopback
