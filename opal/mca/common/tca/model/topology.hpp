// topology.hpp - the sub-cluster: nodes on an E/W ring, optionally two rings
// joined by S links, and PEACH2 routing between them.
#pragma once

#include "plugin_api.hpp"

#include <cstdint>
#include <vector>

#include "model/address_map.hpp"

namespace tca {

enum class Port : uint8_t { North, East, West, South };  // North = into the local node
const char *port_name(Port p) noexcept;

class TCA_PLUGIN_API Topology {
public:
    // s_links: split the nodes into two equal rings joined node-by-node by S
    // links (needs an even node count >= 4), as on HA-PACS/TCA.
    Topology(int num_nodes, bool s_links);

    int num_nodes() const noexcept { return num_nodes_; }
    bool has_s_links() const noexcept { return s_links_; }
    int ring_size() const noexcept { return ring_size_; }
    int ring_of(int node) const noexcept { return s_links_ ? node / ring_size_ : 0; }
    int east_of(int node) const noexcept;
    int west_of(int node) const noexcept;
    int south_of(int node) const noexcept;  // -1 without S links

    // The output port a PEACH2 at `at` picks for a write to `global_addr`:
    // the address-range decision of the hardware (upper address bits compared
    // with the per-port ranges, no table).
    Port route(int at, uint64_t global_addr) const noexcept;
    // The nodes a write passes through, `from` excluded, `to` included.
    std::vector<int> path(int from, int to) const;
    int hops(int from, int to) const { return static_cast<int>(path(from, to).size()); }

    const AddressMap &address_map() const noexcept { return map_; }

private:
    int num_nodes_;
    bool s_links_;
    int ring_size_;
    AddressMap map_;
};

}  // namespace tca
