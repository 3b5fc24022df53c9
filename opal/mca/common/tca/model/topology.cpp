// topology.cpp - PEACH2 routing: each board compares the destination address
// with its own window (N port), the other ring's windows (S port) and the two
// halves of its ring (E and W ports), so a write takes the shortest direction.
#include "model/topology.hpp"

#include <stdexcept>

namespace tca {

const char *port_name(Port p) noexcept {
    switch (p) {
    case Port::North:
        return "N";
    case Port::East:
        return "E";
    case Port::West:
        return "W";
    case Port::South:
        return "S";
    }
    return "?";
}

Topology::Topology(int num_nodes, bool s_links)
    : num_nodes_(num_nodes), s_links_(s_links), ring_size_(num_nodes), map_(num_nodes) {
    if (num_nodes < 1)
        throw std::invalid_argument("a sub-cluster needs at least one node");
    if (s_links_) {
        if (num_nodes < 4 || num_nodes % 2 != 0)
            throw std::invalid_argument("S links need an even node count >= 4");
        ring_size_ = num_nodes / 2;
    }
}

int Topology::east_of(int node) const noexcept {
    const int base = ring_of(node) * ring_size_;
    return base + (node - base + 1) % ring_size_;
}

int Topology::west_of(int node) const noexcept {
    const int base = ring_of(node) * ring_size_;
    return base + (node - base + ring_size_ - 1) % ring_size_;
}

int Topology::south_of(int node) const noexcept {
    if (!s_links_)
        return -1;
    return node < ring_size_ ? node + ring_size_ : node - ring_size_;
}

Port Topology::route(int at, uint64_t global_addr) const noexcept {
    const auto dst = map_.decode(global_addr);
    if (!dst || dst->node == at)
        return Port::North;
    // S port range: the windows of the other ring.
    if (s_links_ && ring_of(dst->node) != ring_of(at))
        return Port::South;
    // E port range: the next floor(R/2) windows clockwise; W port: the rest.
    const int base = ring_of(at) * ring_size_;
    const int forward = (dst->node - base - (at - base) + ring_size_) % ring_size_;
    return forward <= ring_size_ / 2 ? Port::East : Port::West;
}

std::vector<int> Topology::path(int from, int to) const {
    if (from < 0 || from >= num_nodes_ || to < 0 || to >= num_nodes_)
        throw std::out_of_range("node id outside the sub-cluster");
    std::vector<int> nodes;
    const uint64_t addr = map_.window_base(to);
    for (int at = from; at != to;) {
        switch (route(at, addr)) {
        case Port::East:
            at = east_of(at);
            break;
        case Port::West:
            at = west_of(at);
            break;
        case Port::South:
            at = south_of(at);
            break;
        case Port::North:
            return nodes;  // unreachable: decode failed
        }
        nodes.push_back(at);
        if (static_cast<int>(nodes.size()) > num_nodes_)
            throw std::logic_error("routing loop");
    }
    return nodes;
}

}  // namespace tca
