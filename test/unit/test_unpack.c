/*
 * test_unpack.c - every nbits against hand-packed bytes, including spectra
 * that straddle bytes, signed data and IF selection.
 */
#include "internal.h"
#include "check.h"

#include <string.h>

static void header(ddtk_header *h, int nchans, int nbits, int nifs)
{
    ddtk_header_init(h);
    h->nchans = nchans;
    h->nbits = nbits;
    h->nifs = nifs;
}

/* Unpack n spectra with identity row mapping and compare to expected[t][c]. */
static void expect(const ddtk_header *h, const uint8_t *raw, int n, int pol, const float *want)
{
    int row[16];
    float out[16 * 8];
    for (int c = 0; c < h->nchans; c++)
        row[c] = c;
    memset(out, 0xff, sizeof out);
    ddtk_unpack(h, raw, n, row, pol, out, 8);
    for (int c = 0; c < h->nchans; c++)
        for (int t = 0; t < n; t++)
            CHECK_NEAR(out[c * 8 + t], want[t * h->nchans + c], 0);
}

static void test_four_bit_straddling(void)
{
    /* nchans 3: elements 1..6 low nibble first; spectrum 1 starts mid-byte. */
    const uint8_t raw[] = { 0x21, 0x43, 0x65 };
    const float want[] = { 1, 2, 3, 4, 5, 6 };
    ddtk_header h;
    header(&h, 3, 4, 1);
    expect(&h, raw, 2, 0, want);
}

static void test_two_bit(void)
{
    /* nchans 3, 4 spectra = 12 elements: 0,1,2,3, 3,2,1,0, 1,1,2,2 */
    const uint8_t raw[] = { 0 | 1 << 2 | 2 << 4 | 3 << 6, 3 | 2 << 2 | 1 << 4 | 0 << 6,
                            1 | 1 << 2 | 2 << 4 | 2 << 6 };
    const float want[] = { 0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 2, 2 };
    ddtk_header h;
    header(&h, 3, 2, 1);
    expect(&h, raw, 4, 0, want);
}

static void test_one_bit(void)
{
    /* nchans 5, 3 spectra: bits 10110 01101 11000 (+1 pad), LSB first. */
    const int bits[15] = { 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0 };
    uint8_t raw[2] = { 0, 0 };
    float want[15];
    for (int e = 0; e < 15; e++) {
        raw[e / 8] |= (uint8_t)(bits[e] << (e % 8));
        want[e] = (float)bits[e];
    }
    ddtk_header h;
    header(&h, 5, 1, 1);
    expect(&h, raw, 3, 0, want);
}

static void test_eight_and_sixteen_bit(void)
{
    const uint8_t raw8[] = { 0, 127, 128, 255 };
    const float u8[] = { 0, 127, 128, 255 }, s8[] = { 0, 127, -128, -1 };
    ddtk_header h;
    header(&h, 2, 8, 1);
    expect(&h, raw8, 2, 0, u8);
    h.signed_data = 1;
    expect(&h, raw8, 2, 0, s8);

    const uint16_t raw16[] = { 1, 40000, 65535, 300 };
    const float u16[] = { 1, 40000, 65535, 300 }, s16[] = { 1, -25536, -1, 300 };
    header(&h, 2, 16, 1);
    expect(&h, (const uint8_t *)raw16, 2, 0, u16);
    h.signed_data = 1;
    expect(&h, (const uint8_t *)raw16, 2, 0, s16);
}

static void test_float_and_ifs(void)
{
    /* nchans 2, nifs 2: spectrum = IF0 c0, IF0 c1, IF1 c0, IF1 c1. */
    const float raw[] = { 1.5f, -2.0f, 10.0f, 20.0f, 3.0f, 4.0f, 0.25f, 0.5f };
    const float sum[] = { 11.5f, 18.0f, 3.25f, 4.5f }, if1[] = { 10, 20, 0.25f, 0.5f };
    ddtk_header h;
    header(&h, 2, 32, 2);
    expect(&h, (const uint8_t *)raw, 2, DDTK_POL_SUM, sum);
    expect(&h, (const uint8_t *)raw, 2, 1, if1);
    int pol;
    CHECK(ddtk_resolve_pol(&h, DDTK_POL_DEFAULT, "x", &pol) == DDTK_OK && pol == DDTK_POL_SUM);
    h.nifs = 3;
    CHECK(ddtk_resolve_pol(&h, DDTK_POL_DEFAULT, "x", &pol) == DDTK_EUSAGE);
    CHECK(ddtk_resolve_pol(&h, 5, "x", &pol) == DDTK_EUSAGE);
}

static void test_killed_rows_skipped(void)
{
    const uint8_t raw[] = { 1, 2, 3, 4, 5, 6 };
    int row[3] = { 1, -1, 0 };
    float out[2 * 4] = { -1, -1, -1, -1, -1, -1, -1, -1 };
    ddtk_header h;
    header(&h, 3, 8, 1);
    ddtk_unpack(&h, raw, 2, row, 0, out, 4);
    CHECK(out[0] == 3 && out[1] == 6 && out[4] == 1 && out[5] == 4);
}

int main(void)
{
    test_four_bit_straddling();
    test_two_bit();
    test_one_bit();
    test_eight_and_sixteen_bit();
    test_float_and_ifs();
    test_killed_rows_skipped();
    return check_result();
}
