// window_registrations.cpp - see window_registrations.hpp.
#include "window_registrations.hpp"

#include <new>

#include "tca_btl_core.h"

namespace tca::btl {

WindowRegistrations::WindowRegistrations(uint32_t capacity) : entries_(capacity) {
    free_.reserve(capacity);
}

tcaResult WindowRegistrations::add(void *addr, size_t size, tcaHandle *out, uint32_t *slot) {
    tcaHandle h{};
    // Outside our lock: the device may allocate (and so release memory).
    if (tcaResult r = tcaCreateHandle(&h, addr, size, tcaMemoryCPU); r != tcaSuccess)
        return r;
    uint32_t s = 0;
    {
        std::lock_guard g(lock_);
        if (!free_.empty()) {
            s = free_.back();
            free_.pop_back();
        } else if (high_ < entries_.size()) {
            s = high_++;
        } else {
            s = UINT32_MAX;
        }
        if (s != UINT32_MAX) {
            Entry &e = entries_[s];
            e.begin = reinterpret_cast<uintptr_t>(addr);
            e.end = e.begin + size;
            e.handle = h;
            e.state = State::Live;
            live_.fetch_add(1, std::memory_order_relaxed);
        }
    }
    if (s == UINT32_MAX) {
        tcaDestroyHandle(&h);
        return tcaErrorNoResource;
    }
    *out = h;
    *slot = s;
    return tcaSuccess;
}

void WindowRegistrations::remove(uint32_t slot) {
    tcaHandle h{};
    bool destroy = false;
    {
        std::lock_guard g(lock_);
        if (slot >= high_ || entries_[slot].state == State::Free)
            return;
        Entry &e = entries_[slot];
        // Revoked: the device ended it already (its slot may be someone
        // else's by now).  Unrevokable: the memory went, but only a plain
        // deregistration can end it.
        destroy = e.state != State::Revoked;
        h = e.handle;
        e.state = State::Free;
        free_.push_back(slot);
        live_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (destroy)
        tcaDestroyHandle(&h);  // outside our lock: the device may release memory
}

void WindowRegistrations::released(uintptr_t addr, size_t len) noexcept {
    if (live_.load(std::memory_order_relaxed) == 0 || len == 0)
        return;
    const uintptr_t end = addr + len < addr ? UINTPTR_MAX : addr + len;
    std::lock_guard g(lock_);
    for (uint32_t i = 0; i < high_; ++i) {
        Entry &e = entries_[i];
        // Exact byte ranges: pages given back beside a registration (a
        // neighbour's free) are not its memory.
        if (e.state != State::Live || e.end <= addr || e.begin >= end || e.begin == e.end)
            continue;
        if (tcaRevokeHandle(&e.handle) == tcaSuccess) {
            e.state = State::Revoked;
            revoked_.fetch_add(1, std::memory_order_relaxed);
        } else {
            e.state = State::Unrevokable;
        }
    }
}

}  // namespace tca::btl

// ---- C interface (tca_btl_core.h) ----
struct tca_btl_windows {
    explicit tca_btl_windows(uint32_t capacity) : windows(capacity) {}
    tca::btl::WindowRegistrations windows;
};

extern "C" {

tca_btl_windows_t *tca_btl_windows_new(uint32_t capacity) {
    try {
        return new tca_btl_windows(capacity);
    } catch (const std::bad_alloc &) {  // the tables too, not only the object
        return nullptr;
    }
}
void tca_btl_windows_free(tca_btl_windows_t *w) {
    delete w;
}
int tca_btl_windows_add(tca_btl_windows_t *w, void *addr, size_t size, tcaHandle *out,
                        uint32_t *slot) {
    try {
        return w->windows.add(addr, size, out, slot);
    } catch (const std::bad_alloc &) {
        return tcaErrorNoMemory;
    }
}
void tca_btl_windows_remove(tca_btl_windows_t *w, uint32_t slot) {
    w->windows.remove(slot);
}
void tca_btl_windows_released(tca_btl_windows_t *w, uintptr_t addr, size_t len) {
    w->windows.released(addr, len);
}
uint64_t tca_btl_windows_revoked(const tca_btl_windows_t *w) {
    return w->windows.revoked();
}

}  // extern "C"
