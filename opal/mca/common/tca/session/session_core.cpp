// session_core.cpp - see session_core.h.  One membership per process: the
// components are separate DSOs, but they link one copy of this library.
#include "session/session_core.h"

#include "session/liveness.h"

#include "base/build_info.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "tca.h"

namespace {

// The size a request means on a host of local_size processes.
int effective_size(int requested, int local_size) {
    int size = requested;
    if (size <= 0 || size > local_size)
        size = local_size;
    return std::min(size, TCA_MAX_NODES);
}

class Membership {
public:
    int join(int requested, int local_rank, int local_size, tca_session_start_fn start, void *ctx,
             tca_session_place_t *place, int *device_result, char *why, size_t why_len) {
        std::lock_guard g(lock_);
        if (clients_ > 0) {
            if (requested >= 0 && effective_size(requested, local_size) != size_) {
                std::snprintf(why, why_len,
                              "this process already is node %d of its TCA sub-cluster, with "
                              "sub-clusters of %d "
                              "processes; a sub-cluster size of %d was asked for as well (all TCA "
                              "components of a "
                              "process share one node)",
                              place_.node, size_, requested);
                return TCA_SESSION_CONFLICT;
            }
            ++clients_;
            *place = place_;
            return TCA_SESSION_JOINED;
        }
        const int size = effective_size(requested < 0 ? 0 : requested, local_size);
        const tca_session_place_t p = tca_session_place(local_rank, local_size, size);
        if (p.num_nodes < 2)
            return TCA_SESSION_ALONE;
        if (const int r = start(&p, ctx); r != tcaSuccess) {
            *device_result = r;
            return TCA_SESSION_START_FAILED;
        }
        size_ = size;
        place_ = p;
        clients_ = 1;
        *place = p;
        return TCA_SESSION_STARTED;
    }
    int leave() {
        std::lock_guard g(lock_);
        if (clients_ == 0)
            return 0;
        return --clients_ == 0 ? 1 : 0;
    }
    int clients() {
        std::lock_guard g(lock_);
        return clients_;
    }

private:
    std::mutex lock_;
    int clients_ = 0;
    int size_ = 0;
    tca_session_place_t place_{-1, -1, 0};
};

Membership &membership() {
    static Membership m;
    return m;
}

}  // namespace

extern "C" {

tca_session_place_t tca_session_place(int local_rank, int local_size, int subcluster_size) {
    const int size = effective_size(subcluster_size, local_size);
    tca_session_place_t p{};
    p.subcluster = local_rank / size;
    p.node = local_rank % size;
    p.num_nodes = std::min(size, local_size - p.subcluster * size);
    return p;
}

int tca_session_core_join(int requested_size, int local_rank, int local_size,
                          tca_session_start_fn start, void *ctx, tca_session_place_t *place,
                          int *device_result, char *why, size_t why_len) {
    return membership().join(requested_size, local_rank, local_size, start, ctx, place,
                             device_result, why, why_len);
}

int tca_session_core_leave(void) {
    const int last = membership().leave();
    if (last)
        tca_session_liveness_reset();  // the next session's nodes are others
    return last;
}

int tca_session_core_clients(void) {
    return membership().clients();
}

int tca_session_core_optimized(void) {
    return tca::kBuiltOptimized ? 1 : 0;
}

}  // extern "C"
