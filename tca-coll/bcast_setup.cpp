// bcast_setup.cpp - what both engines need before the first epoch: counter
// bases, the staged protocol's initial credits, a rank's place at its parent.
#include <algorithm>
#include <initializer_list>

#include "bcast_engine.hpp"

namespace tca::coll {

tcaResult init_counters(EngineSetup &s) {
    for (Counter *c : {&s.data, &s.ready, &s.go, &s.done})
        if (c->index >= 0)
            if (const tcaResult r = tcaCounterRead(c->index, &c->base); r != tcaSuccess)
                return r;
    for (Counter &c : s.credits) {
        if (const tcaResult r = tcaCounterRead(c.index, &c.base); r != tcaSuccess)
            return r;
        // Every slot of every child starts free.
        if (const tcaResult r = tcaCounterAdd(c.index, s.plan->slots); r != tcaSuccess)
            return r;
    }
    return tcaSuccess;
}

tcaResult counter_moved(const Counter &c, uint64_t *moved) {
    uint64_t v = 0;
    const tcaResult r = tcaCounterRead(c.index, &v);
    *moved = v - c.base;
    return r;
}

int index_at_parent(const BcastPlan &plan, int rank) {
    const int parent = plan.roles[static_cast<size_t>(rank)].parent;
    if (parent < 0)
        return -1;
    const std::vector<int> &siblings = plan.roles[static_cast<size_t>(parent)].children;
    return static_cast<int>(std::find(siblings.begin(), siblings.end(), rank) - siblings.begin());
}

bool credits_settled(const EngineSetup &s, uint64_t epochs) {
    if (s.plan->slots == 0)
        return true;  // direct plans return no credits
    for (const Counter &c : s.credits) {
        uint64_t moved = 0;
        if (counter_moved(c, &moved) != tcaSuccess ||
            moved < s.plan->slots + epochs * s.plan->segments)
            return false;
    }
    return true;
}

tcaResult return_owed_credits(const EngineSetup &s, uint64_t epochs) {
    const BcastPlan &p = *s.plan;
    if (p.slots == 0 || p.roles[static_cast<size_t>(s.rank)].parent < 0)
        return tcaSuccess;
    const uint64_t owed = epochs * p.segments % p.credit_batch;
    if (owed == 0)
        return tcaSuccess;
    return tcaCounterAddRemote(s.parent.node, credit_counter_at_parent(s), owed);
}

int credit_counter_at_parent(const EngineSetup &s) {
    return s.parent.credit_counter + index_at_parent(*s.plan, s.rank);
}

bool offload_needs_channel(const BcastPlan &plan, int rank) {
    const RankRole &role = plan.roles[static_cast<size_t>(rank)];
    if (plan.segments == 0)
        return false;
    return !role.children.empty() ||
           (plan.slots > 0 && role.parent >= 0);  // staged leaves copy out by DMA
}

}  // namespace tca::coll
