// device.hpp - the one device interface every backend implements.  The C API
// (tca_api.cpp) talks only to this; the loopback backend is the default, a
// PEACH2 driver backend would be a second implementation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "model/descriptor.hpp"
#include "model/resources.hpp"
#include "model/result.hpp"
#include "model/timing_model.hpp"
#include "model/topology.hpp"
#include "model/virtual_clock.hpp"

namespace tca {

struct DeviceInfo {
    std::string backend;  // "loopback"
    std::string job_key;
    std::string launch_source;
    std::string put_mechanism;  // how host-memory puts reach another process
    // Puts into another process's private host memory are copied in by the
    // target's CPU (tcaBackendAttr::host_puts_by_target).
    bool host_puts_by_target = false;
    bool gpu_memory = true;  // tcaMemoryGPU is served (where CUDA is built in)
    bool optimized = false;  // the backend's code was compiled with optimization (build_info.hpp)
    uint64_t internal_size = 0;
    uint64_t internal_used = 0;
    int64_t spin_ns = 0;
    int64_t timeout_ns = 0;
    // The backend's own progress thread drives the device only this long
    // after a client last did (set_progress_takeover); -1: it has none.
    int64_t takeover_ns = -1;
    int registrations = 0;
    int max_registrations = 0;
    int notify_depth =
        0;  // tags with unconsumed notifications per (source, slot); counts per tag are not limited
    // Shared heap (tcaMalloc CPU memory): this node's arenas and the bytes
    // allocated in them; other nodes' arenas this node has mapped (its puts
    // into them are plain stores).
    uint64_t heap_arenas = 0;
    uint64_t heap_bytes = 0;
    uint64_t peer_arenas_mapped = 0;
};

class Device {
public:
    virtual ~Device() = default;

    virtual int node_id() const noexcept = 0;
    virtual const Topology &topology() const noexcept = 0;
    virtual const TimingModel &timing() const noexcept = 0;
    // TCA_TIMING=virtual: this node's clock (nullptr otherwise), and the
    // application thread's entries into and exits from the device (every
    // C API call that reaches it, tcaVirtualTimeHold): the CPU time between
    // them is the program's computation (model/virtual_clock.hpp).
    virtual VirtualClock *virtual_clock() noexcept { return nullptr; }
    virtual void app_enter() noexcept {}
    virtual void app_leave() noexcept {}
    virtual void app_hold(bool on) noexcept { on ? app_enter() : app_leave(); }
    // Virtual time: a library's message of `bytes` is about to be stored into
    // `node`'s memory through a mapping (tcaVirtualTimeMessage).
    virtual Result virtual_message(int node, size_t bytes) {
        (void) node;
        (void) bytes;
        return tcaSuccess;
    }
    virtual DeviceInfo info() const = 0;
    // Who holds which channel, counter and slot of this node (tcaChannelAcquire, ...).
    virtual ResourceTable &resources() noexcept = 0;

    virtual Result allocate(void **ptr, size_t size, tcaMemoryType type) = 0;
    virtual Result release(void *ptr, tcaMemoryType type) = 0;
    virtual Result register_memory(void *addr, size_t size, tcaMemoryType type, tcaHandle *out) = 0;
    virtual Result deregister(const tcaHandle &h) = 0;
    // tcaHandleOfAddress: a live host registration of `node` covering
    // [addr, addr + size).  Only a device whose registration tables every
    // node reads can answer.
    virtual Result find_host_registration(int node, uint64_t addr, uint64_t size,
                                          tcaHandle *out) const {
        (void) node;
        (void) addr;
        (void) size;
        (void) out;
        return tcaErrorNotSupported;
    }
    // tcaHandleOfKey: the live registration of `node` in table slot `index`
    // with that key.
    virtual Result registration_of_key(int node, uint32_t index, uint64_t key,
                                       tcaHandle *out) const = 0;
    // tcaRevokeHandle: deregister from a memory-release hook (no allocation,
    // no lock held while memory is released); a device that cannot says so.
    virtual Result revoke(const tcaHandle &h) noexcept {
        (void) h;
        return tcaErrorNotSupported;
    }

    // Checks a descriptor fully (structure, put-only rule, live registrations).
    virtual Result validate(const Descriptor &d) const = 0;
    // CPU stores of [src, src+size) at dst+off, then optional notifications.
    // flags may add kPioUntimed: the timing model's PIO latency is not paid
    // again (the second half of one message, see tcaSendPIO).
    static constexpr int kPioUntimed = 1 << 30;
    // Every flag a PIO write takes.
    static constexpr int kPioFlags =
        tcaDMANotify | tcaDMANotifySelf | tcaDMAUseNotifyInternal | kPioUntimed;
    virtual Result pio_write(const tcaHandle &dst, uint64_t off, const void *src, size_t size,
                             int flags, int slot, int tag) = 0;
    virtual Result pio_map(const tcaHandle &h, void **addr) = 0;

