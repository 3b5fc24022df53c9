// units_test.cpp - the one size parser (tca_units.h) that every size-like
// environment variable and MCA value goes through.
#include <gtest/gtest.h>

#include <cstdint>

#include "tca_units.h"

namespace {

struct Case {
    const char *text;
    int units;
    tca_parse_status status;
    uint64_t value;
};

TEST(Units, Table) {
    const Case cases[] = {
        {"0", 1, TCA_PARSE_OK, 0},
        {"4096", 1, TCA_PARSE_OK, 4096},
        {"64k", 1, TCA_PARSE_OK, 64 << 10},
        {"64K", 1, TCA_PARSE_OK, 64 << 10},
        {"64kB", 1, TCA_PARSE_OK, 64 << 10},
        {"10M", 1, TCA_PARSE_OK, 10ull << 20},
        {"10G", 1, TCA_PARSE_OK, 10ull << 30},
        {"1g", 1, TCA_PARSE_OK, 1ull << 30},
        {"2T", 1, TCA_PARSE_OK, 2ull << 40},
        {"512b", 1, TCA_PARSE_OK, 512},
        {" 12 ", 1, TCA_PARSE_OK, 12},
        {"18446744073709551615", 1, TCA_PARSE_OK, UINT64_MAX},
        {"18446744073709551616", 1, TCA_PARSE_OVERFLOW, 0},
        {"16777216T", 1, TCA_PARSE_OVERFLOW, 0},  // 2^24 * 2^40
        {"16777215T", 1, TCA_PARSE_OK, 16777215ull << 40},
        {"-1", 1, TCA_PARSE_NEGATIVE, 0},
        {" -0", 1, TCA_PARSE_NEGATIVE, 0},
        {"+5", 1, TCA_PARSE_NOT_NUMBER, 0},
        {"abc", 1, TCA_PARSE_NOT_NUMBER, 0},
        {"", 1, TCA_PARSE_EMPTY, 0},
        {"   ", 1, TCA_PARSE_EMPTY, 0},
        {nullptr, 1, TCA_PARSE_EMPTY, 0},
        {"12abc", 1, TCA_PARSE_JUNK, 0},
        {"0x10", 1, TCA_PARSE_JUNK, 0},
        {"1.5G", 1, TCA_PARSE_JUNK, 0},
        {"1e3", 1, TCA_PARSE_JUNK, 0},
        {"10 G", 1, TCA_PARSE_JUNK, 0},
        {"10GG", 1, TCA_PARSE_JUNK, 0},
        {"64k", 0, TCA_PARSE_JUNK, 0},  // counts take no units
        {"300", 0, TCA_PARSE_OK, 300},
    };
    for (const Case &c : cases) {
        uint64_t v = 12345;
        EXPECT_EQ(tca_parse_size(c.text, c.units, &v), c.status) << (c.text ? c.text : "(null)");
        if (c.status == TCA_PARSE_OK)
            EXPECT_EQ(v, c.value) << c.text;
        else
            EXPECT_EQ(v, 12345u) << "output written on failure: " << (c.text ? c.text : "(null)");
        EXPECT_STRNE(tca_parse_status_string(c.status), "");
    }
}

}  // namespace
