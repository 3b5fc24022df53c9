// plugin_api.hpp - TCA_PLUGIN_API marks the internal C++ pieces libtca.so
// exports to the device plugins it loads (tca_ucx.so): the model, the
// settings, the pieces both backends build on.  A plugin links libtca.so
// instead of carrying a copy of them, so what it sets (the error detail of
// tcaGetErrorDetail, thread-local) is libtca's own.  Not an API for
// programs: a plugin is installed beside the libtca it was built with.
#pragma once

#define TCA_PLUGIN_API [[gnu::visibility("default")]]
