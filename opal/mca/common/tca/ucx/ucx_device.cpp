// ucx_device.cpp - the ucx device's life (start, stop, what it reports) and
// its memory: allocations, registrations, and their end, which revokes the
// keys peers were given (ucx_keys.cpp).  The design: ucx_device.hpp.
#include "ucx/ucx_device.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <system_error>

#include "base/build_info.hpp"
#include "base/setting_source.hpp"

namespace tca::ucx {

namespace {

// The model's times as they are: the handoffs (the loopback's own cost of a
// delivery, which its delays leave out) are no part of UCX's path.
TimingModel on_top_of_transport(TimingModel m) {
    m.pio_handoff_ns = 0;
    m.dma_handoff_ns = 0;
    return m;
}

// TCA_UCX_DMA=put sends DMA rows as ucp_put_nbx (to compare, and for a
// fabric where puts are cheaper than UCX's rendezvous); anything else, or
// unset: active messages.
bool dma_by_active_message() {
    const SettingText given = setting_text("TCA_UCX_DMA");
    return !given.given || given.text != "put";
}

int address_wait_s(const WaitPolicy &p) {
    return static_cast<int>(std::max<int64_t>(1, p.timeout_ns / 1'000'000'000));
}

}  // namespace

UcxDevice::UcxDevice(std::unique_ptr<PmixExchange> pmix, Placement place,
                     const DeviceSettings &settings)
    : pmix_(std::move(pmix)), self_(place.node), n_(place.nodes), first_rank_(place.first),
      topo_(n_, settings.s_links && n_ >= 4 && n_ % 2 == 0),
      timing_(on_top_of_transport(settings.timing)), policy_(settings.policy),
      heap_(settings.internal_size), dma_by_am_(dma_by_active_message()), regs_(nullptr),
      peers_(*pmix_, self_, n_, first_rank_, address_wait_s(settings.policy)),
      takeover_ns_(settings.policy.takeover_ns) {
    for (auto &c : counters_)
        c.store(0, std::memory_order_relaxed);
    events_.watch();  // interrupt_count() reads the count any time
}

UcxDevice::~UcxDevice() {
    stop_.store(true, std::memory_order_release);
    if (progress_thread_.joinable())
        progress_thread_.join();
    // Peers learn that we finished (not died); then every endpoint is
    // flushed and closed, bounded, before the worker goes.
    peers_.say_goodbye(Clock::now() + std::chrono::seconds(2));
    remote_keys_.clear();  // made on the endpoints: first
    peers_.close();
    regs_.clear();
    internal_map_.reset();
    worker_.reset();
    context_.reset();
    std::free(internal_);
}

Result UcxDevice::start(std::string *why) {
    if (n_ < 1 || n_ > TCA_MAX_NODES) {
        *why = "the job has " + std::to_string(n_) + " processes; a TCA sub-cluster has 1.." +
               std::to_string(TCA_MAX_NODES) + " nodes";
        return tcaErrorNotSupported;
    }
    if (Result r = Context::create(&context_, why); r != tcaSuccess)
        return r;
    if (Result r = Worker::create(*context_, &worker_, why); r != tcaSuccess)
        return r;
    peers_.attach(worker_.get());
    if (worker_->max_am_header() < sizeof(KeyReplyMsg)) {
        *why = "UCX's active-message headers hold " + std::to_string(worker_->max_am_header()) +
               " bytes; the device needs " + std::to_string(sizeof(KeyReplyMsg));
        return tcaErrorNotSupported;
    }
    if (Result r = install_handlers(); r != tcaSuccess) {
        *why = "registering UCX active-message handlers failed";
        return r;
    }
    internal_ = static_cast<unsigned char *>(std::aligned_alloc(4096, heap_.size()));
    if (internal_ == nullptr)
        return tcaErrorNoMemory;
    std::memset(internal_, 0, heap_.size());
    regs_.set_internal(internal_);
    if (Result r = MemoryMap::create(*context_, internal_, heap_.size(), &internal_map_);
        r != tcaSuccess) {
        *why = "ucp_mem_map of the internal memory failed";
        return r;
    }
    if (Result r = pmix_->put(kAddressKey, worker_->address()); r != tcaSuccess) {
        *why = "publishing the worker address through PMIx failed";
        return r;
    }
    // Over software RMA (tcp) a peer's put, flush or active message
    // completes only while this worker progresses - also while the
    // application is elsewhere (in MPI, computing): one thread progresses it.
    try {
        progress_thread_ = std::thread([this] { progress_thread_body(); });
    } catch (const std::system_error &) {
        *why = "the progress thread could not start";
        return tcaErrorSystem;
    }
    return tcaSuccess;
}

DeviceInfo UcxDevice::info() const {
    DeviceInfo i;
    i.backend = "ucx";
    i.optimized = kBuiltOptimized;
    i.job_key = pmix_->nspace();
    i.launch_source = "PMIx (rank " + std::to_string(first_rank_ + self_) + " of " +
                      std::to_string(pmix_->job_size()) + ")";
    if (n_ != pmix_->job_size())
        i.job_key +=
            " ranks " + std::to_string(first_rank_) + ".." + std::to_string(first_rank_ + n_ - 1);
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    const char *tls = std::getenv("UCX_TLS");
    i.put_mechanism = "UCX " + std::to_string(major) + "." + std::to_string(minor) + "." +
                      std::to_string(release) + (dma_by_am_ ? " active messages" : " puts") +
                      " (UCX_TLS=" + (tls != nullptr ? tls : "all") + ")";
    i.gpu_memory = false;  // refused by name (ucx_device.hpp)
    i.internal_size = heap_.size();
    i.internal_used = heap_.used();
    i.spin_ns = policy_.spin_ns;
    i.timeout_ns = policy_.timeout_ns;
    i.takeover_ns = takeover_ns_.load(std::memory_order_relaxed);
    i.registrations = regs_.count();
    i.max_registrations = static_cast<int>(LocalRegistrations::kMax);
    i.notify_depth = 0;  // counts per (source, slot, tag) are not limited here
    return i;
}

Result UcxDevice::not_here(const char *what) {
    std::fprintf(stderr, "tca: the ucx device does not support %s\n", what);
    return tcaErrorNotSupported;
}

Result UcxDevice::allocate(void **ptr, size_t size, tcaMemoryType type) {
    if (ptr == nullptr)
        return tcaErrorInvalidValue;
    *ptr = nullptr;
    switch (type) {
    case tcaMemoryCPU: {
        const size_t want = std::max<size_t>(size, 1);
        if (want > SIZE_MAX - 4095)
            return tcaErrorNoMemory;
        void *p = std::aligned_alloc(4096, (want + 4095) / 4096 * 4096);
        if (p == nullptr)
            return tcaErrorNoMemory;
        std::lock_guard g(alloc_lock_);
        host_allocs_[p] = want;
        *ptr = p;
        return tcaSuccess;
    }
    case tcaMemoryInternal:
        *ptr = heap_.allocate_at(internal_, size);
        return *ptr != nullptr ? tcaSuccess : tcaErrorNoMemory;
    case tcaMemoryGPU:
        return not_here(
            "GPU memory (tcaMemoryGPU): that needs a CUDA-enabled UCX (docs/ucx-backend.md)");
    }
    return tcaErrorInvalidValue;
}

// The registrations inside the memory end first, as tcaDestroyHandle ends
// one (drop_registrations): no cached key reaches the next allocation there.
Result UcxDevice::release(void *ptr, tcaMemoryType type) {
    if (ptr == nullptr)
        return tcaErrorInvalidValue;
    if (type == tcaMemoryCPU) {
        size_t size = 0;
        {
            std::lock_guard g(alloc_lock_);
            auto it = host_allocs_.find(ptr);
            if (it == host_allocs_.end())
                return tcaErrorInvalidValue;
            size = it->second;
            host_allocs_.erase(it);
        }
        (void) drop_registrations(reinterpret_cast<uint64_t>(ptr), size, type);
        std::free(ptr);
        return tcaSuccess;
    }
    if (type == tcaMemoryInternal) {
        const auto span = heap_.span_at(internal_, ptr);
        if (!span)
            return tcaErrorInvalidValue;
        (void) drop_registrations(span->offset, span->length, type);
        (void) heap_.release_at(internal_, ptr);
        return tcaSuccess;
    }
    return tcaErrorInvalidValue;
}

Result UcxDevice::register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out) {
    if (out == nullptr || addr == nullptr)
        return tcaErrorInvalidValue;
    tcaHandle h{};
    h.magic = TCA_HANDLE_MAGIC;
    h.node = static_cast<uint16_t>(self_);
    h.region = static_cast<uint8_t>(type);
    h.size = size;
    std::unique_ptr<MemoryMap> map;
    switch (type) {
    case tcaMemoryCPU:
        h.addr = reinterpret_cast<uint64_t>(addr);
        if (size > UINT64_MAX - h.addr)
            return tcaErrorOutOfRange;
        if (size > 0)
            if (Result r = MemoryMap::create(*context_, addr, size, &map); r != tcaSuccess)
                return r;
        break;
    case tcaMemoryInternal: {
        const auto off = heap_.offset_of(internal_, addr, size);
        if (!off)
            return tcaErrorOutOfRange;
        h.addr = *off;  // an offset: the internal memory is mapped once
        break;
    }
    case tcaMemoryGPU:
        return not_here(
            "GPU memory (tcaMemoryGPU): that needs a CUDA-enabled UCX (docs/ucx-backend.md)");
    default:
        return tcaErrorInvalidValue;
    }
    h.global = topo_.address_map().region_base(self_, type == tcaMemoryInternal ? Region::Internal
                                                                                : Region::Host);
    Registration reg;
    reg.addr = h.addr;
    reg.size = h.size;
    reg.type = type;
    reg.map = std::move(map);
    if (Result r = regs_.add(std::move(reg), &h); r != tcaSuccess)
        return r;
    *out = h;
    return tcaSuccess;
}

Result UcxDevice::deregister(const tcaHandle &h) {
    if (Result r = check_handle(&h, n_); r != tcaSuccess)
        return r;
    if (h.node != self_)
        return tcaErrorInvalidHandle;
    Registration gone;
    if (Result r = regs_.take(h, &gone); r != tcaSuccess)
        return r;                      // from now on a key request is refused
    return revoke(h.reg_index, gone);  // then `gone` is unmapped
}

Result UcxDevice::registration_of_key(int node, uint32_t index, uint64_t key,
                                      tcaHandle *out) const {
    if (node != self_)
        return tcaErrorNotSupported;
    return regs_.handle_of(index, key, self_, out);
}

Result UcxDevice::validate(const Descriptor &d) const {
    if (Result r = validate_descriptor(d, self_, n_); r != tcaSuccess)
        return r;
    return regs_.local(d.src, nullptr);
}

Result UcxDevice::pio_map(const tcaHandle &, void **addr) {
    if (addr != nullptr)
        *addr = nullptr;
    return not_here("PIO windows mapped into the address space (tcaPioMap): hosts share no memory");
}

namespace {

// A start that failed says why on stderr and in tcaGetErrorDetail (libtca's
// own detail: the plugin links libtca.so).
Result start_failed(Result r, const std::string &why) {
    const std::string line = "TCA_DEVICE=ucx: " + why;
    std::fprintf(stderr, "tca: %s\n", line.c_str());
    set_error_detail(line.c_str());
    return r;
}

Result make_ucx_device(const tcaInitParams *params, std::unique_ptr<Device> *out) {
    DeviceSettings settings;
    if (Result r = DeviceSettings::from_environment(&settings); r != tcaSuccess)
        return r;
    // Stamps travel only in the loopback device's segments.
    if (settings.timing.virtual_time)
        return start_failed(tcaErrorNotSupported,
                            "TCA_TIMING=virtual runs on the loopback device only (one host); "
                            "use TCA_TIMING=1 or 0 here");
    std::unique_ptr<PmixExchange> pmix;
    std::string why;
    if (Result r = PmixExchange::open(&pmix, &why); r != tcaSuccess)
        return start_failed(r, why);
    // Nodes are the job's PMIx ranks; a caller that places both the node and
    // the count names a sub-cluster of consecutive ranks (first = rank - node).
    Placement place{pmix->rank(), pmix->job_size(), 0};
    const bool placed = params != nullptr && params->node_id >= 0 && params->num_nodes > 0;
    if (placed)
        place = {params->node_id, params->num_nodes, pmix->rank() - params->node_id};
    const bool fits = place.node < place.nodes && place.first >= 0 &&
                      place.first + place.nodes <= pmix->job_size();
    if (!fits || (!placed && params != nullptr &&
                  ((params->node_id >= 0 && params->node_id != pmix->rank()) ||
                   (params->num_nodes > 0 && params->num_nodes != pmix->job_size())))) {
        std::fprintf(stderr,
                     "tca: TCA_DEVICE=ucx: node %d of %d asked for, but the ucx device's nodes are "
                     "the job's "
                     "PMIx ranks, or a run of consecutive ones (this is rank %d of %d)\n",
                     params->node_id, params->num_nodes, pmix->rank(), pmix->job_size());
        return tcaErrorInvalidValue;
    }
    auto dev = std::make_unique<UcxDevice>(std::move(pmix), place, settings);
    if (Result r = dev->start(&why); r != tcaSuccess)
        return start_failed(r, why.empty() ? "start failed" : why);
    *out = std::move(dev);
    return tcaSuccess;
}

}  // namespace

}  // namespace tca::ucx

// The plugin's one export (tca_ucx.map): libtca's TCA_DEVICE=ucx calls it.
extern "C" __attribute__((visibility("default"))) tcaResult
tca_ucx_make_device(const tcaInitParams *params, tca::Device **out) {
    try {
        std::unique_ptr<tca::Device> dev;
        const tcaResult r = tca::ucx::make_ucx_device(params, &dev);
        *out = r == tcaSuccess ? dev.release() : nullptr;
        return r;
    } catch (const std::bad_alloc &) {
        return tcaErrorNoMemory;
    } catch (...) {
        return tcaErrorSystem;
    }
}
