/* ucx_error_detail.c - tcaInit on the ucx device fails where it cannot start,
 * and tcaGetErrorDetail says why: the detail is set inside the plugin
 * (tca_ucx.so), which shares libtca's rather than keeping a copy of its own.
 * Usage: tca_ucx_error_detail EXPECTED - the detail must contain EXPECTED. */
#include <stdio.h>
#include <string.h>

#include "tca.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s EXPECTED\n", argv[0]);
        return 2;
    }
    if (tcaInit() == tcaSuccess) {
        printf("FAIL: tcaInit succeeded\n");
        tcaFinalize();
        return 1;
    }
    char detail[512];
    if (tcaGetErrorDetail(detail, sizeof detail) != tcaSuccess || strstr(detail, argv[1]) == NULL) {
        printf("FAIL: the error detail is '%s', not one naming '%s'\n", detail, argv[1]);
        return 1;
    }
    printf("ucx_error_detail: PASSED (%s)\n", detail);
    return 0;
}
