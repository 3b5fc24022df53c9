// setting_source.hpp - where each of libtca's settings is read from.  A
// value another configuration system hands libtca (Open MPI's MCA parameters,
// through tcaSetSetting) wins over the setting's TCA_* environment variable,
// which wins over the default: one precedence for every setting, so a job
// started with --mca and a TCA program started with TCA_* read the same code.
#pragma once

#include "plugin_api.hpp"

#include <string>

namespace tca {

// A setting's text where one was given, and who gave it.
struct SettingText {
    bool given = false;  // false: nobody set it, the default applies
    std::string text;
    // Named in errors and by tca_info: the variable ("TCA_SPIN_NS"), or what
    // the other system called it ("MCA parameter opal_common_tca_spin_ns").
    std::string given_by;
};

// The text of setting `variable` (its TCA_* name).
TCA_PLUGIN_API SettingText setting_text(const char *variable);

// Records (text non-null) or drops (null) a value given by `given_by`.
void give_setting(const char *variable, const char *text, const char *given_by);

}  // namespace tca
