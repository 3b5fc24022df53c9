// desc_registry.hpp - the live tcaDesc objects of this process, so that the
// C API can refuse a freed, forged or foreign descriptor pointer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "model/descriptor.hpp"
#include "tca.h"

struct tcaDesc {
    std::vector<tca::Descriptor> chain;
};

namespace tca {

// Every tcaDesc that tcaDescNew made and tcaDescFree has not freed.  A freed,
// forged or foreign pointer is refused (tcaErrorInvalidValue) before it is
// dereferenced: a second tcaDescFree is an error, not a crash.
//
// Descriptors live in slots of chunks that are never given back, so a
// pointer is checked by address (inside a chunk, at a slot's start) before
// anything behind it is read.  A call on a descriptor (`with`) takes no lock:
// it counts itself into its slot's state word, which also holds the live
// bit, so the hot path (btl tca sets and loads a descriptor three times per
// DMA put) touches only the descriptor's own line.  tcaDescFree clears the
// live bit - calls after it are refused - and waits for the calls already
// inside to leave before it empties the chain.  Freed slots are quarantined:
// reused only after kQuarantine other frees, so the next tcaDescNew does not
// get the same address back and turn a double free into freeing someone
// else's chain.  Making and freeing descriptors takes a mutex (not the hot
// path).  Never destroyed: a descriptor may be freed from another static
// destructor at exit.
class DescRegistry {
public:
    tcaDesc *create() {
        std::lock_guard g(lock_);
        Slot *s = nullptr;
        if (quarantine_.size() > kQuarantine) {
            s = quarantine_.front();
            quarantine_.pop_front();
        } else if ((s = fresh_slot()) == nullptr) {
            return nullptr;
        }
        // Or, not a store: a stale pointer's refused call may be counted in
        // at this moment, and leaves again.
        s->state.fetch_or(kLive, std::memory_order_release);
        return &s->desc;
    }

    bool destroy(tcaDesc *d) {
        Slot *s = slot_of(d);
        if (s == nullptr)
            return false;
        // Only one free wins the live bit; a use after it is refused.
        if ((s->state.fetch_and(~kLive, std::memory_order_acq_rel) & kLive) == 0)
            return false;
        if (!drained(*s))
            return true;  // a use that never leaves (a thread gone across fork): leak the slot
        std::vector<tca::Descriptor>().swap(s->desc.chain);  // its memory goes back now
        std::lock_guard g(lock_);
        quarantine_.push_back(s);
        return true;
    }

    // fork(): held across it, so the child's copy is never locked for good.
    void lock_for_fork() { lock_.lock(); }
    void unlock_after_fork() { lock_.unlock(); }

    // f(desc) counted in as a user, or tcaErrorInvalidValue for a pointer
    // that is not a live descriptor.
    template <class F>
    tcaResult with(const tcaDesc *d, F &&f) {
        Slot *s = slot_of(d);
        if (s == nullptr)
            return tcaErrorInvalidValue;
        if ((s->state.fetch_add(1, std::memory_order_acquire) & kLive) == 0) {
            s->state.fetch_sub(1, std::memory_order_release);
            return tcaErrorInvalidValue;
        }
        struct Leave {
            Slot *s;
            ~Leave() { s->state.fetch_sub(1, std::memory_order_release); }
        } leave{s};
        return f(&s->desc);
    }

    static constexpr size_t kQuarantine = 1024;
    static constexpr size_t kChunkSlots = 256;
    static constexpr size_t kMaxChunks = 4096;  // ~1 M descriptors alive at once

private:
    static constexpr uint32_t kLive = 1u << 31;  // below it: calls inside
    struct alignas(64) Slot {  // a line each: descriptors used by different threads share none
        tcaDesc desc;          // first: a tcaDesc* is the slot's address
        std::atomic<uint32_t> state{0};
    };
    struct Chunk {
        Slot slots[kChunkSlots];
    };

    // The slot a pointer names, or nullptr; reads nothing behind it.
    Slot *slot_of(const tcaDesc *d) const noexcept {
        const auto p = reinterpret_cast<uintptr_t>(d);
        const size_t n = chunk_count_.load(std::memory_order_acquire);
        for (size_t i = 0; i < n; ++i) {
            Chunk *c = chunks_[i].load(std::memory_order_acquire);
            const auto base = reinterpret_cast<uintptr_t>(c->slots);
            if (p < base || p >= base + sizeof c->slots)
                continue;
            if ((p - base) % sizeof(Slot) != 0)
                return nullptr;
            return &c->slots[(p - base) / sizeof(Slot)];
        }
        return nullptr;
    }

    Slot *fresh_slot() {  // under lock_
        if (next_fresh_ == kChunkSlots || chunk_count_.load(std::memory_order_relaxed) == 0) {
            const size_t n = chunk_count_.load(std::memory_order_relaxed);
            if (n == kMaxChunks)
                return nullptr;
            auto *c = new (std::nothrow) Chunk;
            if (c == nullptr)
                return nullptr;
            chunks_[n].store(c, std::memory_order_release);
            chunk_count_.store(n + 1, std::memory_order_release);
            next_fresh_ = 0;
        }
        Chunk *c = chunks_[chunk_count_.load(std::memory_order_relaxed) - 1].load(
            std::memory_order_relaxed);
        return &c->slots[next_fresh_++];
    }

    // The calls inside when the live bit went have left (bounded: a call
    // counted in by a thread that did not cross fork() never leaves).
    static bool drained(const Slot &s) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        for (int spins = 0; (s.state.load(std::memory_order_acquire) & ~kLive) != 0; ++spins) {
            if (spins > 1000)
                std::this_thread::yield();
            if (std::chrono::steady_clock::now() > give_up)
                return false;
        }
        return true;
    }

    std::mutex lock_;
    std::unique_ptr<std::atomic<Chunk *>[]> chunks_ { new std::atomic<Chunk *>[ kMaxChunks ]() };
    std::atomic<size_t> chunk_count_{0};
    size_t next_fresh_ = 0;
    std::deque<Slot *> quarantine_;
};
inline DescRegistry &descs() {
    static auto *r = new DescRegistry;
    return *r;
}

}  // namespace tca
