// collective_paper.cpp - see collective_paper.hpp.
#include "collective_paper.hpp"

#include <algorithm>
#include <vector>

namespace tca::bench {

namespace {
// The model's own figures: no real-time handoff taken off.
TimingModel on_paper(TimingModel m) {
    m.enabled = true;
    m.virtual_time = true;
    return m;
}
int lowbit(int r) {
    return r & -r;
}
}  // namespace

double b4_paper_ns(const TimingModel &model, const Topology &t, int ranks, size_t bytes) {
    const TimingModel m = on_paper(model);
    std::vector<int64_t> landed(static_cast<size_t>(ranks), 0);
    int64_t last = 0;
    // Parents come before their children in rank order (a parent is r - lowbit(r)).
    for (int r = 0; r < ranks; ++r) {
        const int span = r == 0 ? ranks : lowbit(r);
        if (span == 1) {
            last = std::max(last, landed[static_cast<size_t>(r)]);
            continue;
        }
        ChainClock c;
        c.start(m, landed[static_cast<size_t>(r)]);
        bool first = true;
        for (int k = span / 2; k >= 1; k /= 2) {
            const ChainClock::Window w =
                c.next(m, DescriptorCost{bytes, 1, false, t.hops(r, r + k), false, false});
            landed[static_cast<size_t>(r + k)] = w.done_ns;
            if (first)
                last = std::max(last, w.done_ns);  // its one self-notification waited
            first = false;
        }
    }
    return static_cast<double>(last);
}

double b5_paper_ns(const TimingModel &model, const Topology &t, int ranks, size_t block) {
    const TimingModel m = on_paper(model);
    std::vector<int64_t> at(static_cast<size_t>(ranks), 0), done(static_cast<size_t>(ranks), 0);
    for (int s = 0; (1 << s) < ranks; ++s) {
        for (int r = 0; r < ranks; ++r) {
            ChainClock c;
            c.start(m, at[static_cast<size_t>(r)]);
            if (s == 0)  // the rank's own block into its receive buffer
                (void) c.next(m, DescriptorCost{block, 1, false, 0, false, false});
            done[static_cast<size_t>(r)] =
                c.next(m,
                       DescriptorCost{block << s, 1, false, t.hops(r, r ^ (1 << s)), false, false})
                    .done_ns;
        }
        for (int r = 0; r < ranks; ++r)  // the partner's data landed
            at[static_cast<size_t>(r)] =
                std::max(at[static_cast<size_t>(r)], done[static_cast<size_t>(r ^ (1 << s))]);
    }
    return static_cast<double>(*std::max_element(at.begin(), at.end()));
}

}  // namespace tca::bench
