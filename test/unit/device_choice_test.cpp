// device_choice_test.cpp - which device tcaInit starts when TCA_DEVICE is
// unset (device_select.cpp): the launcher's variables decide.  The choice by
// name (TCA_DEVICE=...) is Lifecycle.TheDeviceIsChosenByName.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "device.hpp"
#include "tca.h"

namespace tca {
namespace {

// Variables set for one scope, then as they were.
class ScopedEnv {
public:
    ScopedEnv(std::initializer_list<std::pair<const char *, const char *>> vars) {
        for (const auto &[name, value] : vars) {
            const char *old = getenv(name);
            saved_.emplace_back(name, old != nullptr, old != nullptr ? old : "");
            if (value != nullptr)
                setenv(name, value, 1);
            else
                unsetenv(name);
        }
    }
    ~ScopedEnv() {
        for (const auto &[name, had, value] : saved_) {
            if (had)
                setenv(name.c_str(), value.c_str(), 1);
            else
                unsetenv(name.c_str());
        }
    }

private:
    std::vector<std::tuple<std::string, bool, std::string>> saved_;
};

// TCA_DEVICE unset: a job the launcher spreads over hosts goes to the ucx
// device where it is built, unless its nodes were placed explicitly (btl tca
// and coll tca place theirs on one host); everything else to the loopback.
TEST(DeviceChoice, ADefaultDeviceFollowsTheLauncher) {
    const char *unset = nullptr;
    ScopedEnv clean({{"TCA_NODE_ID", unset},
                     {"TCA_NUM_NODES", unset},
                     {"OMPI_COMM_WORLD_SIZE", unset},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", unset},
                     {"MV2_COMM_WORLD_SIZE", unset},
                     {"MV2_COMM_WORLD_LOCAL_SIZE", unset},
                     {"PMI_SIZE", unset},
                     {"MPI_LOCALNRANKS", unset},
                     {"SLURM_LOCALID", unset},
                     {"SLURM_STEP_NUM_NODES", unset},
                     {"SLURM_NNODES", unset},
                     {"PMIX_NAMESPACE", "job.1"}});
    const tcaInitParams placed{nullptr, 1, 4};
    const tcaInitParams unplaced{nullptr, -1, 0};
    EXPECT_STREQ(default_device_name(nullptr, true), "loopback") << "no launcher";
    {
        ScopedEnv one_host({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
        EXPECT_STREQ(default_device_name(nullptr, true), "loopback");
    }
    {
        ScopedEnv two_hosts({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
        EXPECT_STREQ(default_device_name(nullptr, true), "ucx");
        EXPECT_STREQ(default_device_name(&unplaced, true), "ucx");
        EXPECT_STREQ(default_device_name(nullptr, false), "loopback") << "no ucx device built";
        EXPECT_STREQ(default_device_name(&placed, true), "loopback")
            << "nodes placed by the caller";
        {
            ScopedEnv by_variable({{"TCA_NODE_ID", "0"}});
            EXPECT_STREQ(default_device_name(nullptr, true), "loopback")
                << "nodes placed by TCA_NODE_ID";
        }
        ScopedEnv no_pmix({{"PMIX_NAMESPACE", unset}});
        EXPECT_STREQ(default_device_name(nullptr, true), "loopback")
            << "no PMIx: the ucx device could not start";
    }
    {
        ScopedEnv hydra({{"PMI_SIZE", "8"}, {"MPI_LOCALNRANKS", "4"}});
        EXPECT_STREQ(default_device_name(nullptr, true), "ucx");
    }
    {
        ScopedEnv slurm({{"SLURM_LOCALID", "0"}, {"SLURM_STEP_NUM_NODES", "2"}});
        EXPECT_STREQ(default_device_name(nullptr, true), "ucx");
    }
    {
        ScopedEnv slurm_one({{"SLURM_LOCALID", "0"}, {"SLURM_STEP_NUM_NODES", "1"}});
        EXPECT_STREQ(default_device_name(nullptr, true), "loopback");
    }
    {
        ScopedEnv garbled({{"OMPI_COMM_WORLD_SIZE", "4x"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
        EXPECT_STREQ(default_device_name(nullptr, true), "loopback")
            << "a count that is not a number";
    }
}

// What a client that places processes asks before the device starts
// (tcaQueryBackendChoice; the TCA session): the name TCA_DEVICE gives, or the
// default, and whether its nodes may span hosts; a name of no device is
// refused with a detail, and nothing starts.
TEST(DeviceChoice, TheChoiceIsQueriedBeforeAnythingStarts) {
    const char *unset = nullptr;
    ScopedEnv clean({{"TCA_DEVICE", unset}, {"TCA_NODE_ID", unset}, {"TCA_NUM_NODES", unset}});
    const tcaInitParams placed{nullptr, 0, 1};
    char name[32];
    int spans = -1;
    ASSERT_EQ(tcaQueryBackendChoice(&placed, name, sizeof name, &spans), tcaSuccess);
    EXPECT_STREQ(name, "loopback");
    EXPECT_EQ(spans, 0);
    {
        ScopedEnv ucx({{"TCA_DEVICE", "ucx"}});
        ASSERT_EQ(tcaQueryBackendChoice(&placed, name, sizeof name, &spans), tcaSuccess);
        EXPECT_STREQ(name, "ucx");
        EXPECT_EQ(spans, 1);
        char tiny[3];
        EXPECT_EQ(tcaQueryBackendChoice(&placed, tiny, sizeof tiny, &spans), tcaErrorInvalidValue)
            << "no room";
    }
    {
        ScopedEnv bogus({{"TCA_DEVICE", "peach3"}});
        EXPECT_EQ(tcaQueryBackendChoice(&placed, name, sizeof name, &spans), tcaErrorInvalidValue);
        char detail[256];
        ASSERT_EQ(tcaGetErrorDetail(detail, sizeof detail), tcaSuccess);
        EXPECT_NE(std::string(detail).find("TCA_DEVICE='peach3'"), std::string::npos) << detail;
    }
    tcaBackendAttr attr;
    EXPECT_EQ(tcaQueryBackend(&attr), tcaErrorNotInitialized) << "nothing started";
}

}  // namespace
}  // namespace tca
