/*
 * test_delays.c - channel ordering, delay tables (both roundings, both band
 * orders), DM lists and killfiles against hand-computed values.
 */
#include "internal.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void band(ddtk_header *h, double fch1, double foff, int nchans)
{
    ddtk_header_init(h);
    h->fch1 = fch1;
    h->foff = foff;
    h->nchans = nchans;
    h->nbits = 8;
    h->tsamp = 1e-3;
}

static void test_delay_values(void)
{
    /* 4 channels 1400, 1300, 1200, 1100 MHz; fref 1400; DM 100; tsamp 1 ms.
     * K*DM*(f^-2 - 1400^-2)/tsamp: 1300 -> 33.82, 1200 -> 76.4, 1100 -> 131.2 */
    const double k = 4148.741601;
    ddtk_header h;
    ddtk_channels ch;
    ddtk_delays d;
    const double dms[2] = { 100.0, 0.0 };
    band(&h, 1400, -100, 4);
    CHECK(ddtk_channels_init(&ch, &h, NULL, 0) == DDTK_OK);
    CHECK(ch.fref == 1400 && ch.nlive == 4 && ch.row[0] == 0 && ch.row[3] == 3);
    CHECK(ddtk_delays_init(&d, &ch, 1e-3, dms, 2, k, DDTK_ROUND_NEAREST) == DDTK_OK);
    double exact1300 = k * 100 * (1 / 1300.0 / 1300 - 1 / 1400.0 / 1400) / 1e-3;
    CHECK_NEAR(exact1300, 33.8172, 1e-3);
    CHECK(d.delay[0] == 0 && d.delay[1] == 34 && d.delay[2] == 76 && d.delay[3] == 131);
    CHECK(d.delay[4] == 0 && d.delay[7] == 0 && d.maxdelay == 131);
    ddtk_delays_free(&d);
    CHECK(ddtk_delays_init(&d, &ch, 1e-3, dms, 2, k, DDTK_ROUND_FLOOR) == DDTK_OK);
    CHECK(d.delay[1] == 33 && d.delay[2] == 76 && d.delay[3] == 131);
    ddtk_delays_free(&d);
    ddtk_channels_free(&ch);

    /* The same band ascending: rows are still descending in frequency. */
    band(&h, 1100, 100, 4);
    CHECK(ddtk_channels_init(&ch, &h, NULL, 0) == DDTK_OK);
    CHECK(ch.fref == 1400 && ch.row[0] == 3 && ch.row[3] == 0 && ch.freq[0] == 1400);
    CHECK(ddtk_delays_init(&d, &ch, 1e-3, dms, 1, k, DDTK_ROUND_NEAREST) == DDTK_OK);
    CHECK(d.delay[1] == 34 && d.delay[3] == 131);
    ddtk_delays_free(&d);
    ddtk_channels_free(&ch);

    /* A reference frequency below the top channel is refused. */
    band(&h, 1400, -100, 4);
    CHECK(ddtk_channels_init(&ch, &h, NULL, 1350) == DDTK_EUSAGE);
}

static void test_rounding(void)
{
    CHECK(ddtk_round_delay(2.5, DDTK_ROUND_NEAREST) == 3);
    CHECK(ddtk_round_delay(2.4999, DDTK_ROUND_NEAREST) == 2);
    CHECK(ddtk_round_delay(-2.5, DDTK_ROUND_NEAREST) == -3);
    CHECK(ddtk_round_delay(2.9, DDTK_ROUND_FLOOR) == 2);
}

static void test_killed_channels(void)
{
    ddtk_header h;
    ddtk_channels ch;
    uint8_t kill[4] = { 0, 1, 0, 0 };
    band(&h, 1100, 100, 4);
    CHECK(ddtk_channels_init(&ch, &h, kill, 0) == DDTK_OK);
    CHECK(ch.nlive == 3 && ch.row[1] == -1 && ch.row[3] == 0 && ch.row[2] == 1 && ch.row[0] == 2);
    ddtk_channels_free(&ch);
}

static void test_dm_lists(void)
{
    ddtk_dmlist l = { 0 };
    CHECK(ddtk_dmlist_range(&l, 0, 1, 0.25) == DDTK_OK && l.n == 5 && l.dm[4] == 1.0);
    ddtk_dmlist_free(&l);
    CHECK(ddtk_dmlist_range(&l, 0, 0.3, 0.1) == DDTK_OK && l.n == 4);
    ddtk_dmlist_free(&l);
    CHECK(ddtk_dmlist_parse(&l, "56.7,10,0") == DDTK_OK && l.n == 3 && l.dm[0] == 56.7);
    ddtk_dmlist_free(&l);
    CHECK(ddtk_dmlist_parse(&l, "5,,6") == DDTK_EUSAGE);
    ddtk_dmlist_free(&l);
    CHECK(ddtk_dmlist_parse(&l, "-1") == DDTK_EUSAGE);
    ddtk_dmlist_free(&l);
    /* Barsdell et al. 2012 quote 1196 DMs for 0 <= DM < 1000 with the HTRU setup. */
    CHECK(ddtk_dmlist_tol(&l, 0, 1000, 64e-6, 40, 1.25, 1581.8 - 511.5 * 0.390625,
                          0.390625, 1024) == DDTK_OK);
    CHECK(l.n == 1196);
    for (int i = 1; i < l.n; i++)
        CHECK(l.dm[i] > l.dm[i - 1]);
    CHECK(l.dm[l.n - 1] <= 1000);
    ddtk_dmlist_free(&l);
    CHECK(ddtk_dmlist_tol(&l, 0, 100, 64e-6, 40, 1.0, 1400, 0.39, 1024) == DDTK_EUSAGE);
    ddtk_dmlist_free(&l);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
}

static void test_killfiles(void)
{
    char path[] = "/tmp/ddtk-kill-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    uint8_t *kill;
    int n;
    write_file(path, "0:2, 5\n# comment\n7\n");
    CHECK(ddtk_killfile_read(path, 8, &kill, &n) == DDTK_OK && n == 5);
    CHECK(kill[0] && kill[1] && kill[2] && !kill[3] && !kill[4] && kill[5] && !kill[6] && kill[7]);
    free(kill);
    write_file(path, "1\n0\n1\n1\n");
    CHECK(ddtk_killfile_read(path, 4, &kill, &n) == DDTK_OK && n == 1 && kill[1] && !kill[0]);
    free(kill);
    CHECK(ddtk_killfile_read(path, 5, &kill, &n) == DDTK_EDATA);
    write_file(path, "0:9");
    CHECK(ddtk_killfile_read(path, 8, &kill, &n) == DDTK_EDATA);
    write_file(path, "3:x");
    CHECK(ddtk_killfile_read(path, 8, &kill, &n) == DDTK_EDATA);
    unlink(path);
}

int main(void)
{
    test_delay_values();
    test_rounding();
    test_killed_channels();
    test_dm_lists();
    test_killfiles();
    return check_result();
}
