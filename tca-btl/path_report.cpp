// path_report.cpp - the one line btl tca prints (btl_base_verbose 5) about
// which path a message takes at which size and how progress polls: the
// crossover points are MCA parameters, and this is where a user sees the
// values in effect, together with the device's put mechanism.
#include <cstdio>
#include <string>

#include "tca_btl_core.h"

namespace {

std::string bytes_text(uint64_t b) {
    char text[32];
    if (b >= (uint64_t{1} << 20) && b % (uint64_t{1} << 20) == 0)
        std::snprintf(text, sizeof(text), "%llu MiB", static_cast<unsigned long long>(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        std::snprintf(text, sizeof(text), "%llu KiB", static_cast<unsigned long long>(b >> 10));
    else
        std::snprintf(text, sizeof(text), "%llu B", static_cast<unsigned long long>(b));
    return text;
}

std::string describe(const tca_btl_path_t &p) {
    const char *rendezvous = p.get_for_host ? "RGET rendezvous (emulated get: the data owner puts)"
                                            : "rendezvous (RDMA put)";
    std::string s = "sends up to " + bytes_text(p.eager_limit) +
                    " through the rings (copied in by the sender, out by the receiver); larger "
                    "ones by ob1's ";
    if (p.copy_max <= p.eager_limit) {
        s += std::string(rendezvous) + " (btl_tca_min_rdma_pipeline_size " +
             bytes_text(p.copy_max) + ": no copy protocol)";
    } else {
        s += "copy protocol through the rings (btl_tca_min_rdma_pipeline_size) ";
        const std::string limit =
            p.copy_max == UINT64_MAX ? "at every size" : "up to " + bytes_text(p.copy_max);
        if (p.lone_by_rdma)
            s += "for the messages of a stream one way " + limit +
                 "; a lone message, and the messages of streams both ways, by its " + rendezvous +
                 " (btl_tca_rendezvous_choice traffic)" +
                 (p.copy_max == UINT64_MAX ? "" : ", as every larger one");
        else if (p.copy_max == UINT64_MAX)
            s += "at every size (measured: a copy into another process is dear here)";
        else
            s += limit + ", larger ones by its " + rendezvous;
    }
    s += "; puts (" + std::string(p.put_mechanism[0] != '\0' ? p.put_mechanism : "device puts") +
         "): ";
    s += p.put_dma_min == 0
             ? std::string("all by PIO (no DMA puts)")
             : "from " + bytes_text(p.put_dma_min) + " on the DMA engine, smaller by PIO";
    s += "; progress polls ";
    s += p.poll_by_traffic ? "only the rings marked in its traffic line" : "every peer's ring";
    s += " (" + std::to_string(p.peers) + (p.peers == 1 ? " peer" : " peers") +
         ", btl_tca_poll_all_max_peers " + std::to_string(p.poll_all_max_peers) + ")";
    return s;
}

}  // namespace

extern "C" size_t tca_btl_describe_path(const tca_btl_path_t *path, char *text, size_t size) {
    if (path == nullptr || text == nullptr || size == 0)
        return 0;
    try {
        const std::string s = describe(*path);
        std::snprintf(text, size, "%s", s.c_str());
        return s.size();
    } catch (...) {  // no memory for the text: say nothing rather than throw into C
        text[0] = '\0';
        return 0;
    }
}
