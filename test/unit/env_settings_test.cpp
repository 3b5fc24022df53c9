// env_settings_test.cpp - every TCA_* environment variable of libtca against
// junk, negative, inf, nan, huge and empty values and its valid spellings:
// each row says whether DeviceSettings::from_environment (the one reader,
// used by tcaInit) accepts it and what it read, or refuses it by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "base/env_settings.hpp"
#include "loopback/launch_info.hpp"
#include "tca_units.h"

namespace tca::loopback {
namespace {

// Every variable this table covers, unset before each row.
std::vector<std::string> all_variables() {
    std::vector<std::string> v = {
        "TCA_INTERNAL_SIZE", "TCA_SHARED_HEAP", "TCA_S_LINKS", "TCA_SINGLE_COPY",
        "TCA_SPIN_NS",       "TCA_TIMEOUT_MS",  "TCA_TIMING",  "TCA_LINK_BANDWIDTH_MBS",
        "TCA_NODE_ID",       "TCA_NUM_NODES",   "TCA_JOB_KEY", "TCA_STREAMING_MIN",
        "TCA_TAKEOVER_US"};
    for (const TimingModel::Parameter &p : TimingModel::parameters())
        v.push_back(p.variable);
    return v;
}

struct Read {
    Result result = tcaSuccess;
    std::string err;  // what went to stderr
    DeviceSettings s;
};

Read read_with(const char *name, const char *value) {
    for (const std::string &v : all_variables())
        unsetenv(v.c_str());
    setenv(name, value, 1);
    Read r;
    testing::internal::CaptureStderr();
    r.result = DeviceSettings::from_environment(&r.s);
    r.err = testing::internal::GetCapturedStderr();
    unsetenv(name);
    return r;
}

void expect_refused(const char *name, const char *value) {
    const Read r = read_with(name, value);
    EXPECT_EQ(r.result, tcaErrorInvalidValue) << name << "='" << value << "' accepted";
    // One line naming the variable and the value.
    EXPECT_NE(r.err.find(std::string("tca: ") + name + "='" + value + "'"), std::string::npos)
        << name << "='" << value << "': " << r.err;
}

// The values no variable accepts.
const char *const kHostileAll[] = {"",    " ",    "junk", "12abc", "-1",
                                   "-0",  "inf",  "INF",  "-inf",  "nan",
                                   "NaN", "0x10", "+1",   "1e999", "99999999999999999999999999"};

TEST(EnvSettings, UnsetMeansDefaults) {
    for (const std::string &v : all_variables())
        unsetenv(v.c_str());
    DeviceSettings s;
    ASSERT_EQ(DeviceSettings::from_environment(&s), tcaSuccess);
    EXPECT_EQ(s.internal_size, 8u << 20);
    EXPECT_TRUE(s.shared_heap);
    EXPECT_FALSE(s.s_links);
    EXPECT_EQ(s.single_copy, CopyPath::Auto);
    EXPECT_FALSE(s.timing.enabled);
    EXPECT_EQ(s.policy.takeover_ns, 1'000'000);
    EXPECT_DOUBLE_EQ(s.timing.host_bandwidth_mb_s, TimingModel{}.host_bandwidth_mb_s);
}

// The booleans: the same spellings for each, and the field they set.
TEST(EnvSettings, Booleans) {
    struct Var {
        const char *name;
        std::function<bool(const DeviceSettings &)> get;
    } vars[] = {
        {"TCA_TIMING", [](const DeviceSettings &s) { return s.timing.enabled; }},
        {"TCA_SHARED_HEAP", [](const DeviceSettings &s) { return s.shared_heap; }},
        {"TCA_S_LINKS", [](const DeviceSettings &s) { return s.s_links; }},
    };
    const struct {
        const char *text;
        bool value;
    } valid[] = {{"1", true},    {"on", true},   {"ON", true},  {"yes", true},    {"Yes", true},
                 {"true", true}, {"TRUE", true}, {" 1 ", true}, {"0", false},     {"off", false},
                 {"OFF", false}, {"no", false},  {"No", false}, {"false", false}, {"False", false}};
    const char *const refused[] = {"2",   "10", "01",         "00", "y",   "n",      "t",       "f",
                                   "onn", "of", "yes please", "0x", "1.0", "enable", "disabled"};
    for (const Var &v : vars) {
        for (const auto &c : valid) {
            const Read r = read_with(v.name, c.text);
            EXPECT_EQ(r.result, tcaSuccess) << v.name << "='" << c.text << "': " << r.err;
            EXPECT_EQ(v.get(r.s), c.value) << v.name << "='" << c.text << "'";
            EXPECT_EQ(r.err, "") << v.name;
        }
        for (const char *t : refused)
            expect_refused(v.name, t);
        for (const char *t : kHostileAll)
            expect_refused(v.name, t);
    }
}

// TCA_SINGLE_COPY: a boolean (1: single copy, 0: the bounce path) or "auto",
// the default, which measures at start-up (CopyProbe).
TEST(EnvSettings, SingleCopyTakesABooleanOrAuto) {
    const struct {
        const char *text;
        CopyPath path;
    } valid[] = {{"1", CopyPath::Single},  {"on", CopyPath::Single},  {"TRUE", CopyPath::Single},
                 {"0", CopyPath::Bounce},  {"off", CopyPath::Bounce}, {"No", CopyPath::Bounce},
                 {"auto", CopyPath::Auto}, {"AUTO", CopyPath::Auto},  {"Auto", CopyPath::Auto}};
    for (const auto &c : valid) {
        const Read r = read_with("TCA_SINGLE_COPY", c.text);
        EXPECT_EQ(r.result, tcaSuccess) << c.text << ": " << r.err;
        EXPECT_EQ(r.s.single_copy, c.path) << c.text;
    }
    for (const char *t : {"2", "automatic", "au", "y", "0x"})
        expect_refused("TCA_SINGLE_COPY", t);
    for (const char *t : kHostileAll)
        expect_refused("TCA_SINGLE_COPY", t);
}

// The timing knobs (and the old name of the host bandwidth): reals within
// their unit's range.
TEST(EnvSettings, TimingKnobs) {
    std::vector<TimingModel::Parameter> vars(TimingModel::parameters().begin(),
                                             TimingModel::parameters().end());
    vars.push_back(
        {"TCA_LINK_BANDWIDTH_MBS", "MB/s", "", &TimingModel::host_bandwidth_mb_s, 1, 1e9});
    ASSERT_EQ(vars.size(), 23u);
    for (const TimingModel::Parameter &p : vars) {
        const std::string unit = p.unit;
        if (unit == "MB/s") {
            EXPECT_EQ(p.min, 1) << p.variable;
            EXPECT_EQ(p.max, 1e9) << p.variable;
        } else if (unit == "ns") {
            EXPECT_EQ(p.min, 0) << p.variable;
            EXPECT_EQ(p.max, 1e9) << p.variable;
        } else if (unit == "x") {  // a factor (TCA_CPU_FACTOR)
            EXPECT_EQ(p.min, 0) << p.variable;
            EXPECT_EQ(p.max, 1000) << p.variable;
        } else {
            EXPECT_EQ(p.min, 0) << p.variable;
            EXPECT_EQ(p.max, 1e12) << p.variable;
        }
        const struct {
            const char *text;
            double value;
        } valid[] = {{"1", 1},      {"2620", 2620}, {"12.5", 12.5}, {".5e1", 5},
                     {"2e3", 2000}, {" 300 ", 300}, {"1e9", 1e9},   {"1000000000", 1e9}};
        for (const auto &c : valid) {
            if (c.value > p.max)
                continue;
            const Read r = read_with(p.variable, c.text);
            EXPECT_EQ(r.result, tcaSuccess) << p.variable << "='" << c.text << "': " << r.err;
            EXPECT_DOUBLE_EQ(r.s.timing.*p.field, c.value) << p.variable << "='" << c.text << "'";
        }
        // 0: a latency or size of nothing; no bandwidth at all is refused.
        const Read zero = read_with(p.variable, "0");
        if (unit == "MB/s") {
            expect_refused(p.variable, "0");
            expect_refused(p.variable, "0.5");
        } else {
            EXPECT_EQ(zero.result, tcaSuccess) << p.variable;
            EXPECT_EQ(zero.s.timing.*p.field, 0) << p.variable;
        }
        for (const char *t : kHostileAll)
            expect_refused(p.variable, t);
        for (const char *t : {"1.5.2", "1e", "1e+", "e5", ".", "1,5", "12 ms", "3500MB/s", "1e300"})
            expect_refused(p.variable, t);
        expect_refused(p.variable, unit == "B" ? "1e13" : "1e10");  // past the unit's maximum
    }
}

TEST(EnvSettings, OldBandwidthNameYieldsToTheNewOne) {
    for (const std::string &v : all_variables())
        unsetenv(v.c_str());
    setenv("TCA_LINK_BANDWIDTH_MBS", "2000", 1);
    DeviceSettings s;
    ASSERT_EQ(DeviceSettings::from_environment(&s), tcaSuccess);
    EXPECT_DOUBLE_EQ(s.timing.host_bandwidth_mb_s, 2000);
    setenv("TCA_HOST_BANDWIDTH_MBS", "1000", 1);
    ASSERT_EQ(DeviceSettings::from_environment(&s), tcaSuccess);
    EXPECT_DOUBLE_EQ(s.timing.host_bandwidth_mb_s, 1000);
    unsetenv("TCA_LINK_BANDWIDTH_MBS");
    unsetenv("TCA_HOST_BANDWIDTH_MBS");
}

// The counts and sizes (one parser: tca_parse_size).
TEST(EnvSettings, Numbers) {
    const struct Row {
        const char *name;
        const char *text;
        bool ok;
        std::function<uint64_t(const DeviceSettings &)> get;
        uint64_t value;
    } rows[] = {
        {"TCA_INTERNAL_SIZE", "1g", true, [](const DeviceSettings &s) { return s.internal_size; },
         1u << 30},
        {"TCA_INTERNAL_SIZE", "64K", true, [](const DeviceSettings &s) { return s.internal_size; },
         64u << 10},
        {"TCA_INTERNAL_SIZE", "65536", true,
         [](const DeviceSettings &s) { return s.internal_size; }, 64u << 10},
        {"TCA_INTERNAL_SIZE", "10G", false, nullptr, 0},
        {"TCA_INTERNAL_SIZE", "1k", false, nullptr, 0},
        {"TCA_INTERNAL_SIZE", "1.5M", false, nullptr, 0},
        {"TCA_SPIN_NS", "0", true,
         [](const DeviceSettings &s) { return uint64_t(s.policy.spin_ns); }, 0},
        {"TCA_SPIN_NS", "1000000000", true,
         [](const DeviceSettings &s) { return uint64_t(s.policy.spin_ns); }, 1'000'000'000},
        {"TCA_SPIN_NS", "1000000001", false, nullptr, 0},
        {"TCA_SPIN_NS", "1k", false, nullptr, 0},
        {"TCA_TIMEOUT_MS", "1", true,
         [](const DeviceSettings &s) { return uint64_t(s.policy.timeout_ns); }, 1'000'000},
        {"TCA_TIMEOUT_MS", "0", false, nullptr, 0},
        {"TCA_STREAMING_MIN", "0", true, [](const DeviceSettings &s) { return s.streaming_min; },
         0},
        {"TCA_STREAMING_MIN", "32M", true, [](const DeviceSettings &s) { return s.streaming_min; },
         32u << 20},
        {"TCA_STREAMING_MIN", "1.5M", false, nullptr, 0},
        {"TCA_TIMEOUT_MS", "86400001", false, nullptr, 0},
        {"TCA_TAKEOVER_US", "0", true,
         [](const DeviceSettings &s) { return uint64_t(s.policy.takeover_ns); }, 0},
        {"TCA_TAKEOVER_US", "5000", true,
         [](const DeviceSettings &s) { return uint64_t(s.policy.takeover_ns); }, 5'000'000},
        {"TCA_TAKEOVER_US", "1000001", false, nullptr, 0},
    };
    for (const Row &row : rows) {
        if (row.ok) {
            const Read r = read_with(row.name, row.text);
            EXPECT_EQ(r.result, tcaSuccess) << row.name << "='" << row.text << "': " << r.err;
            EXPECT_EQ(row.get(r.s), row.value) << row.name << "='" << row.text << "'";
        } else {
            expect_refused(row.name, row.text);
        }
    }
    for (const char *name : {"TCA_INTERNAL_SIZE", "TCA_SPIN_NS", "TCA_TIMEOUT_MS",
                             "TCA_STREAMING_MIN", "TCA_TAKEOVER_US"})
        for (const char *t : kHostileAll)
            expect_refused(name, t);
}

// TCA_NODE_ID and TCA_NUM_NODES (read by the launch resolution).
TEST(EnvSettings, NodeIdAndCount) {
    const auto resolve = [](const char *id, const char *count, LaunchInfo *li, std::string *err) {
        for (const std::string &v : all_variables())
            unsetenv(v.c_str());
        setenv("TCA_JOB_KEY", "env-settings-test", 1);
        if (id != nullptr)
            setenv("TCA_NODE_ID", id, 1);
        if (count != nullptr)
            setenv("TCA_NUM_NODES", count, 1);
        testing::internal::CaptureStderr();
        const Result r = resolve_launch_info(nullptr, li);
        *err = testing::internal::GetCapturedStderr();
        for (const char *v : {"TCA_JOB_KEY", "TCA_NODE_ID", "TCA_NUM_NODES"})
            unsetenv(v);
        return r;
    };
    LaunchInfo li;
    std::string err;
    ASSERT_EQ(resolve("1", "2", &li, &err), tcaSuccess) << err;
    EXPECT_EQ(li.node_id, 1);
    EXPECT_EQ(li.num_nodes, 2);
    for (const char *t : kHostileAll) {
        EXPECT_EQ(resolve(t, "2", &li, &err), tcaErrorInvalidValue) << "TCA_NODE_ID='" << t << "'";
        EXPECT_NE(err.find("TCA_NODE_ID='"), std::string::npos) << t << ": " << err;
        EXPECT_EQ(resolve("0", t, &li, &err), tcaErrorInvalidValue)
            << "TCA_NUM_NODES='" << t << "'";
        EXPECT_NE(err.find("TCA_NUM_NODES='"), std::string::npos) << t << ": " << err;
    }
    EXPECT_EQ(resolve("0", "0", &li, &err), tcaErrorInvalidValue);  // no nodes is not "unset"
    EXPECT_NE(err.find("TCA_NUM_NODES='0'"), std::string::npos) << err;
}

// The parsers themselves.
TEST(EnvParsers, RealAndBool) {
    double d = -1;
    EXPECT_EQ(tca_parse_real("3.25", &d), TCA_PARSE_OK);
    EXPECT_EQ(d, 3.25);
    EXPECT_EQ(tca_parse_real("inf", &d), TCA_PARSE_NOT_NUMBER);
    EXPECT_EQ(tca_parse_real("nan", &d), TCA_PARSE_NOT_NUMBER);
    EXPECT_EQ(tca_parse_real("-1", &d), TCA_PARSE_NEGATIVE);
    EXPECT_EQ(tca_parse_real("", &d), TCA_PARSE_EMPTY);
    EXPECT_EQ(tca_parse_real("1x", &d), TCA_PARSE_JUNK);
    EXPECT_EQ(tca_parse_real("0x1p3", &d), TCA_PARSE_JUNK);
    EXPECT_EQ(tca_parse_real("1e400", &d), TCA_PARSE_OVERFLOW);
    int b = -1;
    EXPECT_EQ(tca_parse_bool("TrUe", &b), TCA_PARSE_OK);
    EXPECT_EQ(b, 1);
    EXPECT_EQ(tca_parse_bool("off", &b), TCA_PARSE_OK);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(tca_parse_bool("", &b), TCA_PARSE_EMPTY);
    EXPECT_EQ(tca_parse_bool("2", &b), TCA_PARSE_NOT_BOOLEAN);
}

}  // namespace
}  // namespace tca::loopback
