// address_map.cpp - per-node windows sized so that every node gets an equal,
// power-of-two aligned part of the BAR (routing then needs only bit compares).
#include "model/address_map.hpp"

#include <bit>

namespace tca {

const char *region_name(Region r) noexcept {
    switch (r) {
    case Region::Host:
        return "host";
    case Region::Gpu0:
        return "gpu0";
    case Region::Gpu1:
        return "gpu1";
    case Region::Internal:
        return "internal";
    }
    return "?";
}

AddressMap::AddressMap(int num_nodes) : num_nodes_(num_nodes) {
    const auto slots = std::bit_ceil(static_cast<uint64_t>(num_nodes < 1 ? 1 : num_nodes));
    window_shift_ = std::countr_zero(kBarSize / slots);
}

std::optional<DecodedAddress> AddressMap::decode(uint64_t global) const noexcept {
    if (global < kBarBase || global >= kBarBase + kBarSize)
        return std::nullopt;
    const uint64_t rel = global - kBarBase;
    const int node = static_cast<int>(rel >> window_shift_);
    if (node >= num_nodes_)
        return std::nullopt;
    const uint64_t in_window = rel & (window_size() - 1);
    const auto region = static_cast<Region>(in_window / region_size());
    return DecodedAddress{node, region, in_window % region_size()};
}

}  // namespace tca
