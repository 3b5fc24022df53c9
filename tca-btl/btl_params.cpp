// btl_params.cpp - btl tca's MCA parameters: one row each, read by the glue
// to register them (ompi_info shows the help texts) and to check what Open
// MPI stored (it wraps "-1" to SIZE_MAX and reads "abc" as 0 without a word).
#include "btl_params.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tca.h"
#include "tca_btl_core.h"

namespace {

constexpr uint64_t kMaxBytes = uint64_t{1}
                               << 40;  // as TCA_MCA_MAX_BYTES: larger means a negative in disguise
// Eager payloads: ob1 needs room for its 56-byte header union; a ring slot
// holds at most 16 MiB.
constexpr uint64_t kMinEager = 128;
constexpr uint64_t kMaxEager = (uint64_t{1} << 24) - 64;
constexpr const char *kEagerAllowed = "128..16777152 bytes (k, M suffixes allowed)";
constexpr const char *kAlignAllowed = "0 or a power of two up to 64K";
constexpr const char *kMicros = "10..1000000 microseconds";

constexpr const char *kThreadModes[] = {"off", "on", "auto"};  // TCA_BTL_THREAD_* order
constexpr const char *kGetModes[] = {"off", "gpu", "all"};     // TCA_BTL_GET_* order
constexpr const char *kRndvChoices[] = {"size", "traffic"};    // TCA_BTL_RNDV_BY_* order

#define OWN(field) offsetof(tca_btl_settings_t, field)

const tca_btl_param_t kParams[] = {
    {"subcluster_size",
     "Processes per TCA sub-cluster on this host (0: all of them). The loopback device joins the "
     "processes of one host; a size below that splits them into sub-clusters of consecutive local "
     "ranks, which reach each other over tca and everyone else over the next BTL in the list "
     "(e.g. --mca btl tca,self,tcp), like HA-PACS/TCA's sub-clusters inside an InfiniBand system.",
     4, TCA_BTL_PARAM_INT, nullptr, 0, 0, 0, TCA_MAX_NODES, 0,
     "0 (all processes of a host) or 2..64", nullptr,
     "every process would be a sub-cluster of its own, with nobody to reach over tca",
     OWN(subcluster_size)},
    {"ring_slots",
     "Size of the eager ring per (sender, receiver) pair in the receiver's internal memory, in "
     "messages of the largest size (the largest of btl_tca_eager_limit, btl_tca_rndv_eager_limit "
     "and btl_tca_max_send_size); smaller messages take whole cache lines each, so more of them "
     "fit. "
     "0 (default): 64, halved (down to 2) until the rings of all peers fit in the device's "
     "internal memory "
     "(TCA_INTERNAL_SIZE). Else a power of two, 2..4096. Must be the same on every process.",
     5, TCA_BTL_PARAM_UNSIGNED, nullptr, 0, 0, 0, 4096, TCA_BTL_PARAM_ALL_EQ,
     "0 (auto) or a power of two, 2..4096", "not a power of two (a ring index is a mask)",
     "a ring needs at least 2 slots", OWN(ring_slots)},
    {"progress_thread",
     "Asynchronous progress thread: 'off' (progress only inside MPI calls), 'on' (a thread "
     "progresses "
     "messages while the application computes; it makes Open MPI thread-aware, like "
     "btl_tcp_progress_thread), "
     "'auto' (on only for MPI_THREAD_MULTIPLE, where the library is thread-aware anyway). The "
     "thread sleeps "
     "while the application itself calls MPI and on the device interrupt when idle; it never "
     "spins idle (while answers to its own requests are due it polls on, for one check interval "
     "at most).",
     4, TCA_BTL_PARAM_INT, kThreadModes, 3, TCA_BTL_THREAD_AUTO, 0, 2, 0, "off, on or auto",
     nullptr, nullptr, OWN(progress_thread)},
    {"progress_thread_check_us",
     "Progress thread: microseconds between its looks at whether the application still calls MPI "
     "(it takes over progress only after a whole interval without an MPI call); the shortest "
     "interval. Also how long it polls on, rather than sleeping, while answers to its own "
     "requests (gets, small puts, atomics) are due.",
     6, TCA_BTL_PARAM_INT, nullptr, 0, 200, 10, 1000000, 0, kMicros, nullptr, nullptr,
     OWN(thread_check_us)},
    {"progress_thread_check_max_us",
     "Progress thread: while the application keeps calling MPI the interval doubles up to this "
     "many "
     "microseconds, so a latency-bound rank is not interrupted; it drops back once the thread had "
     "work.",
     6, TCA_BTL_PARAM_INT, nullptr, 0, 1000, 10, 1000000, 0, kMicros, nullptr, nullptr,
     OWN(thread_check_max_us)},
    {"progress_thread_sleep_us",
     "Progress thread: longest sleep on the device interrupt when there is nothing to do (a safety "
     "net; peers raise the interrupt after each message while it sleeps).",
     6, TCA_BTL_PARAM_INT, nullptr, 0, 100000, 100, 60000000, 0,
     "100..60000000 microseconds (shorter sleeps would make the thread spin)", nullptr, nullptr,
     OWN(thread_sleep_us)},
    {"put_dma_min",
     "Puts of at least this many bytes run on the DMA engine and complete asynchronously (the "
     "sender may "
     "compute meanwhile); smaller ones are PIO writes that complete at once. 0 (default): no DMA "
     "puts - on the "
     "loopback device the engine thread competes with the ranks for cores and a direct write is "
     "about twice "
     "as fast; 1: every put uses DMA.",
     5, TCA_BTL_PARAM_SIZE, nullptr, 0, 0, 0, kMaxBytes, 0,
     "0 (no DMA puts) .. 1T bytes (k, M, G suffixes allowed)", nullptr, nullptr, OWN(put_dma_min)},
    {"get_inline_max",
     "Emulated gets of host memory up to this many bytes come back inside the data owner's answer "
     "(copied into and out of the ring: one message instead of a put and an answer; a win for "
     "small gets, such as MPI_Get and osc rdma's reads of lock and accumulate state); larger ones, "
     "and GPU memory, are put by the owner. 0: always a put. Capped at what fits an eager slot.",
     6, TCA_BTL_PARAM_SIZE, nullptr, 0, 8192, 0, kMaxBytes, 0,
     "0 (never) .. 1T bytes (k, M, G suffixes allowed)", nullptr, nullptr, OWN(get_inline_max)},
    {"put_inline_max",
     "Puts of host memory up to this many bytes go to the target as a ring message its progress "
     "copies in and answers (like the inline get; many small puts stream through the ring where "
     "each single-copy write is a system call); larger ones, and GPU memory, are written directly. "
     "Such a put completes when the answer is back, so the target must progress (it does in MPI "
     "calls or with the progress thread). 0: never. Capped at what fits an eager slot.",
     6, TCA_BTL_PARAM_SIZE, nullptr, 0, 2048, 0, kMaxBytes, 0,
     "0 (never) .. 1T bytes (k, M, G suffixes allowed)", nullptr, nullptr, OWN(put_inline_max)},
    {"dma_channels",
     "DMA channels btl tca acquires from the device for DMA puts (1-4), as the first DMA puts need "
     "them. "
     "Channels held by coll tca's offloaded broadcasts or by the application are not taken; while "
     "none is "
     "free, DMA-sized puts are PIO writes.",
     6, TCA_BTL_PARAM_INT, nullptr, 0, 1, 1, TCA_NUM_DMA_CHANNELS, 0, "1..4", nullptr, nullptr,
     OWN(dma_channels)},
    {"poll_batch",
     "Messages taken from one peer's ring per progress pass (fairness between peers).", 6,
     TCA_BTL_PARAM_INT, nullptr, 0, 32, 1, 65536, 0, "1..65536", nullptr, nullptr, OWN(poll_batch)},
    {"poll_all_max_peers",
     "With at most this many peers in the sub-cluster (0..63), progress looks at every peer's ring "
     "each pass. "
     "With more, each sender also stores its message count into its word of the receiver's traffic "
     "line "
     "(64 words) after each message, and progress reads that line and polls only the rings whose "
     "count "
     "changed (the line read instead of one ring header per peer, for one more store per message). "
     "0: always by marks; 63: never.",
     6, TCA_BTL_PARAM_INT, nullptr, 0, 4, 0, TCA_MAX_NODES - 1, 0, "0..63 peers", nullptr, nullptr,
     OWN(poll_all_max_peers)},
    {"get_emulation",
     "RDMA get on the put-only device: the requester sends a put request to the data owner, whose "
     "side runs the put (DMA for GPU memory: CUDA IPC on the loopback, GPUDirect on PEACH2) and "
     "answers once the data is visible. 'all' (default): host and GPU buffers (ob1's RGET protocol "
     "replaces its PUT rendezvous for contiguous messages beyond btl_tca_min_rdma_pipeline_size, "
     "as "
     "a CUDA-aware Open MPI does over any BTL with a GPU get; MPI one-sided communication (osc "
     "rdma) needs a BTL with get in Open MPI 4.1); 'gpu': only for ob1's zero-copy protocol of GPU "
     "buffers (CUDA_GET; host buffers keep the PUT rendezvous where Open MPI is not CUDA-aware, "
     "and "
     "4.1's osc rdma does not use btl tca); 'off': no get (GPU buffers are copied through the "
     "rings). Must be the same on every process.",
     5, TCA_BTL_PARAM_INT, kGetModes, 3, TCA_BTL_GET_ALL, 0, 2, TCA_BTL_PARAM_ALL_EQ,
     "off, gpu or all", nullptr, nullptr, OWN(get_emulation)},
    {"rendezvous_choice",
     "How a host message beyond the eager limit and up to btl_tca_min_rdma_pipeline_size goes, "
     "decided per message where single copy into another process pays (on one host). 'traffic' "
     "(default): by ob1's RGET rendezvous (one copy by the data's owner behind the fewest "
     "messages) a lone message (nothing else of this process's rendezvous in flight to that peer, "
     "nothing queued for its ring), the messages of streams both ways, and those of a stream from "
     "one buffer over 64 KiB and up to 1 MiB (its data is in the cache); by ob1's copy protocol "
     "through the rings, whose two copies run on both cores at once, the other messages of a "
     "stream one way. 'size': by size alone (the copy protocol up to "
     "btl_tca_min_rdma_pipeline_size, 96 KiB by default). Where single copy is dear or off, and "
     "across hosts, every such message goes by copy either way. Rules and measurements: "
     "docs/mpi.md.",
     5, TCA_BTL_PARAM_INT, kRndvChoices, 2, TCA_BTL_RNDV_BY_TRAFFIC, 0, 1, 0, "size or traffic",
     nullptr, nullptr, OWN(rendezvous_choice)},

    // The common BTL parameters (Open MPI's BTL base registers them).
    {"exclusivity", nullptr, 0, TCA_BTL_PARAM_UINT32, nullptr, 0, 0, 0, UINT32_MAX,
     TCA_BTL_PARAM_OMPI_DEFAULT, "0..4294967295", nullptr, nullptr, 0},
    // 32 KiB: a copy through the ring beats the 3-message PUT rendezvous up
    // to there.  64 KiB slots won at 64 KiB too but cost small messages
    // bandwidth (the rings of 64 KiB slots halve their slot count to fit;
    // docs/results.md).
    {"eager_limit", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 32 * 1024, kMinEager, kMaxEager, 0,
     kEagerAllowed, nullptr, nullptr, 0},
    {"rndv_eager_limit", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 32 * 1024, kMinEager,
     kMaxEager, 0, kEagerAllowed, nullptr, nullptr, 0},
    {"max_send_size", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 32 * 1024, kMinEager, kMaxEager,
     0, kEagerAllowed, nullptr, nullptr, 0},
    {"rdma_pipeline_send_length", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 64 * 1024, 0,
     kMaxBytes, 0, "0..1T bytes", nullptr, nullptr, 0},
    {"rdma_pipeline_frag_size", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 4 * 1024 * 1024, 1024,
     kMaxBytes, 0, "1K..1T bytes", nullptr, nullptr, 0},
    {"min_rdma_pipeline_size", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 0, 0, kMaxBytes,
     TCA_BTL_PARAM_ADJUSTED, "0..1T bytes", nullptr, nullptr, 0},
    {"put_limit", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 0, 1, SIZE_MAX,
     TCA_BTL_PARAM_ADJUSTED | TCA_BTL_PARAM_OMPI_DEFAULT, "a byte count (0: no limit)", nullptr,
     nullptr, 0},
    {"put_alignment", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 0, 0, 65536,
     TCA_BTL_PARAM_OMPI_DEFAULT, kAlignAllowed, "not a power of two", nullptr, 0},
    // ob1 splits an RGET at get_limit and aligns it at get_alignment, as for put.
    {"get_limit", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 0, 1, SIZE_MAX,
     TCA_BTL_PARAM_ADJUSTED | TCA_BTL_PARAM_OMPI_DEFAULT, "a byte count (0: no limit)", nullptr,
     nullptr, 0},
    {"get_alignment", nullptr, 0, TCA_BTL_PARAM_SIZE, nullptr, 0, 0, 0, 65536,
     TCA_BTL_PARAM_OMPI_DEFAULT, kAlignAllowed, "not a power of two", nullptr, 0},
    {"latency", nullptr, 0, TCA_BTL_PARAM_UINT32, nullptr, 0, 1, 0, UINT32_MAX, 0, "0..4294967295",
     nullptr, nullptr, 0},
    {"bandwidth", nullptr, 0, TCA_BTL_PARAM_UINT32, nullptr, 0, 20000, 1, UINT32_MAX, 0,
     "1..4294967295 (Mb/s)", nullptr, nullptr, 0},
};

#undef OWN

bool is_signed(const tca_btl_param_t &p) {
    return p.type == TCA_BTL_PARAM_INT;
}

// The settings are a C struct the glue hands Open MPI field by field; the
// table says where each field is and how wide.
template <typename T>
T read(const tca_btl_settings_t *s, const tca_btl_param_t &p) {
    T v;
    std::memcpy(&v, reinterpret_cast<const unsigned char *>(s) + p.offset, sizeof(v));
    return v;
}

template <typename T>
void write(tca_btl_settings_t *s, const tca_btl_param_t &p, T v) {
    std::memcpy(reinterpret_cast<unsigned char *>(s) + p.offset, &v, sizeof(v));
}

}  // namespace

