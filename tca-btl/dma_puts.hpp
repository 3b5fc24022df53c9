// dma_puts.hpp - btl tca's puts through the device's DMA channels: started on
// an idle channel of ours, else queued in order behind those on our channels;
// reaped by progress.  Each channel keeps one descriptor that is cleared and
// refilled put after put, and waiting puts sit in a ring that only grows, so
// a warm queue allocates nothing.  ob1 never retries a put, so a put is never
// refused for lack of room: only when we hold no channel and none is free
// (the caller then writes by PIO) or the device refuses it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tca.h"
#include "tca_btl_core.h"

namespace tca::btl {

// First in, first out; a power-of-two ring that doubles when full.
class PutFifo {
public:
    bool empty() const noexcept { return head_ == tail_; }
    size_t size() const noexcept { return static_cast<size_t>(tail_ - head_); }
    void push(const tca_btl_dma_put_t &put);  // may throw std::bad_alloc (growing)
    tca_btl_dma_put_t pop() noexcept;         // not empty

private:
    std::vector<tca_btl_dma_put_t> buf_;
    uint64_t head_ = 0, tail_ = 0;
};

class DmaPuts {
public:
    using Log = void (*)(void *ctx, const char *text);
    using Done = void (*)(void *ctx, const tca_btl_dma_put_t *put, tcaResult r);

    DmaPuts(int max_channels, Log log, void *log_ctx);
    ~DmaPuts();  // waits for started puts (no callbacks), drops queued ones, releases the channels
    DmaPuts(const DmaPuts &) = delete;
    DmaPuts &operator=(const DmaPuts &) = delete;

    int submit(const tca_btl_dma_put_t &put, tcaResult *err);  // TCA_BTL_PUT_*
    int progress(Done done, void *ctx);
    int busy() const noexcept { return taken_.load(std::memory_order_acquire); }
    int channels_held() const;

private:
    struct Channel {
        int id = -1;
        tcaDesc *desc = nullptr;
        bool active = false;
        tca_btl_dma_put_t put{};
    };
    struct Finished {
        tca_btl_dma_put_t put;
        tcaResult result;
    };
    Channel *idle_channel_locked();
    tcaResult start_locked(Channel &ch, const tca_btl_dma_put_t &put);
    void log(const char *fmt, ...) const __attribute__((format(printf, 2, 3)));

    mutable std::mutex lock_;
    const int max_channels_;
    std::array<Channel, TCA_NUM_DMA_CHANNELS> channels_{};
    int held_ = 0;
    bool none_reported_ = false;
    PutFifo waiting_;
    std::atomic<int> taken_{0};  // started or waiting, not yet handed back
    const Log log_;
    void *const log_ctx_;
};

}  // namespace tca::btl
