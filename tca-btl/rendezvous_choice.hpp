// rendezvous_choice.hpp - per peer, which of ob1's two rendezvous protocols a
// host message beyond the eager limit takes (btl_tca_rendezvous_choice
// traffic), from what is in flight between the two processes.  ob1 asks the
// BTL to register the whole message (REMOTE_READ) and runs its RGET
// rendezvous where that succeeds, its copy protocol through the rings where it
// is refused.
//
// The rules (measured, docs/mpi.md):
// - a lone message (nothing of ours in flight to that peer, nothing queued
//   for its ring) by RGET: it waits for every hop, and RGET is one copy
//   behind three ring messages where the copy protocol is two copies in a row
//   behind a handshake (64 KiB one way 5.9 against 8.5 us);
// - a message of a stream where the peer streams to us as well by RGET: both
//   cores are busy with their own direction, each copying its data once (a
//   window each way of 256 KiB: 34 against 15 GB/s by copy);
// - a message of a stream one way by the copy protocol: its two copies run on
//   both cores at once where a single copy runs on the sender's alone (a
//   window of 1 MiB messages from cold buffers: 8.4 against 5.5 GB/s);
// - unless it comes from the buffer the previous one to that peer came from,
//   and that fits the cache (up to kCachedMax): its data was just read, and a
//   single copy from the sender's cache beats two copies moving every line
//   between the cores (osu_bw's shape, one buffer: 256 KiB 21.0 against 15.6
//   GB/s by copy).
// Whether we stream is a word we store into the peer's area when it changes
// (the device's one way to tell a peer anything): on at a message of a
// stream, off after kQuietAfter lone ones in a row (a window's first message
// is lone every time; a bidirectional exchange must not forget itself there).
#pragma once

#include <atomic>
#include <cstdint>

#include "tca_btl_core.h"

namespace tca::btl {

class RendezvousChooser {
public:
    static constexpr uint32_t kQuietAfter = 4;
    static constexpr uint64_t kCachedMin = uint64_t{64} << 10;  // exclusive
    static constexpr uint64_t kCachedMax = uint64_t{1} << 20;
    enum class Announce { kNothing, kStreaming, kQuiet };
    struct Choice {
        bool rdma;
        Announce announce;
    };

    // peer_streams: the word the peer stored into our area.  Threads may
    // call at once (MPI_THREAD_MULTIPLE): each change is announced once.
    Choice choose(const tca_btl_rendezvous_t &r, bool peer_streams) noexcept {
        if (r.size > r.copy_max)
            return {true, Announce::kNothing};  // beyond what the copy protocol may carry
        if (!r.by_traffic)
            return {false, Announce::kNothing};
        if (r.rendezvous_in_flight <= 0 && r.queued <= 0) {
            const bool quiet = lone_run_.fetch_add(1, std::memory_order_relaxed) + 1 >= kQuietAfter;
            const bool was = quiet && streaming_.exchange(false, std::memory_order_relaxed);
            return {true, was ? Announce::kQuiet : Announce::kNothing};
        }
        lone_run_.store(0, std::memory_order_relaxed);
        const bool was = streaming_.exchange(true, std::memory_order_relaxed);
        const bool cached = r.same_buffer && r.size > kCachedMin && r.size <= kCachedMax;
        return {peer_streams || cached, was ? Announce::kNothing : Announce::kStreaming};
    }

private:
    std::atomic<uint32_t> lone_run_{0};
    std::atomic<bool> streaming_{false};
};

}  // namespace tca::btl
