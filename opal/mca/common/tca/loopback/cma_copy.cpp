// cma_copy.cpp - see cma_copy.hpp.
#include "loopback/cma_copy.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu/cuda_runtime.hpp"

namespace tca::loopback {

namespace {
constexpr size_t kMaxIov = 512;
}  // namespace

void CmaCopy::refuse(int err) {
    if (!refused_.exchange(true))
        std::fprintf(stderr,
                     "tca: node %d: process_vm_writev refused (%s): the kernel's ptrace rules "
                     "(/proc/sys/kernel/yama/ptrace_scope, containers) forbid single-copy puts; "
                     "falling back to bounce copies through the target's engine thread (slower, "
                     "still correct)\n",
                     nodes_.self(), std::strerror(err));
}

Result CmaCopy::write(int node, uint64_t dst_addr, const RowCopy &c) {
    const pid_t pid = nodes_.view(node).header()->pid;
    std::vector<unsigned char> staging;
    if (c.src_on_gpu) {  // GPU -> remote host: stage through host memory
        staging.resize(c.width * c.height);
        if (Result r = gpu::CudaRuntime::instance().copy_2d(staging.data(), c.width, c.src,
                                                            c.src_pitch ? c.src_pitch : c.width,
                                                            c.width, c.height);
            r != tcaSuccess)
            return r;
    }
    const unsigned char *src = c.src_on_gpu ? staging.data() : c.src;
    const uint64_t src_pitch = c.src_on_gpu ? c.width : c.src_pitch;
    iovec local[kMaxIov], remote[kMaxIov];
    for (uint64_t row = 0; row < c.height;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kMaxIov, c.height - row));
        size_t total = 0;
        for (size_t i = 0; i < n; ++i) {
            local[i] = {const_cast<unsigned char *>(src + (row + i) * src_pitch), c.width};
            remote[i] = {reinterpret_cast<void *>(dst_addr + c.dst_off + (row + i) * c.dst_pitch),
                         c.width};
            total += c.width;
        }
        ssize_t done = process_vm_writev(pid, local, n, remote, n, 0);
        if (done < 0) {
            const int err = errno;
            if (err == EPERM || err == EACCES || err == ENOSYS) {
                if (row != 0)
                    return tcaErrorSystem;  // cannot happen midway; never half-write silently
                refuse(err);
                return tcaErrorNotSupported;
            }
            if (err == ESRCH)
                return tcaErrorPeerGone;
            std::fprintf(stderr,
                         "tca: node %d: process_vm_writev to node %d failed: %s (memory freed "
                         "without tcaDestroyHandle?)\n",
                         nodes_.self(), node, std::strerror(err));
            return err == EFAULT ? tcaErrorNotRegistered : tcaErrorSystem;
        }
        // Short write (only at page-fault boundaries): finish row by row.
        if (static_cast<size_t>(done) < total) {
            size_t i = static_cast<size_t>(done) / c.width;
            uint64_t off = static_cast<size_t>(done) % c.width;
            for (; i < n; ++i, off = 0) {
                while (off < c.width) {
                    iovec l{const_cast<unsigned char *>(src + (row + i) * src_pitch) + off,
                            c.width - off};
                    iovec r{reinterpret_cast<unsigned char *>(dst_addr + c.dst_off +
                                                              (row + i) * c.dst_pitch) +
                                off,
                            c.width - off};
                    const ssize_t k = process_vm_writev(pid, &l, 1, &r, 1, 0);
                    if (k <= 0)
                        return errno == ESRCH ? tcaErrorPeerGone : tcaErrorSystem;
                    off += static_cast<uint64_t>(k);
                }
            }
        }
        row += n;
    }
    return tcaSuccess;
}

}  // namespace tca::loopback
