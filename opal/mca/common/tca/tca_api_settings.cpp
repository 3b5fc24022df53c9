// tca_api_settings.cpp - the C API of libtca's settings (tca.h, "settings"):
// the catalog (base/settings_catalog.hpp) and where each value comes from
// (base/setting_source.hpp), for tca_info and for Open MPI's MCA parameters.
#include <algorithm>
#include <cstring>
#include <string>

#include "api_guard.hpp"
#include "base/setting_source.hpp"
#include "base/settings_catalog.hpp"
#include "tca.h"

namespace {
const tca::Setting *find_setting(const char *variable) {
    if (variable == nullptr)
        return nullptr;
    for (const tca::Setting &s : tca::settings_catalog())
        if (s.variable == variable)
            return &s;
    return nullptr;
}

void copy_out(const std::string &text, char *buf, size_t len) {
    if (buf == nullptr || len == 0)
        return;
    const size_t n = std::min(text.size(), len - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
}
}  // namespace

tcaResult tcaGetSettingInfo(int index, tcaSettingInfo *info) {
    return tca::guarded([&] {
        const auto catalog = tca::settings_catalog();
        if (info == nullptr || index < 0 || static_cast<size_t>(index) >= catalog.size())
            return tcaErrorInvalidValue;
        const tca::Setting &s = catalog[static_cast<size_t>(index)];
        *info = {s.variable.c_str(), s.name.c_str(), s.default_value.c_str(), s.help.c_str(),
                 s.level};
        return tcaSuccess;
    });
}

tcaResult tcaSetSetting(const char *variable, const char *value, const char *given_by) {
    return tca::guarded([&] {
        const tca::Setting *s = find_setting(variable);
        if (s == nullptr)
            return tcaErrorInvalidValue;
        tca::give_setting(s->variable.c_str(), value,
                          given_by != nullptr ? given_by : s->variable.c_str());
        return tcaSuccess;
    });
}

tcaResult tcaGetSetting(const char *variable, char *value, size_t value_len, char *given_by,
                        size_t given_by_len) {
    return tca::guarded([&] {
        const tca::Setting *s = find_setting(variable);
        if (s == nullptr)
            return tcaErrorInvalidValue;
        const tca::SettingText t = tca::setting_text(variable);
        copy_out(t.given ? t.text : s->default_value, value, value_len);
        copy_out(t.given ? t.given_by : std::string("default"), given_by, given_by_len);
        return tcaSuccess;
    });
}
