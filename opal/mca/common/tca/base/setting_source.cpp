// setting_source.cpp - see setting_source.hpp.
#include "base/setting_source.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

namespace tca {

namespace {
struct Given {
    std::string text, given_by;
};

// Written while a component registers, read by tcaInit on any thread: a
// lock, never setenv (which races the getenv of other threads).
std::mutex &given_lock() {
    static std::mutex m;
    return m;
}
std::map<std::string, Given> &given_settings() {
    static std::map<std::string, Given> g;
    return g;
}
}  // namespace

SettingText setting_text(const char *variable) {
    {
        std::lock_guard<std::mutex> hold(given_lock());
        const auto &g = given_settings();
        if (const auto it = g.find(variable); it != g.end())
            return {true, it->second.text, it->second.given_by};
    }
    if (const char *v = std::getenv(variable); v != nullptr)
        return {true, v, variable};
    return {false, {}, {}};
}

void give_setting(const char *variable, const char *text, const char *given_by) {
    std::lock_guard<std::mutex> hold(given_lock());
    if (text == nullptr)
        given_settings().erase(variable);
    else
        given_settings()[variable] = {text, given_by};
}

}  // namespace tca
