// tca_api_query.cpp - the C API that describes the device (tca.h, "describing
// the device"): topology, backend, the timing model and its parameters.  tca_info uses
// only these and the rest of the public API.
#include <algorithm>
#include <cstring>
#include <string>

#include "api_guard.hpp"
#include "base/build_info.hpp"
#include "device.hpp"
#include "gpu/cuda_runtime.hpp"
#include "base/env_settings.hpp"
#include "tca.h"

namespace {

void fill_topology(const tca::Topology &t, tcaTopologyAttr *attr) {
    const tca::AddressMap &m = t.address_map();
    tcaTopologyAttr a{};
    a.num_nodes = t.num_nodes();
    a.ring_size = t.ring_size();
    a.s_links = t.has_s_links() ? 1 : 0;
    a.window_shift = m.window_shift();
    a.bar_base = m.kBarBase;
    a.bar_size = m.kBarSize;
    a.window_size = m.window_size();
    a.region_size = m.region_size();
    *attr = a;
}

// tcaErrorInvalidValue for a shape the model refuses.
tcaResult check_model(int num_nodes, int s_links) {
    if (num_nodes < 1 || num_nodes > TCA_MAX_NODES)
        return tcaErrorInvalidValue;
    if (s_links != 0 && (num_nodes < 4 || num_nodes % 2 != 0))
        return tcaErrorInvalidValue;
    return tcaSuccess;
}

template <size_t N>
void copy_text(char (&dst)[N], const std::string &src) {
    const size_t n = std::min(N - 1, src.size());
    std::memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

}  // namespace

tcaResult tcaQueryTopology(tcaTopologyAttr *attr) {
    return tca::on_device([&](tca::Device *dev) {
        if (attr == nullptr)
            return tcaErrorInvalidValue;
        fill_topology(dev->topology(), attr);
        return tcaSuccess;
    });
}

tcaResult tcaQueryModelTopology(int num_nodes, int s_links, tcaTopologyAttr *attr) {
    if (attr == nullptr)
        return tcaErrorInvalidValue;
    return tca::guarded([&] {
        if (const tcaResult r = check_model(num_nodes, s_links); r != tcaSuccess)
            return r;
        fill_topology(tca::Topology(num_nodes, s_links != 0), attr);
        return tcaSuccess;
    });
}

tcaResult tcaModelHopCount(int num_nodes, int s_links, int from_node, int to_node, int *hops) {
    if (hops == nullptr)
        return tcaErrorInvalidValue;
    return tca::guarded([&] {
        if (const tcaResult r = check_model(num_nodes, s_links); r != tcaSuccess)
            return r;
        if (from_node < 0 || from_node >= num_nodes || to_node < 0 || to_node >= num_nodes)
            return tcaErrorInvalidNode;
        *hops = tca::Topology(num_nodes, s_links != 0).hops(from_node, to_node);
        return tcaSuccess;
    });
}

tcaResult tcaQueryBackend(tcaBackendAttr *attr) {
    return tca::on_device([&](tca::Device *dev) {
        if (attr == nullptr)
            return tcaErrorInvalidValue;
        const tca::DeviceInfo info = dev->info();
        tcaBackendAttr a{};
        copy_text(a.backend, info.backend);
        copy_text(a.job_key, info.job_key);
        copy_text(a.launch_source, info.launch_source);
        copy_text(a.put_mechanism, info.put_mechanism);
        a.host_puts_by_target = info.host_puts_by_target ? 1 : 0;
        a.spin_ns = info.spin_ns;
        a.timeout_ns = info.timeout_ns;
        a.takeover_us = info.takeover_ns < 0 ? -1 : static_cast<int>(info.takeover_ns / 1000);
        a.spans_hosts = tca::device_spans_hosts(info.backend.c_str()) ? 1 : 0;
        a.optimized = tca::kBuiltOptimized && info.optimized ? 1 : 0;
        auto &cuda = tca::gpu::CudaRuntime::instance();
        a.gpu_built = cuda.compiled_in() && info.gpu_memory ? 1 : 0;
        a.gpu_devices = cuda.available() ? cuda.device_count() : -1;
        if (a.gpu_devices < 0)
            copy_text(a.gpu_status, cuda.unavailable_reason());
        *attr = a;
        return tcaSuccess;
    });
}

tcaResult tcaQueryBackendChoice(const tcaInitParams *params, char *backend, size_t len,
                                int *spans_hosts) {
    if (backend == nullptr || len == 0 || spans_hosts == nullptr)
        return tcaErrorInvalidValue;
    return tca::guarded([&] {
        tca::set_error_detail("");
        const char *name = nullptr;
        if (const tcaResult r = tca::choose_device(params, &name); r != tcaSuccess)
            return r;
        if (std::strlen(name) + 1 > len)
            return tcaErrorInvalidValue;
        std::memcpy(backend, name, std::strlen(name) + 1);
        *spans_hosts = tca::device_spans_hosts(name) ? 1 : 0;
        return tcaSuccess;
    });
}

tcaResult tcaSetProgressTakeover(int microseconds) {
    return tca::on_device([&](tca::Device *dev) {
        if (microseconds < 0 || microseconds > 1'000'000)
            return tcaErrorInvalidValue;
        return dev->set_progress_takeover(int64_t{microseconds} * 1000);
    });
}

namespace {
// The timing model in effect: the running device's, else the environment's.
template <class F>
tcaResult with_timing(F &&f) {
    return tca::guarded([&] {
        if (tca::Device *dev = tca::current_device(); dev != nullptr)
            return f(dev->timing());
        tca::TimingModel from_env;
        if (const tcaResult r = tca::timing_from_environment(&from_env); r != tcaSuccess)
            return r;
        return f(static_cast<const tca::TimingModel &>(from_env));
    });
}
}  // namespace

tcaResult tcaTimingParameter(int index, const char **variable, double *value, const char **unit,
                             const char **meaning) {
    const auto params = tca::TimingModel::parameters();
    if (index < 0 || static_cast<size_t>(index) >= params.size())
        return tcaErrorInvalidValue;
    const tca::TimingModel::Parameter &p = params[static_cast<size_t>(index)];
    return with_timing([&](const tca::TimingModel &tm) {
        if (variable != nullptr)
            *variable = p.variable;
        if (value != nullptr)
            *value = tm.*p.field;
        if (unit != nullptr)
            *unit = p.unit;
        if (meaning != nullptr)
            *meaning = p.meaning;
        return tcaSuccess;
    });
}

tcaResult tcaTimingEnabled(int *enabled) {
    if (enabled == nullptr)
        return tcaErrorInvalidValue;
    return with_timing([&](const tca::TimingModel &tm) {
        *enabled = tm.virtual_time ? 2 : tm.enabled ? 1 : 0;
        return tcaSuccess;
    });
}
