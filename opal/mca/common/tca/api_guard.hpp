// api_guard.hpp - no C++ exception crosses the C API: an allocation failure
// becomes tcaErrorNoMemory, anything else tcaErrorSystem with a log line.
#pragma once

#include <cstdio>
#include <exception>
#include <new>

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
    }
}

}  // namespace tca
