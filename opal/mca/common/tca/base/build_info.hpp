// build_info.hpp - whether the translation unit that includes this was
// compiled with optimization.  Every library of the TCA transport reports it
// (tcaBackendAttr::optimized, tca_info, btl_tca_build_optimized and
// coll_tca_build_optimized in ompi_info): a C++ core built without -O runs
// its message path several times slower, and nothing else would show it
// (Open MPI's configure gives its C flags an -O but not its C++ flags).
#pragma once

namespace tca {

#ifdef __OPTIMIZE__
inline constexpr bool kBuiltOptimized = true;
#else
inline constexpr bool kBuiltOptimized = false;
#endif

}  // namespace tca
