// api_guard.hpp - no C++ exception crosses the C API: an allocation failure
// becomes tcaErrorNoMemory, anything else tcaErrorSystem with a log line.
// Every entry point that reaches the process's device goes through
// on_device, every other one that can throw through guarded (the test
// ApiGuard.* runs the whole API over a device whose every call throws).
#pragma once

#include <cstdio>
#include <exception>
#include <new>

#include "device.hpp"
#include "tca.h"

namespace tca {

template <class F>
tcaResult guarded(F &&f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return tcaErrorNoMemory;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tca: internal error: %s\n", e.what());
        return tcaErrorSystem;
    } catch (...) {
        std::fprintf(stderr, "tca: internal error (not a std::exception)\n");
        return tcaErrorSystem;
    }
}

// The application inside the device for the object's life (virtual time
// charges the CPU time outside as its computation).
class AppInDevice {
public:
    explicit AppInDevice(Device *dev) noexcept : dev_(dev) { dev_->app_enter(); }
    ~AppInDevice() { dev_->app_leave(); }
    AppInDevice(const AppInDevice &) = delete;
    AppInDevice &operator=(const AppInDevice &) = delete;

private:
    Device *dev_;
};

// The process's device, or tcaErrorNotInitialized; f(Device *) guarded.
template <class F>
tcaResult on_device(F &&f) noexcept {
    Device *dev = current_device();
    if (dev == nullptr)
        return tcaErrorNotInitialized;
    const AppInDevice inside(dev);
    return guarded([&] { return f(dev); });
}

}  // namespace tca
