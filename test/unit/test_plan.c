/*
 * test_plan - the DM plans against published numbers: Barsdell's 1196 DMs for
 * the htru set-up, PRESTO DDplan.py's rows for a 1381.8 MHz, 400 MHz, 1024
 * channel, 64 us set-up with 64 sub-bands, scrunch factors, and plan files.
 */
#include "dmplan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { printf("FAIL %s:%d: ", __FILE__, __LINE__); \
    printf(__VA_ARGS__); printf("\n"); failures++; } } while (0)

static void htru_tol_count(void)
{
    ddtk_obs o;
    ddtk_dmlist l = { 0 };
    CHECK(!ddtk_obs_init(&o, 1024, 1581.8, -0.390625, 64e-6, 0, DDTK_KDM_DEFAULT), "obs");
    CHECK(!ddtk_dmlist_tol(&l, 0, 1000, o.tsamp, 40, 1.25, o.fctr, o.chan_bw, o.nchans), "tol");
    CHECK(fabs(l.n - 1196.0) <= 0.02 * 1196, "htru tol list has %d DMs, Barsdell 1196", l.n);
    ddtk_dmlist_free(&l);
}

static void presto_ranges(void)
{
    static const double step[] = { 0.1, 0.2, 0.3, 0.5 }, brk[] = { 202.8, 358.8, 592.8 };
    static const int ds[] = { 1, 2, 4, 8 };
    ddtk_obs o;
    ddtk_dmplan p = { 0 };
    /* -f 1381.8 is the band centre: fch1 = 1381.8 + 511.5 * 0.390625 */
    CHECK(!ddtk_obs_init(&o, 1024, 1381.8 + 511.5 * 0.390625, -0.390625, 64e-6, 0,
                         DDTK_KDM_DEFAULT), "obs");
    CHECK(fabs(o.fctr - 1381.8) < 1e-9 && fabs(o.bw - 400) < 1e-9, "centre/BW");
    CHECK(!ddtk_dmplan_ranges(&p, &o, 0, 1000, 64), "ranges: %s", ddtk_errmsg());
    CHECK(p.n == 4, "DDplan rows: %d, PRESTO 4", p.n);
    for (int i = 0; i < p.n && i < 4; i++) {
        CHECK(fabs(p.row[i].dm_step - step[i]) < 1e-9, "row %d step %g, PRESTO %g", i,
              p.row[i].dm_step, step[i]);
        CHECK(p.row[i].downsamp == ds[i], "row %d downsamp %d, PRESTO %d", i, p.row[i].downsamp, ds[i]);
        if (i < 3)
            CHECK(fabs(p.row[i].dm_hi - brk[i]) <= 0.05 * brk[i], "row %d ends at %g, PRESTO %g",
                  i, p.row[i].dm_hi, brk[i]);
    }
    CHECK(!ddtk_dmplan_validate(&p, "ranges"), "ranges plan invalid: %s", ddtk_errmsg());
    CHECK(p.row[p.n - 1].dm_hi >= 1000, "last row ends at %g < 1000", p.row[p.n - 1].dm_hi);
    ddtk_dmplan_free(&p);
}

static void scrunch_factors(void)
{
    ddtk_obs o;
    ddtk_obs_init(&o, 1024, 1581.8, -0.390625, 64e-6, 0, DDTK_KDM_DEFAULT);
    double d = ddtk_diagonal_dm(&o);
    /* one channel's sweep, 2 K DM bw / f^3, equals one sample at the diagonal */
    double sweep = 2 * DDTK_KDM_DEFAULT * d * o.chan_bw / pow(o.fctr, 3);
    CHECK(fabs(sweep - o.tsamp) < 1e-12, "diagonal %g sweeps %g s", d, sweep);
    CHECK(ddtk_scrunch_factor(&o, 0.99 * d) == 1, "below diagonal");
    CHECK(ddtk_scrunch_factor(&o, 2.01 * d) == 2, "2x diagonal");
    CHECK(ddtk_scrunch_factor(&o, 3.99 * d) == 2, "4x- diagonal");
    CHECK(ddtk_scrunch_factor(&o, 17 * d) == 16, "17x diagonal");
}

