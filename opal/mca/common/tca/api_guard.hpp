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

// The process's device, or tcaErrorNotInitialized; f(Device *) guarded.
template <class F>
tcaResult on_device(F &&f) noexcept {
    Device *dev = current_device();
    if (dev == nullptr)
        return tcaErrorNotInitialized;
    return guarded([&] { return f(dev); });
}

}  // namespace tca
