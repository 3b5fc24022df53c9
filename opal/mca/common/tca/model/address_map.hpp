// address_map.hpp - the global PCIe address space of a PEACH2 sub-cluster: one
// BAR split into equal, aligned per-node windows, each split into regions.
#pragma once

#include <cstdint>
#include <optional>

namespace tca {

// Region order inside a node window (each is one quarter of the window).
enum class Region : uint8_t { Host = 0, Gpu0 = 1, Gpu1 = 2, Internal = 3 };
const char *region_name(Region r) noexcept;

struct DecodedAddress {
    int node;
    Region region;
    uint64_t offset;  // inside the region
};

class AddressMap {
public:
    static constexpr uint64_t kBarBase = 0x0000'4000'0000'0000ull;  // where the BAR is mapped
    static constexpr uint64_t kBarSize = 512ull << 30;              // 512 GiB as on PEACH2

    explicit AddressMap(int num_nodes);

    int num_nodes() const noexcept { return num_nodes_; }
    int window_shift() const noexcept { return window_shift_; }
    uint64_t window_size() const noexcept { return 1ull << window_shift_; }
    uint64_t region_size() const noexcept { return window_size() / 4; }
    uint64_t window_base(int node) const noexcept {
        return kBarBase + (static_cast<uint64_t>(node) << window_shift_);
    }
    uint64_t region_base(int node, Region r) const noexcept {
        return window_base(node) + static_cast<uint64_t>(r) * region_size();
    }
    // Upper-bit decode, exactly what the routing logic compares.
    std::optional<DecodedAddress> decode(uint64_t global) const noexcept;

private:
    int num_nodes_;
    int window_shift_;
};

}  // namespace tca