extern "C" const tca_btl_param_t *tca_btl_params(size_t *count) {
    if (count != nullptr)
        *count = std::size(kParams);
    return kParams;
}

extern "C" const tca_btl_param_t *tca_btl_param_find(const char *name) {
    if (name == nullptr)
        return nullptr;
    for (const tca_btl_param_t &p : kParams)
        if (std::string_view(p.name) == name)
            return &p;
    return nullptr;
}

// On the ucx device a ring slot is one active message whatever its size, and
// ob1's rendezvous costs three more messages over the network: eager as large
// as one message stays one UCX fragment (UCX_TCP_SEG_SIZE, 64 KiB with its
// headers: 60 KiB of payload, as coll tca's ucx_segment_size).  A slot just
// over it went as UCX's own rendezvous, a handshake per slot, each end
// waiting for the other to be scheduled where ranks outnumber cores.  The
// ring slots halve where the rings would not fit (btl_tca_ring_slots).
constexpr uint64_t kAcrossHostsEager = 60 * 1024;

extern "C" uint64_t tca_btl_param_default(const tca_btl_param_t *p, int across_hosts) {
    const std::string_view name(p->name);
    if (across_hosts &&
        (name == "eager_limit" || name == "rndv_eager_limit" || name == "max_send_size"))
        return kAcrossHostsEager;
    return p->def;
}

