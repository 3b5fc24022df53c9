// result.hpp - tcaResult helpers shared by the C API and the C++ core.
#pragma once

#include "plugin_api.hpp"

#include <string>

#include "tca.h"

namespace tca {

using Result = tcaResult;

// Human-readable message for a result code (never NULL).
TCA_PLUGIN_API const char *result_message(Result r) noexcept;

// Why this thread's last failure with more to say than its code failed ("" if
// none; tcaGetErrorDetail).  A backend sets it where it prints its "tca:" line.
TCA_PLUGIN_API const std::string &last_error_detail() noexcept;
TCA_PLUGIN_API void set_error_detail(const char *text) noexcept;

}  // namespace tca
