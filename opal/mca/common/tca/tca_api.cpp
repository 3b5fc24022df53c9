// tca_api.cpp - the public C API: argument checks, then one call into the
// process's Device.  No exception crosses into C: the API is the boundary.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "api_guard.hpp"
#include "desc_registry.hpp"
#include "device.hpp"
#include "gpu/cuda_runtime.hpp"
#include "model/descriptor.hpp"
#include "tca.h"

using tca::descs;

namespace {
using tca::guarded;

// The process's one node.  tcaInit/tcaFinalize are reference counted: an
// application using the TCA API and the MPI components (btl, coll) in the
// same process share the node.  Without a tcaFinalize (published programs
// have none) an exit handler tears it down: registered when the first node is
// made, it runs before the libraries' own destructors.  A static destructor
// would run among those (glibc's _dl_fini), after UCX's may have run: the ucx
// device's teardown then frees into a heap UCX has already cleaned up.  The
// session's engine registers its own exit handler when it first starts (after
// a node exists), so it stops before the node is torn down.
struct DeviceOwner {
    std::mutex lock;
    std::unique_ptr<tca::Device> device;
    int refs = 0;
    pid_t pid = 0;  // the process that made the node

    ~DeviceOwner() {
        // A forked child that exits (exit(), or system()/popen() children of
        // some libcs) runs this too: its copy of the node is its parent's.
        if (device && pid != getpid())
            (void) device.release();
    }
};
DeviceOwner g_owner;
std::atomic<tca::Device *> g_device{nullptr};

tca::Device *device() noexcept {
    return g_device.load(std::memory_order_acquire);
}

// fork(): the child must never touch its parent's node (its engine thread
// does not exist there, and tearing the node down would end it for the
// parent).  The child starts uninitialised and leaks its copy on purpose.
void fork_prepare() {
    g_owner.lock.lock();
    descs().lock_for_fork();
}
void fork_parent() {
    descs().unlock_after_fork();
    g_owner.lock.unlock();
}
void fork_child() {
    descs().unlock_after_fork();
    g_device.store(nullptr, std::memory_order_relaxed);
    (void) g_owner.device.release();
    g_owner.refs = 0;
    g_owner.pid = 0;
    g_owner.lock.unlock();
}

using tca::on_device;

// A second init joins the running node if it asks for nothing else.
tcaResult join_running_node(const tca::Device &dev, const tcaInitParams *params) {
    if (params != nullptr) {
        const int id = dev.node_id(), n = dev.topology().num_nodes();
        if ((params->node_id >= 0 && params->node_id != id) ||
            (params->num_nodes > 0 && params->num_nodes != n)) {
            std::fprintf(
                stderr,
                "tca: this process already is node %d of %d; it cannot also be node %d of %d "
                "(tcaInit is reference counted: later calls share the running node)\n",
                id, n, params->node_id, params->num_nodes);
            return tcaErrorAlreadyInitialized;
        }
    }
    ++g_owner.refs;
    return tcaSuccess;
}

void release_device_at_exit() {
    std::lock_guard g(g_owner.lock);
    g_device.store(nullptr, std::memory_order_release);
    if (g_owner.pid != getpid())
        (void) g_owner.device.release();  // a forked child's copy is its parent's
    g_owner.device.reset();
    g_owner.refs = 0;
}

tcaResult init_device(const tcaInitParams *params) noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        std::atexit(release_device_at_exit);
    });
    tca::set_error_detail("");  // a detail read after this call belongs to it
    return guarded([&] {
        std::lock_guard g(g_owner.lock);
        if (g_owner.device)
            return join_running_node(*g_owner.device, params);
        std::unique_ptr<tca::Device> dev;
        const tcaResult r = tca::make_device(params, &dev);
        if (r != tcaSuccess)
            return r;
        g_owner.device = std::move(dev);
        g_owner.refs = 1;
        g_owner.pid = getpid();
        g_device.store(g_owner.device.get(), std::memory_order_release);
        return tcaSuccess;
    });
}

}  // namespace

namespace tca {
Device *current_device() noexcept {
    return device();
}

void install_device_for_tests(std::unique_ptr<Device> dev) {
    std::lock_guard g(g_owner.lock);
    g_device.store(nullptr, std::memory_order_release);
    g_owner.device = std::move(dev);
    g_owner.refs = g_owner.device ? 1 : 0;
    g_owner.pid = getpid();
    g_device.store(g_owner.device.get(), std::memory_order_release);
}
}  // namespace tca

extern "C" {

tcaResult tcaInit(void) {
    return init_device(nullptr);
}

tcaResult tcaInitWithParams(const tcaInitParams *params) {
    if (params == nullptr)
        return tcaErrorInvalidValue;
    return init_device(params);
}

tcaResult tcaFinalize(void) {
    return guarded([] {
        std::lock_guard g(g_owner.lock);
        if (!g_owner.device)
            return tcaErrorNotInitialized;
        if (--g_owner.refs > 0)
            return tcaSuccess;  // another user of the node remains
        g_device.store(nullptr, std::memory_order_release);
        g_owner.device.reset();
        return tcaSuccess;
    });
}

const char *tcaGetErrorString(tcaResult result) {
    return tca::result_message(result);
}

tcaResult tcaGetNodeId(int *node_id) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (node_id == nullptr)
            return tcaErrorInvalidValue;
        *node_id = dev->node_id();
        return tcaSuccess;
    });
}

