/*
 * test_inf.c - the shared PRESTO helpers of inf.c: suffix tests, the .inf name
 * beside a .dat, and a .dat opened as a one-channel float32 input (sample time
 * from its .inf, length from its size; a bad .inf is bad data, a missing .dat
 * a system error as for any input that cannot be opened).
 */
#include "inf.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check_path(const char *dat, const char *want)
{
    char *got = ddtk_inf_path(dat);
    CHECK(got && strcmp(got, want) == 0);
    free(got);
}

static void test_names(void)
{
    CHECK(ddtk_ends_with("a/b_DM1.00.dat", ".dat"));
    CHECK(!ddtk_ends_with("a.dat.tim", ".dat"));
    CHECK(!ddtk_ends_with("at", ".dat"));
    check_path("dir/s_DM10.00.dat", "dir/s_DM10.00.inf");
    check_path("series.tim", "series.tim.inf");
    check_path(".dat", ".dat.inf");
}

static void write_pair(const char *dir, const char *tsamp, int nfloats)
{
    char path[512];
    snprintf(path, sizeof path, "%s/s.inf", dir);
    FILE *fp = fopen(path, "w");
    fprintf(fp, " Epoch of observation (MJD)             =  60000.5\n"
                " Number of bins in the time series      =  %d\n"
                " Width of each time series bin (sec)    =  %s\n"
                " Dispersion measure (cm-3 pc)           =  12.5\n", nfloats, tsamp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/s.dat", dir);
    fp = fopen(path, "wb");
    for (int i = 0; i < nfloats; i++) {
        float x = (float)i;
        fwrite(&x, sizeof x, 1, fp);
    }
    fclose(fp);
}

static void test_dat_open(const char *dir)
{
    char dat[512];
    ddtk_input in;
    ddtk_inf inf;
    char *text = NULL;
    snprintf(dat, sizeof dat, "%s/s.dat", dir);
    write_pair(dir, "0.000256", 10);
    CHECK(ddtk_dat_open(&in, dat, &inf, &text) == DDTK_OK);
    CHECK(in.hdr.nchans == 1 && in.hdr.nifs == 1 && in.hdr.nbits == 32);
    CHECK_NEAR(in.hdr.tsamp, 0.000256, 0);
    CHECK(in.nsamples == 10 && inf.nsamples == 10);
    CHECK_NEAR(inf.dm, 12.5, 0);
    CHECK(text && strstr(text, "Dispersion measure"));
    float x[10];
    int64_t got = 0;
    CHECK(ddtk_input_read(&in, (uint8_t *)x, 10, &got) == DDTK_OK && got == 10 && x[9] == 9.0f);
    ddtk_input_close(&in);
    free(text);

    write_pair(dir, "0", 10);
    CHECK(ddtk_dat_open(&in, dat, &inf, NULL) == DDTK_EDATA);
    ddtk_input_close(&in);

    write_pair(dir, "0.001", 10);
    unlink(dat);
    CHECK(ddtk_dat_open(&in, dat, &inf, NULL) == DDTK_ESYS);
    ddtk_input_close(&in);
}

int main(void)
{
    char dir[] = "/tmp/ddtk_test_inf_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_names();
    test_dat_open(dir);
    char inf[512];
    snprintf(inf, sizeof inf, "%s/s.inf", dir);
    unlink(inf);
    rmdir(dir);
    return check_result();
}
