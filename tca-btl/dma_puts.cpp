// dma_puts.cpp - see dma_puts.hpp.
#include "dma_puts.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <new>

namespace tca::btl {

void PutFifo::push(const tca_btl_dma_put_t &put) {
    if (size() == buf_.size()) {
        std::vector<tca_btl_dma_put_t> bigger(std::max<size_t>(16, 2 * buf_.size()));
        const size_t n = size();
        for (size_t i = 0; i < n; ++i)
            bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
        buf_.swap(bigger);
        head_ = 0;
        tail_ = n;
    }
    buf_[tail_++ & (buf_.size() - 1)] = put;
}

tca_btl_dma_put_t PutFifo::pop() noexcept {
    return buf_[head_++ & (buf_.size() - 1)];
}

DmaPuts::DmaPuts(int max_channels, Log log, void *log_ctx)
    : max_channels_(std::clamp(max_channels, 0, TCA_NUM_DMA_CHANNELS)), log_(log),
      log_ctx_(log_ctx) {}

DmaPuts::~DmaPuts() {
    std::lock_guard g(lock_);
    for (int i = 0; i < held_; ++i) {
        Channel &ch = channels_[static_cast<size_t>(i)];
        if (ch.active)
            (void) tcaWaitDMAC(ch.id);  // the device must not write into memory being freed
        (void) tcaDescFree(ch.desc);
        (void) tcaChannelRelease(ch.id);
    }
}

void DmaPuts::log(const char *fmt, ...) const {
    if (log_ == nullptr)
        return;
    char text[200];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    log_(log_ctx_, text);
}

int DmaPuts::channels_held() const {
    std::lock_guard g(lock_);
    return held_;
}

// An idle channel of ours, else a newly acquired one, else nullptr.
DmaPuts::Channel *DmaPuts::idle_channel_locked() {
    for (int i = 0; i < held_; ++i)
        if (!channels_[static_cast<size_t>(i)].active)
            return &channels_[static_cast<size_t>(i)];
    if (held_ >= max_channels_)
        return nullptr;
    int id = -1;
    tcaResult r = tcaChannelAcquire(&id);
    tcaDesc *desc = r == tcaSuccess ? tcaDescNew() : nullptr;
    if (r == tcaSuccess && desc == nullptr) {
        (void) tcaChannelRelease(id);
        r = tcaErrorNoMemory;
    }
    if (r != tcaSuccess) {
        if (held_ == 0 && !none_reported_)
            log("no free DMA channel (%s): DMA-sized puts are PIO writes until one is",
                tcaGetErrorString(r));
        none_reported_ = true;
        return nullptr;
    }
    log("DMA puts use channel %d (%d of up to %d)", id & 0xffff /* the id's index */, held_ + 1,
        max_channels_);
    Channel &ch = channels_[static_cast<size_t>(held_++)];
    ch.id = id;
    ch.desc = desc;
    ch.active = false;
    return &ch;
}

tcaResult DmaPuts::start_locked(Channel &ch, const tca_btl_dma_put_t &put) {
    tcaHandle dst = put.dst, src = put.src;  // the API takes them non-const
    tcaResult r = tcaDescClear(ch.desc);
    if (r == tcaSuccess)
        r = tcaDescSetMemcpy(ch.desc, &dst, static_cast<off_t>(put.dst_off), &src,
                             static_cast<off_t>(put.src_off), put.size, tcaDMAUseInternal, 0, 0);
    if (r == tcaSuccess)
        r = tcaDescSet(ch.desc, ch.id);
    if (r == tcaSuccess)
        r = tcaStartDMADesc(ch.id);
    if (r == tcaSuccess) {
        ch.active = true;
        ch.put = put;
    }
    return r;
}

int DmaPuts::submit(const tca_btl_dma_put_t &put, tcaResult *err) {
    std::lock_guard g(lock_);
    Channel *ch =
        waiting_.empty() ? idle_channel_locked() : nullptr;  // nothing overtakes a waiting put
    if (ch != nullptr) {
        if (const tcaResult r = start_locked(*ch, put); r != tcaSuccess) {
            *err = r;
            return TCA_BTL_PUT_FAILED;
        }
        taken_.fetch_add(1, std::memory_order_release);
        return TCA_BTL_PUT_STARTED;
    }
    if (held_ == 0)
        return TCA_BTL_PUT_NO_CHANNEL;
    try {
        waiting_.push(put);
    } catch (const std::bad_alloc &) {
        *err = tcaErrorNoMemory;
        return TCA_BTL_PUT_FAILED;
    }
    taken_.fetch_add(1, std::memory_order_release);
    return TCA_BTL_PUT_QUEUED;
}

int DmaPuts::progress(Done done, void *ctx) {
    // At most one reaped and one failed start per channel per call.
    std::array<Finished, 2 * TCA_NUM_DMA_CHANNELS> finished;
    size_t n = 0;
    {
        std::lock_guard g(lock_);
        for (int i = 0; i < held_; ++i) {
            Channel &ch = channels_[static_cast<size_t>(i)];
            if (ch.active) {
                int complete = 0;
                const tcaResult r = tcaTestDMAC(ch.id, &complete);
                if (r == tcaSuccess && !complete)
                    continue;
                finished[n++] = {ch.put, r};
                ch.active = false;
            }
            if (waiting_.empty())
                continue;
            const tca_btl_dma_put_t next = waiting_.pop();
            if (const tcaResult r = start_locked(ch, next); r != tcaSuccess)
                finished[n++] = {next, r};
        }
    }
    for (size_t i = 0; i < n; ++i) {
        taken_.fetch_sub(1, std::memory_order_release);
        done(ctx, &finished[i].put, finished[i].result);
    }
    return static_cast<int>(n);
}

}  // namespace tca::btl

// ---- C interface (tca_btl_core.h) ----
struct tca_btl_dma_puts {
    tca_btl_dma_puts(int max_channels, tca::btl::DmaPuts::Log log, void *ctx)
        : q(max_channels, log, ctx) {}
    tca::btl::DmaPuts q;
};

extern "C" {

tca_btl_dma_puts_t *tca_btl_dma_puts_new(int max_channels, void (*log)(void *, const char *),
                                         void *log_ctx) {
    return new (std::nothrow) tca_btl_dma_puts(max_channels, log, log_ctx);
}
void tca_btl_dma_puts_free(tca_btl_dma_puts_t *q) {
    delete q;
}
int tca_btl_dma_put_submit(tca_btl_dma_puts_t *q, const tca_btl_dma_put_t *put, tcaResult *err) {
    return q->q.submit(*put, err);
}
int tca_btl_dma_puts_progress(tca_btl_dma_puts_t *q,
                              void (*done)(void *, const tca_btl_dma_put_t *, tcaResult),
                              void *ctx) {
    return q->q.progress(done, ctx);
}
int tca_btl_dma_puts_busy(const tca_btl_dma_puts_t *q) {
    return q == nullptr ? 0 : q->q.busy();
}

}  // extern "C"