static void round_trip(void)
{
    ddtk_obs o;
    ddtk_dmplan p = { 0 }, q = { 0 };
    char path[] = "/tmp/test_plan_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    ddtk_obs_init(&o, 1024, 1581.8, -0.390625, 64e-6, 0, DDTK_KDM_DEFAULT);
    ddtk_dmplan_ranges(&p, &o, 0, 1000, 64);
    CHECK(!ddtk_dmplan_write(&p, path, 1), "write: %s", ddtk_errmsg());
    CHECK(!ddtk_dmplan_read(&q, path), "read: %s", ddtk_errmsg());
    CHECK(p.n == q.n, "rows %d -> %d", p.n, q.n);
    for (int i = 0; i < p.n && i < q.n; i++)
        CHECK(fabs(p.row[i].dm_lo - q.row[i].dm_lo) < 1e-9 && p.row[i].ndm == q.row[i].ndm
              && p.row[i].downsamp == q.row[i].downsamp
              && p.row[i].dms_per_sub == q.row[i].dms_per_sub && q.row[i].dms_per_sub > 0,
              "row %d differs (dms_per_sub %d -> %d)", i, p.row[i].dms_per_sub,
              q.row[i].dms_per_sub);
    CHECK(ddtk_dmplan_write(&p, path, 0) == DDTK_EUSAGE, "overwrote without force");
    unlink(path);
    ddtk_dmplan_free(&p);
    ddtk_dmplan_free(&q);
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
}

/* Plans without sub-bands keep the five columns; a sixth must be dms_per_sub,
 * dividing each row's ndm. */
static void sub_column(void)
{
    ddtk_dmplan p = { 0 };
    char path[] = "/tmp/test_plan_XXXXXX";
    close(mkstemp(path));
    write_text(path, "dm_lo dm_hi dm_step downsamp ndm\n0 10 1 1 10\n");
    CHECK(!ddtk_dmplan_read(&p, path) && p.row[0].dms_per_sub == 0, "5 columns: %s",
          ddtk_errmsg());
    ddtk_dmplan_free(&p);
    write_text(path, "dm_lo dm_hi dm_step downsamp ndm dms_per_sub\n0 10 1 1 10 5\n"
               "10 30 2 2 10 10\n");
    CHECK(!ddtk_dmplan_read(&p, path) && p.n == 2 && p.row[0].dms_per_sub == 5
          && p.row[1].dms_per_sub == 10, "6 columns: %s", ddtk_errmsg());
    ddtk_dmplan_free(&p);
    write_text(path, "dm_lo dm_hi dm_step downsamp ndm dms_per_sub\n0 10 1 1 10 4\n");
    CHECK(ddtk_dmplan_read(&p, path) == DDTK_EDATA && strstr(ddtk_errmsg(), "dms_per_sub 4"),
          "4 not dividing 10: %s", ddtk_errmsg());
    ddtk_dmplan_free(&p);
    write_text(path, "dm_lo dm_hi dm_step downsamp ndm dms_per_sub\n0 10 1 1 10\n");
    CHECK(ddtk_dmplan_read(&p, path) == DDTK_EDATA && strstr(ddtk_errmsg(), "six numbers"),
          "5 numbers under 6 columns: %s", ddtk_errmsg());
    ddtk_dmplan_free(&p);
    write_text(path, "dm_lo dm_hi dm_step downsamp ndm nsub\n0 10 1 1 10 5\n");
    CHECK(ddtk_dmplan_read(&p, path) == DDTK_EDATA && strstr(ddtk_errmsg(), "header row"),
          "unknown sixth column: %s", ddtk_errmsg());
    ddtk_dmplan_free(&p);
    unlink(path);
}