tcaResult tcaGetNumNodes(int *num_nodes) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (num_nodes == nullptr)
            return tcaErrorInvalidValue;
        *num_nodes = dev->topology().num_nodes();
        return tcaSuccess;
    });
}

tcaResult tcaGetHopCount(int from_node, int to_node, int *hops) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (hops == nullptr)
            return tcaErrorInvalidValue;
        const int n = dev->topology().num_nodes();
        if (from_node < 0 || from_node >= n || to_node < 0 || to_node >= n)
            return tcaErrorInvalidNode;
        return guarded([&] {
            *hops = dev->topology().hops(from_node, to_node);
            return tcaSuccess;
        });
    });
}

tcaResult tcaMalloc(void **ptr, size_t size, tcaMemoryType type) {
    return on_device([&](tca::Device *dev) -> tcaResult { return dev->allocate(ptr, size, type); });
}

tcaResult tcaFree(void *ptr, tcaMemoryType type) {
    return on_device([&](tca::Device *dev) -> tcaResult { return dev->release(ptr, type); });
}

tcaResult tcaCreateHandle(tcaHandle *handle, void *addr, size_t size, tcaMemoryType type) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (handle == nullptr)
            return tcaErrorInvalidHandle;
        return guarded([&] {
            // Published programs register tcaMalloc'd GPU memory through
            // tcaCreateHandleList, which cannot know it is GPU memory: ask CUDA
            // (only when the program has loaded it: no cost for CPU-only programs).
            if (type == tcaMemoryCPU &&
                tca::gpu::CudaRuntime::instance().is_device_pointer_if_loaded(addr))
                type = tcaMemoryGPU;
            return dev->register_memory(addr, size, type, handle);
        });
    });
}

tcaResult tcaDestroyHandle(tcaHandle *handle) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (handle == nullptr)
            return tcaErrorInvalidHandle;
        return dev->deregister(*handle);
    });
}

tcaResult tcaHandleOfAddress(int node, uint64_t addr, size_t size, tcaHandle *handle) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (handle == nullptr)
            return tcaErrorInvalidHandle;
        if (node < 0 || node >= dev->topology().num_nodes())
            return tcaErrorInvalidValue;
        return dev->find_host_registration(node, addr, size, handle);
    });
}

tcaResult tcaHandleOfKey(int node, uint32_t reg_index, uint64_t key, tcaHandle *handle) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (handle == nullptr)
            return tcaErrorInvalidHandle;
        if (node < 0 || node >= dev->topology().num_nodes())
            return tcaErrorInvalidValue;
        return dev->registration_of_key(node, reg_index, key, handle);
    });
}

tcaResult tcaRevokeHandle(const tcaHandle *handle) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (handle == nullptr)
            return tcaErrorInvalidHandle;
        return dev->revoke(*handle);
    });
}

tcaResult tcaPioWrite(tcaHandle *dst, off_t dst_off, const void *src, size_t size, int flags,
                      int slot, int tag) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (dst == nullptr)
            return tcaErrorInvalidHandle;
        if (dst_off < 0)
            return tcaErrorOutOfRange;
        if (flags & tca::Device::kPioUntimed)
            return tcaErrorInvalidValue;  // internal to tcaSendPIO
        return dev->pio_write(*dst, static_cast<uint64_t>(dst_off), src, size, flags, slot, tag);
    });
}

tcaResult tcaPioMap(tcaHandle *handle, void **addr) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (handle == nullptr)
            return tcaErrorInvalidHandle;
        return dev->pio_map(*handle, addr);
    });
}

tcaResult tcaCounterRead(int counter, uint64_t *value) {
    return on_device(
        [&](tca::Device *dev) -> tcaResult { return dev->counter_read(counter, value); });
}

tcaResult tcaCounterAdd(int counter, uint64_t add) {
    return on_device([&](tca::Device *dev) -> tcaResult { return dev->counter_add(counter, add); });
}

tcaResult tcaCounterWait(int counter, uint64_t value) {
    return on_device(
        [&](tca::Device *dev) -> tcaResult { return dev->counter_wait(counter, value); });
}

tcaResult tcaCounterAddRemote(int node, int counter, uint64_t add) {
    return on_device(
        [&](tca::Device *dev) -> tcaResult { return dev->counter_add_remote(node, counter, add); });
}

tcaResult tcaPioWriteCounterAdd(tcaHandle *dst, off_t dst_off, const void *src, size_t size,
                                int counter, uint64_t add) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (dst == nullptr)
            return tcaErrorInvalidHandle;
        if (dst_off < 0)
            return tcaErrorOutOfRange;
        return dev->pio_write_counter_add(*dst, static_cast<uint64_t>(dst_off), src, size, counter,
                                          add);
    });
}

