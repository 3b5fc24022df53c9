// tca_api_compat.cpp - the published API that tca.h's own functions do not
// cover (tca-api.h): PIO windows (tcaSetPIORegion, tcaSendPIO,
// tcaSendPIOCommit) and tcaDMADescInt_Init.
//
// PIO ordering (programs poll a marker in a message's last 8 bytes, then read
// the rest): tcaSendPIO writes the message minus its final 8 bytes, fences,
// then writes those 8 bytes as a second write.  Device::pio_write returns
// only once its bytes are visible at the destination, whatever the path
// (plain stores into mapped memory, process_vm_writev into another process,
// a bounce through the target's engine thread, a CUDA copy), so the final
// word cannot overtake the body; the full fence between them also orders
// weakly-ordered (non-temporal) stores a large memcpy may use.  One write
// alone would not do: the kernel's and glibc's bulk copies (rep movsb,
// vector and non-temporal loops) give no store order within a copy.  The final word is one 8-byte copy: a single aligned store
// when it reaches mapped memory (memcpy of 8 bytes), and the kernel's copy
// for process_vm_writev, which no program can observe half-done in the
// marker protocol (the marker 255 differs from 0 in one byte).
#include <atomic>
#include <cstdio>
#include <new>

#include "api_guard.hpp"
#include "device.hpp"
#include "model/descriptor.hpp"
#include "tca-api.h"

namespace {

constexpr size_t kFinalWord = 8;

}  // namespace

extern "C" {

tcaresult tcaSetPIORegion(tcaPIOHandle *pio, tcaHandle *remote, off_t offset, size_t size) {
    return tca::on_device([&](tca::Device *dev) -> tcaresult {
        if (pio == nullptr)
            return tcaErrorInvalidValue;
        if (remote == nullptr)
            return tcaErrorInvalidHandle;
        if (const tcaresult r = tca::check_handle(remote, dev->topology().num_nodes());
            r != tcaSuccess)
            return r;
        if (offset < 0 || !tca::range_fits(*remote, static_cast<uint64_t>(offset), size))
            return tcaErrorOutOfRange;
        tcaPIOHandle w{};
        w.remote = *remote;
        w.offset = static_cast<uint64_t>(offset);
        w.size = size;
        *pio = w;
        return tcaSuccess;
    });
}

tcaresult tcaSendPIO(tcaPIOHandle *pio, size_t offset, void *src, size_t size) {
    return tca::on_device([&](tca::Device *dev) -> tcaresult {
        if (pio == nullptr)
            return tcaErrorInvalidValue;
        if (src == nullptr && size != 0)
            return tcaErrorInvalidValue;
        // The window's declared size is not a bound (programs write step i at
        // i * size); the remote registration is.
        if (offset > UINT64_MAX - pio->offset)
            return tcaErrorOutOfRange;
        const uint64_t at = pio->offset + offset;
        if (const tcaresult r = tca::check_handle(&pio->remote, dev->topology().num_nodes());
            r != tcaSuccess)
            return r;
        if (!tca::range_fits(pio->remote, at, size))
            return tcaErrorOutOfRange;
        if (size == 0)
            return tcaSuccess;
        const auto *bytes = static_cast<const unsigned char *>(src);
        if (size <= kFinalWord)
            return dev->pio_write(pio->remote, at, bytes, size, 0, 0, 0);
        const size_t body = size - kFinalWord;
        if (const tcaresult r = dev->pio_write(pio->remote, at, bytes, body, 0, 0, 0);
            r != tcaSuccess)
            return r;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        // One message, one modelled PIO latency: the final word is not timed again.
        return dev->pio_write(pio->remote, at + body, bytes + body, kFinalWord,
                              tca::Device::kPioUntimed, 0, 0);
    });
}

tcaresult tcaSendPIOCommit(void) {
    // Every tcaSendPIO has returned with its bytes visible; order this
    // thread's later stores after them as a PIO flush would.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return tcaSuccess;
}

tcaresult tcaDMADescInt_Init(void) {
    // PEACH2 switches descriptor fetching to its internal memory; the
    // loopback device keeps chains in the engine's own memory already.
    return tca::on_device([](tca::Device *) { return tcaSuccess; });
}

}  // extern "C"
