// btl tca's MCA parameter table (tca-btl/btl_params.h): what the glue
// registers with Open MPI and what it refuses.  The glue's side (the text as
// given, help output, btl tca not used) is test/mpi/cases/params_btl.mpi.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "btl_params.h"
#include "tca.h"

namespace {

const tca_btl_param_t &param(const char *name) {
    const tca_btl_param_t *p = tca_btl_param_find(name);
    EXPECT_NE(p, nullptr) << name;
    static const tca_btl_param_t none{};
    return p != nullptr ? *p : none;
}

bool takes(const char *name, int64_t value) {
    return tca_btl_param_problem(&param(name), static_cast<uint64_t>(value)) == nullptr;
}

}  // namespace

TEST(BtlParams, EveryDefaultIsAValueTheParameterTakes) {
    size_t count = 0;
    const tca_btl_param_t *params = tca_btl_params(&count);
    ASSERT_GT(count, 0u);
    tca_btl_settings_t s;
    std::memset(&s, 0x5a, sizeof(s));
    tca_btl_settings_defaults(&s);
    for (size_t i = 0; i < count; ++i) {
        const tca_btl_param_t &p = params[i];
        if (p.flags & TCA_BTL_PARAM_OMPI_DEFAULT)
            continue;
        const uint64_t def = p.help != nullptr ? tca_btl_setting_get(&s, &p) : p.def;
        EXPECT_EQ(def, p.def) << p.name;
        EXPECT_EQ(tca_btl_param_problem(&p, def), nullptr) << p.name << " = " << def;
    }
}

TEST(BtlParams, NamesAreUniqueAndOwnOnesFitTheSettings) {
    size_t count = 0;
    const tca_btl_param_t *params = tca_btl_params(&count);
    std::set<std::string> seen;
    for (size_t i = 0; i < count; ++i) {
        const tca_btl_param_t &p = params[i];
        EXPECT_TRUE(seen.insert(p.name).second) << p.name << " twice";
        EXPECT_EQ(tca_btl_param_find(p.name), &p);
        EXPECT_NE(p.allowed, nullptr) << p.name;
        EXPECT_LE(p.min, p.max) << p.name;
        if (p.help == nullptr)
            continue;
        EXPECT_GE(p.level, 1) << p.name;
        EXPECT_LE(p.level, 9) << p.name;
        EXPECT_LT(p.offset, sizeof(tca_btl_settings_t)) << p.name;
        if (p.names != nullptr) {
            EXPECT_EQ(p.max, static_cast<uint64_t>(p.name_count - 1)) << p.name;
            EXPECT_LT(i, 32u) << "the glue keeps enumerator rows for the first 32 parameters";
            EXPECT_LT(p.name_count, 4)
                << p.name << ": the glue keeps 3 enumerators and the end mark";
        }
    }
    EXPECT_EQ(tca_btl_param_find("btl_tca_ring_slots"), nullptr) << "names go without the prefix";
    EXPECT_EQ(tca_btl_param_find("no_such_parameter"), nullptr);
}

TEST(BtlParams, RangesAndRulesSayWhy) {
    EXPECT_TRUE(takes("ring_slots", 0));
    EXPECT_TRUE(takes("ring_slots", 2));
    EXPECT_TRUE(takes("ring_slots", 4096));
    EXPECT_STREQ(tca_btl_param_problem(&param("ring_slots"), 1), "a ring needs at least 2 slots");
    EXPECT_STREQ(tca_btl_param_problem(&param("ring_slots"), 48),
                 "not a power of two (a ring index is a mask)");
    EXPECT_STREQ(tca_btl_param_problem(&param("ring_slots"), 8192), "above the maximum");

    EXPECT_TRUE(takes("subcluster_size", 0));
    EXPECT_TRUE(takes("subcluster_size", 3));  // any size: not a mask
    EXPECT_FALSE(takes("subcluster_size", 1));
    EXPECT_STREQ(
        tca_btl_param_problem(&param("subcluster_size"), static_cast<uint64_t>(int64_t{-1})),
        "below the minimum");  // an int is read as signed, not as 2^64-1
    EXPECT_FALSE(takes("subcluster_size", TCA_MAX_NODES + 1));

    EXPECT_TRUE(takes("put_alignment", 0));
    EXPECT_TRUE(takes("put_alignment", 64));
    EXPECT_STREQ(tca_btl_param_problem(&param("put_alignment"), 24), "not a power of two");
    EXPECT_FALSE(takes("get_alignment", 65536 * 2));

    EXPECT_FALSE(takes("eager_limit", 127));  // ob1's header must fit
    EXPECT_TRUE(takes("eager_limit", 128));
    EXPECT_FALSE(takes("eager_limit", int64_t{1} << 24));  // a slot holds less than 16 MiB
    EXPECT_FALSE(takes("put_dma_min", -1));                // SIZE_MAX: "-1" as Open MPI stores it
    EXPECT_FALSE(takes("dma_channels", 0));
    EXPECT_FALSE(takes("dma_channels", TCA_NUM_DMA_CHANNELS + 1));
    EXPECT_FALSE(takes("progress_thread", 3));
    EXPECT_FALSE(takes("bandwidth", 0));
}

TEST(BtlParams, SettingsAreReadWhereTheTableSays) {
    tca_btl_settings_t s;
    tca_btl_settings_defaults(&s);
    s.ring_slots = 256;
    s.put_dma_min = uint64_t{1} << 33;
    s.poll_all_max_peers = -7;
    EXPECT_EQ(tca_btl_setting_get(&s, &param("ring_slots")), 256u);
    EXPECT_EQ(tca_btl_setting_get(&s, &param("put_dma_min")), uint64_t{1} << 33);
    EXPECT_EQ(static_cast<int64_t>(tca_btl_setting_get(&s, &param("poll_all_max_peers"))), -7);
    EXPECT_EQ(tca_btl_setting_get(&s, &param("progress_thread")),
              static_cast<uint64_t>(TCA_BTL_THREAD_AUTO));
    EXPECT_EQ(tca_btl_setting_get(&s, &param("get_emulation")),
              static_cast<uint64_t>(TCA_BTL_GET_ALL));
}