tcaResult tcaProgress(int *did_work) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        const bool worked = dev->progress();
        if (did_work != nullptr)
            *did_work = worked ? 1 : 0;
        return tcaSuccess;
    });
}

tcaResult tcaInterruptRaise(int node) {
    return on_device([&](tca::Device *dev) -> tcaResult { return dev->interrupt_raise(node); });
}

tcaResult tcaNodeState(int node, int *state) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (state == nullptr)
            return tcaErrorInvalidValue;
        return dev->node_state(node, state);
    });
}

tcaResult tcaInterruptCount(uint32_t *count) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (count == nullptr)
            return tcaErrorInvalidValue;
        *count = dev->interrupt_count();
        return tcaSuccess;
    });
}

tcaResult tcaInterruptWait(uint32_t seen, int64_t timeout_us) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (timeout_us < 0)
            return tcaErrorInvalidValue;
        // Huge timeouts mean "forever": keep now + timeout (in ns) from overflowing.
        constexpr int64_t kForever_us = INT64_MAX / 1000 / 4;
        return dev->interrupt_wait(seen, std::min(timeout_us, kForever_us) * 1000);
    });
}

tcaResult tcaQueryDevice(tcaDeviceAttr *attr) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (attr == nullptr)
            return tcaErrorInvalidValue;
        return guarded([&] {
            const tca::DeviceInfo info = dev->info();
            tca::ResourceTable &res = dev->resources();
            tcaDeviceAttr a{};
            a.node_id = dev->node_id();
            a.num_nodes = dev->topology().num_nodes();
            a.max_nodes = TCA_MAX_NODES;
            a.dma_channels = res.channels.size();
            a.free_dma_channels = res.channels.free_count();
            a.counters = res.counters.size();
            a.free_counters = res.counters.free_count();
            a.notify_slots = res.slots.size();
            a.free_notify_slots = res.slots.free_count();
            a.notify_depth = info.notify_depth;
            a.max_descriptors = TCA_MAX_DESCRIPTORS;
            a.max_reg_descriptors = TCA_MAX_REG_DESCRIPTORS;
            a.max_registrations = info.max_registrations;
            a.registrations = info.registrations;
            a.internal_size = info.internal_size;
            a.internal_used = info.internal_used;
            a.heap_arenas = static_cast<int>(info.heap_arenas);
            a.peer_arenas_mapped = static_cast<int>(info.peer_arenas_mapped);
            *attr = a;
            return tcaSuccess;
        });
    });
}

tcaResult tcaChannelAcquire(int *channel) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        return dev->resources().channels.acquire(1, channel);
    });
}

tcaResult tcaChannelRelease(int channel) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        return dev->resources().channels.release(channel, 1);
    });
}

// The counter words carry the holder (checked by every add, also a peer's):
// set on acquire, cleared with the count on release.
tcaResult tcaCounterAcquire(int count, int *first) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        uint32_t token = 0;
        const tcaResult r = dev->resources().counters.acquire(count, first, &token);
        if (r == tcaSuccess)
            for (int i = 0; i < count; ++i)
                dev->counter_claim(tca::owned_index(*first) + i, token);
        return r;
    });
}

tcaResult tcaCounterRelease(int first, int count) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        const tcaResult r = dev->resources().counters.release(first, count);
        if (r == tcaSuccess)
            for (int i = 0; i < count; ++i)
                dev->counter_claim(tca::owned_index(first) + i, 0);
        return r;
    });
}

// The slot's holder is published in the node's segment: senders (PIO
// writes, descriptors) check it before they write.
tcaResult tcaSlotAcquire(int *slot) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        uint32_t token = 0;
        const tcaResult r = dev->resources().slots.acquire(1, slot, &token);
        if (r == tcaSuccess)
            dev->slot_claim(tca::owned_index(*slot), token);
        return r;
    });
}

tcaResult tcaSlotRelease(int slot) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        const tcaResult r = dev->resources().slots.release(slot, 1);
        if (r == tcaSuccess)
            dev->slot_claim(tca::owned_index(slot), 0);
        return r;
    });
}

tcaResult tcaGetBackingPath(char *path, size_t len) {
    return on_device([&](tca::Device *dev) -> tcaResult {
        if (path == nullptr || len == 0)
            return tcaErrorInvalidValue;
        const std::string p = dev->backing_path();
        if (p.size() + 1 > len)
            return tcaErrorInvalidValue;
        std::memcpy(path, p.c_str(), p.size() + 1);
        return tcaSuccess;
    });
}

tcaResult tcaGetErrorDetail(char *text, size_t len) {
    if (text == nullptr || len == 0)
        return tcaErrorInvalidValue;
    const std::string &d = tca::last_error_detail();
    const size_t n = std::min(d.size(), len - 1);
    std::memcpy(text, d.data(), n);
    text[n] = '\0';
    return tcaSuccess;
}

}  // extern "C"
