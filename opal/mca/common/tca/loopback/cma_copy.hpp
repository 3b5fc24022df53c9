// cma_copy.hpp - single-copy puts into another process's private host
// memory: process_vm_writev (Linux cross-memory attach, as vader's CMA and
// Open MPI's smsc/cma).  The first refusal (the kernel's ptrace rules) turns
// it off for good and says so once; the writer then bounces (bounce_mailbox.hpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "loopback/node_set.hpp"
#include "loopback/row_copy.hpp"
#include "model/result.hpp"

namespace tca::loopback {

class CmaCopy {
public:
    CmaCopy(NodeSet &nodes, bool refused) : nodes_(nodes), refused_(refused) {}
    // The rows written into node's memory at dst_addr (+ c.dst_off).
    // tcaErrorNotSupported: refused just now, nothing written (bounce it).
    Result write(int node, uint64_t dst_addr, const RowCopy &c);
    bool refused() const noexcept { return refused_.load(std::memory_order_relaxed); }
    void refuse_quietly() noexcept { refused_ = true; }  // the probe found it refused

private:
    void refuse(int err);

    NodeSet &nodes_;
    std::atomic<bool> refused_;
};

}  // namespace tca::loopback
