// result.hpp - tcaResult helpers shared by the C API and the C++ core.
#pragma once

#include "tca.h"

namespace tca {

using Result = tcaResult;

// Human-readable message for a result code (never NULL).
const char *result_message(Result r) noexcept;

}  // namespace tca