    virtual Result load_chain(int channel, std::span<const Descriptor> chain) = 0;
    virtual Result start_channel(int channel) = 0;
    virtual Result wait_channel(int channel, bool block) = 0;
    virtual Result abort_channel(int channel) = 0;

    // Notification (slot, tag) from the node that owns h; a handle that is not
    // (or no longer) registered fails instead of waiting for the timeout.
    virtual Result take_notification(const tcaHandle &h, int slot, int tag, bool block) = 0;

    // Counters by id (model/owned_id.hpp): tcaErrorNotAcquired where the id's
    // token is not the counter's holder's.
    virtual Result counter_read(int id, uint64_t *value) = 0;
    virtual Result counter_add(int id, uint64_t add) = 0;
    virtual Result counter_wait(int id, uint64_t value) = 0;
    // PIO atomic add to a counter of another node (kicks its triggered descriptors).
    virtual Result counter_add_remote(int node, int id, uint64_t add) = 0;
    // A PIO write, then an add to a counter of the node written to (the add
    // after the data); a device that sends messages makes it one.
    virtual Result pio_write_counter_add(const tcaHandle &dst, uint64_t off, const void *src,
                                         size_t size, int id, uint64_t add) {
        if (Result r = pio_write(dst, off, src, size, 0, 0, 0); r != tcaSuccess)
            return r;
        return counter_add_remote(dst.node, id, add);
    }
    // tcaCounterAcquire / tcaCounterRelease: the counter's new holder (0:
    // nobody), its count back to 0 - a released counter comes back clean.
    virtual void counter_claim(int index, uint32_t holder) = 0;
    // tcaSlotAcquire / tcaSlotRelease: the slot's new holder (0: nobody), which
    // senders check: a notification naming a held slot needs the holder's id.
    virtual void slot_claim(int index, uint32_t holder) = 0;

    // Interrupts (the PEACH2 interrupt line): any node may raise one at any
    // node; a sleeping consumer wakes.  Notifications, channel completions and
    // counter updates of this node raise it as well.
    virtual Result interrupt_raise(int node) = 0;
    // TCA_NODE_ALIVE / _FINISHED / _DEAD of a node's process (tcaNodeState).
    virtual Result node_state(int node, int *state) = 0;
    // tcaProgress: the calling thread does the device's pending work (an
    // emulated engine's descriptors, a transport's receives); true if it did some.
    virtual bool progress() = 0;
    virtual uint32_t interrupt_count() noexcept = 0;
    virtual Result interrupt_wait(uint32_t seen, int64_t timeout_ns) = 0;
    // tcaSetProgressTakeover: how long after a client last drove the device
    // (a wait, tcaProgress) the backend's own progress thread takes over.
    // Only a backend with such a thread has the setting.
    virtual Result set_progress_takeover(int64_t ns) {
        (void) ns;
        return tcaErrorNotSupported;
    }

    // Where the backend keeps this node's state ("" if nothing persists), for
    // launchers that remove leftovers of an aborted job.
    virtual std::string backing_path() const = 0;
};

// The process's device after tcaInit, or nullptr.  For tools built from this
// tree (tca_info); not exported from the shared library.
Device *current_device() noexcept;
// White-box tests only (they link the static core; the shared library does
// not export it): the C API runs over `dev` as if tcaInit had made it, until
// it is replaced (nullptr: uninitialised again).
void install_device_for_tests(std::unique_ptr<Device> dev);

// The software loopback device (processes of one host form the sub-cluster).
Result make_loopback_device(const tcaInitParams *params, std::unique_ptr<Device> *out);

// The device TCA_DEVICE names: loopback or ucx (the plugin tca_ucx.so beside
// libtca, ucx/ucx_device.cpp); anything else is refused by name.  Unset: as
// default_device_name says.
Result make_device(const tcaInitParams *params, std::unique_ptr<Device> *out);
// Which one make_device(params) starts, without starting it (tcaQueryBackendChoice).
Result choose_device(const tcaInitParams *params, const char **name);
// Whether that device's nodes may sit on several hosts.
bool device_spans_hosts(const char *name);

// The device when TCA_DEVICE is unset: "ucx" for a job whose launcher says it
// spans hosts and is a PMIx server (PMIX_NAMESPACE), where nobody placed the
// nodes (no node id or count in params, TCA_NODE_ID, TCA_NUM_NODES: btl tca
// and coll tca place theirs on one host) and the ucx device is built
// (ucx_built); else "loopback".
const char *default_device_name(const tcaInitParams *params, bool ucx_built);

}  // namespace tca