extern "C" uint32_t tca_btl_eager_slot_payload(size_t eager_limit, size_t rndv_eager_limit,
                                               size_t max_send_size) {
    const size_t largest = std::max({eager_limit, rndv_eager_limit, max_send_size});
    return tca_btl_slot_payload(static_cast<uint32_t>(std::min<size_t>(largest, kMaxEager)));
}

extern "C" uint64_t tca_btl_setting_get(const tca_btl_settings_t *s, const tca_btl_param_t *p) {
    switch (p->type) {
    case TCA_BTL_PARAM_INT:
        return static_cast<uint64_t>(static_cast<int64_t>(read<int>(s, *p)));
    case TCA_BTL_PARAM_UNSIGNED:
        return read<unsigned int>(s, *p);
    case TCA_BTL_PARAM_SIZE:
        return read<size_t>(s, *p);
    case TCA_BTL_PARAM_UINT32:
        return read<uint32_t>(s, *p);
    }
    return 0;
}

extern "C" void tca_btl_settings_defaults(tca_btl_settings_t *s) {
    std::memset(s, 0, sizeof(*s));
    for (const tca_btl_param_t &p : kParams) {
        if (p.help == nullptr)
            continue;  // not ours: in the module
        switch (p.type) {
        case TCA_BTL_PARAM_INT:
            write(s, p, static_cast<int>(p.def));
            break;
        case TCA_BTL_PARAM_UNSIGNED:
            write(s, p, static_cast<unsigned int>(p.def));
            break;
        case TCA_BTL_PARAM_SIZE:
            write(s, p, static_cast<size_t>(p.def));
            break;
        case TCA_BTL_PARAM_UINT32:
            write(s, p, static_cast<uint32_t>(p.def));
            break;
        }
    }
}

extern "C" const char *tca_btl_param_problem(const tca_btl_param_t *p, uint64_t value) {
    if (is_signed(*p)) {
        const auto v = static_cast<int64_t>(value);
        if (v < static_cast<int64_t>(p->min))
            return "below the minimum";
        if (v > static_cast<int64_t>(p->max))
            return "above the maximum";
    } else {
        if (value < p->min)
            return "below the minimum";
        if (value > p->max)
            return "above the maximum";
    }
    if (p->not_one != nullptr && value == 1)
        return p->not_one;
    if (p->not_pow2 != nullptr && (value & (value - 1)) != 0)
        return p->not_pow2;
    return nullptr;
}
