// settings_catalog.hpp - every setting that changes what libtca does, with its
// TCA_* variable, the name another configuration system gives it (Open MPI
// registers "opal_common_tca_<name>" and synonyms under btl tca and coll tca),
// its default as text and what it means.  The one list: the readers
// (env_settings.cpp, device_select.cpp, the ucx device), tca_info, the MCA
// registration and the test that ompi_info shows every one all start here.
#pragma once

#include <span>
#include <string>

namespace tca {

struct Setting {
    std::string variable;       // TCA_SPIN_NS
    std::string name;           // spin_ns
    std::string default_value;  // as text, in the syntax the reader accepts
    std::string help;
    int level;  // Open MPI's info level: 4 the settings a user tunes, 9 the model's
};

std::span<const Setting> settings_catalog();

}  // namespace tca
