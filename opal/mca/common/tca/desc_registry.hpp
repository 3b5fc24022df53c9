// desc_registry.hpp - the live tcaDesc objects of this process, so that the
// C API can refuse a freed, forged or foreign descriptor pointer.
#pragma once

#include <deque>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <unordered_set>
#include <vector>

#include "model/descriptor.hpp"
#include "tca.h"

struct tcaDesc {
    std::vector<tca::Descriptor> chain;
};

namespace tca {

// Every tcaDesc that tcaDescNew made and tcaDescFree has not freed.  A freed,
// forged or foreign pointer is refused (tcaErrorInvalidValue) before it is
// dereferenced: a second tcaDescFree is an error, not a crash.  Calls on a
// descriptor hold the lock shared, tcaDescFree exclusively, so a free racing a
// use in another thread is refused too.  Freed descriptors are kept (empty) in
// a quarantine for a while, so the next tcaDescNew does not get the same
// address back and turn a double free into freeing someone else's chain.
// Never destroyed: a descriptor may be freed from another static destructor at exit.
class DescRegistry {
public:
    tcaDesc *create() {
        auto *d = new (std::nothrow) tcaDesc;
        if (d == nullptr) return nullptr;
        try {
            std::unique_lock g(lock_);
            live_.insert(d);
        } catch (...) {
            delete d;
            return nullptr;
        }
        return d;
    }
    bool destroy(tcaDesc *d) {
        std::unique_lock g(lock_);
        if (live_.erase(d) == 0) return false;
        std::vector<tca::Descriptor>().swap(d->chain);  // its memory goes back now
        quarantine_.push_back(d);
        if (quarantine_.size() > kQuarantine) {
            delete quarantine_.front();
            quarantine_.pop_front();
        }
        return true;
    }
    // fork(): held across it, so the child's copy is never locked for good.
    void lock_for_fork() { lock_.lock(); }
    void unlock_after_fork() { lock_.unlock(); }

    // f(desc) under the shared lock, or tcaErrorInvalidValue for an unknown pointer.
    template <class F>
    tcaResult with(const tcaDesc *d, F &&f) {
        std::shared_lock g(lock_);
        if (d == nullptr || live_.count(d) == 0) return tcaErrorInvalidValue;
        return f(const_cast<tcaDesc *>(d));
    }

private:
    static constexpr size_t kQuarantine = 1024;
    std::shared_mutex lock_;
    std::unordered_set<const tcaDesc *> live_;
    std::deque<tcaDesc *> quarantine_;
};
inline DescRegistry &descs() {
    static auto *r = new DescRegistry;
    return *r;
}

}  // namespace tca
