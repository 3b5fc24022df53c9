// tca_api_vtime.cpp - the virtual-time extension of the C API: tcaWtime,
// tcaWtimeAtLeast, tcaVirtualTimeHold (model/virtual_clock.hpp has the rules).
#include <time.h>

#include <cmath>

#include "api_guard.hpp"
#include "device.hpp"
#include "tca.h"

namespace {
double monotonic_seconds() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

double tcaWtime(void) {
    double t = 0;
    // A call into the device: the computation since the last one is charged.
    const tcaResult r = tca::on_device([&](tca::Device *dev) {
        const tca::VirtualClock *c = dev->virtual_clock();
        if (c == nullptr)
            return tcaErrorNotSupported;
        t = static_cast<double>(c->now_ns()) * 1e-9;
        return tcaSuccess;
    });
    return r == tcaSuccess ? t : monotonic_seconds();
}

tcaResult tcaWtimeAtLeast(double seconds) {
    if (!std::isfinite(seconds))
        return tcaErrorInvalidValue;
    return tca::on_device([&](tca::Device *dev) {
        if (tca::VirtualClock *c = dev->virtual_clock())
            c->advance_to(static_cast<int64_t>(seconds * 1e9));
        return tcaSuccess;
    });
}

tcaResult tcaVirtualTimeMessage(int node, size_t bytes) {
    return tca::on_device([&](tca::Device *dev) { return dev->virtual_message(node, bytes); });
}

tcaResult tcaVirtualTimeHold(int hold) {
    tca::Device *dev = tca::current_device();
    if (dev == nullptr)
        return tcaErrorNotInitialized;
    dev->app_hold(hold != 0);
    return tcaSuccess;
}