static void validation(void)
{
    ddtk_dmplan p = { 0 };
    ddtk_dmplan_row a = { 0, 10, 1, 1, 10, 0 }, gap = { 11, 21, 1, 2, 10, 0 };
    ddtk_dmplan_row over = { 9, 19, 1, 2, 10, 0 }, bad_ds = { 10, 20, 1, 3, 10, 0 };
    ddtk_dmplan_push(&p, &a);
    ddtk_dmplan_push(&p, &gap);
    CHECK(ddtk_dmplan_validate(&p, "x") == DDTK_EDATA && strstr(ddtk_errmsg(), "gap"), "gap: %s",
          ddtk_errmsg());
    p.row[1] = over;
    CHECK(ddtk_dmplan_validate(&p, "x") == DDTK_EDATA && strstr(ddtk_errmsg(), "overlap"),
          "overlap: %s", ddtk_errmsg());
    p.row[1] = bad_ds;
    CHECK(ddtk_dmplan_validate(&p, "x") == DDTK_EDATA, "downsamp 3 accepted");
    p.row[1].downsamp = 2;
    p.row[1].dm_hi = 25;
    CHECK(ddtk_dmplan_validate(&p, "x") == DDTK_EDATA, "dm_hi != lo + n*step accepted");
    p.row[1].dm_hi = 20;
    CHECK(!ddtk_dmplan_validate(&p, "x"), "good plan rejected: %s", ddtk_errmsg());
    /* 3e9 DMs in two rows: counted without int overflow, and refused */
    p.row[0] = (ddtk_dmplan_row){ 0, 1.5e9, 1, 1, 1500000000, 0 };
    p.row[1] = (ddtk_dmplan_row){ 1.5e9, 3e9, 1, 1, 1500000000, 0 };
    CHECK(ddtk_dmplan_validate(&p, "x") == DDTK_EDATA && strstr(ddtk_errmsg(), "10^7"),
          "3e9 DMs: %s", ddtk_errmsg());
    ddtk_dmplan_free(&p);
}

/* A plan row longer than any line buffer is one row, not several pieces. */
static void long_line(void)
{
    ddtk_dmplan q = { 0 };
    char path[] = "/tmp/test_plan_XXXXXX";
    FILE *fp = fdopen(mkstemp(path), "w");
    fprintf(fp, "dm_lo dm_hi dm_step downsamp ndm\n0.%0900d\t10\t1\t1\t10\n", 0);
    fclose(fp);
    CHECK(!ddtk_dmplan_read(&q, path), "long row: %s", ddtk_errmsg());
    CHECK(q.n == 1 && q.row[0].ndm == 10, "long row read as %d rows", q.n);
    unlink(path);
    ddtk_dmplan_free(&q);
}

static void cost_model(void)
{
    ddtk_obs o;
    ddtk_dmplan p = { 0 };
    double direct, subband, tree, out, bad;
    ddtk_dmplan_row r = { 0, 100, 1, 1, 100, 0 }, s = { 100, 200, 1, 4, 100, 0 };
    ddtk_obs_init(&o, 1024, 1581.8, -0.390625, 64e-6, 0, DDTK_KDM_DEFAULT);
    ddtk_dmplan_push(&p, &r);
    ddtk_dmplan_push(&p, &s);
    CHECK(!ddtk_model_adds("direct", &o, &p, 1000, 32, &direct)
          && !ddtk_model_adds("subband", &o, &p, 1000, 32, &subband)
          && !ddtk_model_adds("tree", &o, &p, 1000, 32, &tree), "%s", ddtk_errmsg());
    out = ddtk_dmplan_out_bytes(&p, 1000);
    CHECK(fabs(direct - 1024.0 * (100 * 1000 + 100 * 250)) < 1, "direct adds %g", direct);
    CHECK(fabs(out - 4.0 * (100 * 1000 + 100 * 250)) < 1, "output bytes %g", out);
    CHECK(subband < direct && tree < direct, "sub-band %g, tree %g", subband, tree);
    /* Sub-band: 32 channels per sub-band and as many DMs per nominal DM:
     * 100/32 rounded up nominal DMs of 1024 channels, then 32 sub-bands per DM. */
    CHECK(fabs(subband - (4.0 * 1024 + 100 * 32) * (1000 + 250)) < 1, "sub-band adds %g",
          subband);
    CHECK(ddtk_model_adds("fast", &o, &p, 1000, 32, &bad) == DDTK_EUSAGE, "unknown algorithm");
    /* Smearing: the direct terms alone for direct, more for the others. */
    ddtk_smear sm;
    double td, ts, tt;
    ddtk_smear_row(&o, &s, 40e-6, &sm);
    CHECK(!ddtk_model_smear("direct", &o, &s, &sm, 32, &td) && td == sm.direct, "direct %g", td);
    CHECK(!ddtk_model_smear("subband", &o, &s, &sm, 32, &ts) && ts > td, "sub-band %g", ts);
    CHECK(!ddtk_model_smear("tree", &o, &s, &sm, 32, &tt) && tt > td, "tree %g", tt);
    ddtk_dmplan_free(&p);
}

int main(void)
{
    htru_tol_count();
    presto_ranges();
    scrunch_factors();
    round_trip();
    sub_column();
    validation();
    cost_model();
    long_line();
    if (failures)
        printf("%d failures\n", failures);
    return failures != 0;
}
