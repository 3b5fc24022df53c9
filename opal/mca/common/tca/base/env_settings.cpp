// env_settings.cpp - strict parsing of libtca's environment variables.
#include "base/env_settings.hpp"

#include <cstdio>
#include <cstdlib>
#include <strings.h>

#include "base/setting_source.hpp"
#include "tca_units.h"

namespace tca {

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

namespace {
Result refuse(const char *name, const char *value, const char *why, const std::string &allowed) {
    const std::string msg =
        std::string(name) + "='" + value + "' is invalid: " + why + " (allowed: " + allowed + ")";
    std::fprintf(stderr, "tca: %s\n", msg.c_str());
    set_error_detail(msg.c_str());  // tcaGetErrorDetail
    return tcaErrorInvalidValue;
}

// Why a parsed value is refused, or nullptr: both kinds of range alike.
template <class T>
const char *out_of_range(tca_parse_status st, T v, T min, T max) {
    return st != TCA_PARSE_OK ? tca_parse_status_string(st)
           : v < min          ? "below the minimum"
           : v > max          ? "above the maximum"
                              : nullptr;
}

std::string format_real(double x) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.10g", x);
    return buf;
}
}  // namespace

Result env_number(const char *name, const EnvRange &range, uint64_t *out) {
    const SettingText given = setting_text(name);
    if (!given.given || (range.auto_ok && strcasecmp(given.text.c_str(), "auto") == 0)) {
        *out = range.fallback;
        return tcaSuccess;
    }
    const char *v = given.text.c_str();
    name = given.given_by.c_str();
    uint64_t n = 0;
    const tca_parse_status st = tca_parse_size(v, range.units ? 1 : 0, &n);
    const auto bound = [&](uint64_t x) { return range.units ? format_size(x) : std::to_string(x); };
    if (const char *why = out_of_range(st, n, range.min, range.max); why != nullptr)
        return refuse(name, v, why,
                      bound(range.min) + ".." + bound(range.max) +
                          (range.units ? " bytes, optionally with a K, M, G or T suffix" : "") +
                          (range.auto_ok ? ", or auto" : ""));
    *out = n;
    return tcaSuccess;
}

Result env_real(const char *name, const RealRange &range, double *out) {
    const SettingText given = setting_text(name);
    if (!given.given) {
        *out = range.fallback;
        return tcaSuccess;
    }
    const char *v = given.text.c_str();
    name = given.given_by.c_str();
    double d = 0;
    const tca_parse_status st = tca_parse_real(v, &d);
    if (const char *why = out_of_range(st, d, range.min, range.max); why != nullptr)
        return refuse(name, v, why,
                      format_real(range.min) + ".." + format_real(range.max) +
                          ", a decimal number");
    *out = d;
    return tcaSuccess;
}

namespace {
// A set value: a boolean, or refused with `allowed` named.
Result read_bool(const char *name, const char *v, const char *allowed, bool *out) {
    int b = 0;
    const tca_parse_status st = tca_parse_bool(v, &b);
    if (st != TCA_PARSE_OK)
        return refuse(name, v, tca_parse_status_string(st), allowed);
    *out = b != 0;
    return tcaSuccess;
}
}  // namespace

Result env_bool(const char *name, bool fallback, bool *out) {
    const SettingText given = setting_text(name);
    if (!given.given) {
        *out = fallback;
        return tcaSuccess;
    }
    return read_bool(given.given_by.c_str(), given.text.c_str(),
                     "1, on, yes, true or 0, off, no, false", out);
}

Result env_copy_path(const char *name, CopyPath fallback, CopyPath *out) {
    const SettingText given = setting_text(name);
    if (!given.given || strcasecmp(given.text.c_str(), "auto") == 0) {
        *out = !given.given ? fallback : CopyPath::Auto;
        return tcaSuccess;
    }
    bool single = false;
    if (Result r = read_bool(given.given_by.c_str(), given.text.c_str(),
                             "1, on, yes, true, 0, off, no, false or auto", &single);
        r != tcaSuccess)
        return r;
    *out = single ? CopyPath::Single : CopyPath::Bounce;
    return tcaSuccess;
}

// TCA_TIMING: a boolean, or "virtual" (the model in virtual time).
static Result env_timing_mode(TimingModel *m) {
    const SettingText given = setting_text("TCA_TIMING");
    if (!given.given)
        return tcaSuccess;
    if (strcasecmp(given.text.c_str(), "virtual") == 0) {
        m->enabled = m->virtual_time = true;
        return tcaSuccess;
    }
    m->virtual_time = false;
    return read_bool(given.given_by.c_str(), given.text.c_str(),
                     "1, on, yes, true, virtual or 0, off, no, false", &m->enabled);
}

Result timing_from_environment(TimingModel *out) {
    TimingModel m;
    if (Result r = env_timing_mode(&m); r != tcaSuccess)
        return r;
    for (const TimingModel::Parameter &p : TimingModel::parameters()) {
        double fallback = m.*p.field;
        if (p.field == &TimingModel::host_bandwidth_mb_s) {  // the old name, under the new one
            if (Result r = env_real("TCA_LINK_BANDWIDTH_MBS", {fallback, p.min, p.max}, &fallback);
                r != tcaSuccess)
                return r;
        }
        if (Result r = env_real(p.variable, {fallback, p.min, p.max}, &(m.*p.field));
            r != tcaSuccess)
            return r;
    }
    *out = m;
    return tcaSuccess;
}

Result DeviceSettings::from_environment(DeviceSettings *out) {
    DeviceSettings s;
    if (Result r = env_number("TCA_INTERNAL_SIZE", kInternalSize, &s.internal_size);
        r != tcaSuccess)
        return r;
    if (Result r = env_bool("TCA_SHARED_HEAP", s.shared_heap, &s.shared_heap); r != tcaSuccess)
        return r;
    if (Result r = env_bool("TCA_S_LINKS", s.s_links, &s.s_links); r != tcaSuccess)
        return r;
    if (Result r = env_copy_path("TCA_SINGLE_COPY", s.single_copy, &s.single_copy); r != tcaSuccess)
        return r;
    if (Result r = env_number("TCA_STREAMING_MIN", kStreamingMin, &s.streaming_min);
        r != tcaSuccess)
        return r;
    if (Result r = WaitPolicy::from_environment(&s.policy); r != tcaSuccess)
        return r;
    if (Result r = timing_from_environment(&s.timing); r != tcaSuccess)
        return r;
    *out = s;
    return tcaSuccess;
}

Result WaitPolicy::from_environment(WaitPolicy *out) {
    WaitPolicy p;
    uint64_t spin = 0, timeout_ms = 0, takeover_us = 0;
    if (Result r = env_number("TCA_SPIN_NS",
                              {static_cast<uint64_t>(p.spin_ns), 0, 1'000'000'000, false}, &spin);
        r != tcaSuccess)
        return r;
    if (Result r = env_number(
            "TCA_TIMEOUT_MS",
            {static_cast<uint64_t>(p.timeout_ns / 1'000'000), 1, 86'400'000, false}, &timeout_ms);
        r != tcaSuccess)
        return r;
    if (Result r = env_number(
            "TCA_TAKEOVER_US",
            {static_cast<uint64_t>(p.takeover_ns / 1000), 0, 1'000'000, false, true}, &takeover_us);
        r != tcaSuccess)
        return r;
    p.spin_ns = static_cast<int64_t>(spin);
    p.takeover_ns = static_cast<int64_t>(takeover_us) * 1000;
    p.timeout_ns = static_cast<int64_t>(timeout_ms) * 1'000'000;
    *out = p;
    return tcaSuccess;
}

}  // namespace tca
