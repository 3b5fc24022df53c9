// btl_param_names.cpp - prints the name of every btl tca MCA parameter the
// core tabulates (tca-btl/btl_params.cpp: its own, then the common BTL ones
// it checks), one per line, without "btl_tca_": the list the ompi_info case
// (test/mpi/run_case.sh) checks, taken from the one table, not copied.
#include <cstdio>

#include "btl_params.h"

int main() {
    size_t count = 0;
    const tca_btl_param_t *params = tca_btl_params(&count);
    for (size_t i = 0; i < count; ++i)
        std::printf("%s\n", params[i].name);
    return count > 0 ? 0 : 1;
}
