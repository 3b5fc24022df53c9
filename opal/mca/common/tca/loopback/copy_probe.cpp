// copy_probe.cpp - see copy_probe.hpp.
#include "loopback/copy_probe.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace tca::loopback {

namespace {

double us_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

CopyProbe probe_copies(size_t bytes, int repeats) {
    CopyProbe p;
    p.bytes = bytes;
    std::vector<unsigned char> from(bytes, 1),
        to(bytes, 2);  // touched: no page faults in the timings
    double best_cma = std::numeric_limits<double>::infinity(), best_copy = best_cma;
    const pid_t self = getpid();
    for (int i = 0; i < std::max(repeats, 1); ++i) {
        auto t0 = std::chrono::steady_clock::now();
        std::memcpy(to.data(), from.data(), bytes);
        best_copy = std::min(best_copy, us_since(t0));
        iovec local{from.data(), bytes}, remote{to.data(), bytes};
        t0 = std::chrono::steady_clock::now();
        const ssize_t done = process_vm_writev(self, &local, 1, &remote, 1, 0);
        if (done != static_cast<ssize_t>(bytes)) {
            p.error = done < 0 ? errno : EIO;
            break;
        }
        best_cma = std::min(best_cma, us_since(t0));
    }
    p.memcpy_us = best_copy;
    p.single_copy_us = p.error != 0 ? 0 : best_cma;
    return p;
}

bool single_copy_pays(const CopyProbe &p) noexcept {
    return p.error == 0 && p.single_copy_us <= kSingleCopyMaxRatio * p.memcpy_us;
}

std::string describe(const CopyProbe &p) {
    char text[160];
    if (p.error != 0)
        std::snprintf(text, sizeof text, "process_vm_writev refused: %s", std::strerror(p.error));
    else
        std::snprintf(text, sizeof text, "CMA %.1f us, memcpy %.1f us / %zu KiB", p.single_copy_us,
                      p.memcpy_us, p.bytes / 1024);
    return text;
}

}  // namespace tca::loopback
