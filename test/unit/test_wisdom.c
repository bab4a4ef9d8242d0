/*
 * test_wisdom.c - the wisdom file and the CPU tuner: entries stored and found
 * by key (and not by another set-up's), damaged and foreign files ignored
 * and replaced whole, every CPU tile choice giving the default's bytes, a
 * tuning run whose configuration is kept and changes no output, and the
 * tuning of every algorithm: its tunable parameters stored and read back
 * byte for byte, the kept configuration the fastest of its table, and a plan
 * from the wisdom equal to one from the same parameters set by hand.
 */
#include "engine.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCHANS 48
#define NSAMP 3000

static double freqs[NCHANS];
static const double dms[] = { 0, 5, 20, 41, 60 };

static void desc_of(ddtk_plan_desc *d, int nchans)
{
    ddtk_plan_desc_init(d);
    for (int c = 0; c < NCHANS; c++)
        freqs[c] = 1500.0 - 2.0 * c;
    d->nchans = nchans;
    d->tsamp = 0.000256;
    d->freqs = freqs;
    d->nbits = 32;
    d->dms = dms;
    d->ndm = 5;
    d->backend = DDTK_BACKEND_CPU;
    d->quiet = 1;
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
}

static char *read_text(const char *path)
{
    char *s = NULL;
    size_t n = 0;
    FILE *fp = fopen(path, "r");
    if (fp) {
        n = fread(s = calloc(1, 1 << 16), 1, (1 << 16) - 1, fp);
        fclose(fp);
    }
    (void)n;
    return s;
}

static void round_trip(const char *path)
{
    ddtk_plan_desc d, other;
    char key[1024];
    int found = -1;
    desc_of(&d, NCHANS);
    CHECK(ddtk_wisdom_key(&d, key, sizeof key) == DDTK_OK);
    CHECK(strstr(key, "direct nchans 48 nbits 32 ndm 8") != NULL);
    CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 0);   /* no file yet */
    CHECK(ddtk_wisdom_store(path, key, "cpu tile 512 dms 8 chans 16", 1e9) == DDTK_OK);
    CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 1);
    CHECK(d.cpu.time_tile == 512 && d.cpu.dm_block == 8 && d.cpu.chan_block == 16);
    /* another set-up (nchans 40) finds nothing, and a second store keeps the first */
    desc_of(&other, 40);
    CHECK(ddtk_wisdom_apply(&other, path, &found) == DDTK_OK && found == 0);
    CHECK(other.cpu.time_tile == 0);
    CHECK(ddtk_wisdom_key(&other, key, sizeof key) == DDTK_OK);
    CHECK(ddtk_wisdom_store(path, key, "cpu tile 2048 dms 32 chans 64", 2e9) == DDTK_OK);
    CHECK(ddtk_wisdom_apply(&other, path, &found) == DDTK_OK && found == 1);
    CHECK(other.cpu.time_tile == 2048);
    desc_of(&d, NCHANS);
    CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 1 && d.cpu.time_tile == 512);
}

static void damaged(const char *path)
{
    ddtk_plan_desc d;
    char key[1024];
    int found = -1;
    const char *bad[] = { "", "some other program's cache\n",
                          "# ddtk wisdom 4\nkey without tabs\n",
                          "# ddtk wisdom 4\nk\tcpu tile x dms 8 chans 16\t1e9\n",
                          "# ddtk wisdom 4\nk\tcpu tile 512 dms 8 chans 16\t-3\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i]);
        desc_of(&d, NCHANS);
        CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 0);
        CHECK(d.cpu.time_tile == 0);
    }
    /* a store replaces a damaged file with a whole, valid one */
    CHECK(ddtk_wisdom_key(&d, key, sizeof key) == DDTK_OK);
    CHECK(ddtk_wisdom_store(path, key, "cpu tile 256 dms 16 chans 32", 5e8) == DDTK_OK);
    char *text = read_text(path);
    CHECK(text && strncmp(text, "# ddtk wisdom 4\n", 16) == 0 && !strstr(text, "tile 512"));
    free(text);
    CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 1 && d.cpu.time_tile == 256);
}

static float *run(const ddtk_plan_desc *d, const float *in)
{
    ddtk_plan *p;
    float *out = calloc((size_t)5 * NSAMP, sizeof *out);
    CHECK(ddtk_plan_create(&p, d) == DDTK_OK);
    CHECK(ddtk_plan_execute(p, NSAMP, in, 32, out, NSAMP, 32) == DDTK_OK);
    ddtk_plan_destroy(p);
    return out;
}

/* Float sums are order-sensitive: every tile choice must keep the order. */
static void every_tile_choice(const float *in)
{
    static const int tiles[] = { 1, 7, 256, 1024, 4096 }, dmb[] = { 1, 2, 5, 64 },
                     chb[] = { 4, 8, 20, 48, 512 };
    ddtk_plan_desc d;
    desc_of(&d, NCHANS);
    float *ref = run(&d, in);
    int differ = 0;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 5; c++) {
                d.cpu = (ddtk_cpu_config){ tiles[a], dmb[b], chb[c] };
                float *out = run(&d, in);
                differ += memcmp(out, ref, (size_t)5 * NSAMP * sizeof *out) != 0;
                free(out);
            }
    CHECK(differ == 0);
    free(ref);
}

static void tuning(const char *path, const float *in)
{
    ddtk_plan_desc d, again;
    char key[1024], table[4096] = "";
    int found = 0;
    desc_of(&d, NCHANS);
    FILE *fp = fmemopen(table, sizeof table, "w");
    CHECK(ddtk_tune(&d, path, 2.0, fp) == DDTK_OK);
    fclose(fp);
    CHECK(strstr(table, "best: cpu tile ") != NULL);
    CHECK(d.cpu.time_tile > 0 && d.cpu.dm_block > 0 && d.cpu.chan_block % 4 == 0);
    desc_of(&again, NCHANS);
    CHECK(ddtk_wisdom_key(&again, key, sizeof key) == DDTK_OK);
    CHECK(ddtk_wisdom_apply(&again, path, &found) == DDTK_OK && found == 1);
    CHECK(memcmp(&again.cpu, &d.cpu, sizeof d.cpu) == 0);
    float *tuned = run(&d, in);
    desc_of(&d, NCHANS);
    float *dflt = run(&d, in);
    CHECK(memcmp(tuned, dflt, (size_t)5 * NSAMP * sizeof *tuned) == 0);
    free(tuned);
    free(dflt);
}

/* ---- every algorithm's tunable parameters ---------------------------------------- */

static char last_warning[512];

static void on_message(void *ctx, int level, const char *text)
{
    (void)ctx;
    if (level == DDTK_MSG_WARNING)
        snprintf(last_warning, sizeof last_warning, "%s", text);
}

/* A sub-band entry's parameters set what the description does not give,
 * and its text comes back byte for byte: in the description and the file. */
static void params_round_trip(const char *path)
{
    const char *cfg = "cpu tile 512 dms 8 chans 16 nsub 8 dm_group 4";
    ddtk_plan_desc d;
    char key[1024], text[256];
    double v;
    int found = 0;
    unlink(path);
    desc_of(&d, NCHANS);
    CHECK(ddtk_plan_desc_set_algorithm(&d, "subband") == DDTK_OK);
    CHECK(ddtk_wisdom_key(&d, key, sizeof key) == DDTK_OK && strstr(key, "| subband nchans 48"));
    CHECK(ddtk_wisdom_store(path, key, cfg, 1e9) == DDTK_OK);
    char *before = read_text(path);
    CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 1);
    CHECK(ddtk_plan_desc_get_param(&d, "nsub", &v) == DDTK_OK && v == 8);
    CHECK(ddtk_plan_desc_get_param(&d, "dm_group", &v) == DDTK_OK && v == 4);
    ddtk_config_text(&d, text, sizeof text);
    CHECK(strcmp(text, cfg) == 0);
    CHECK(ddtk_wisdom_store(path, key, text, 1e9) == DDTK_OK);
    char *after = read_text(path);
    CHECK(before && after && strcmp(before, after) == 0);
    free(before);
    free(after);
    /* a given parameter is another key, and the caller's value wins */
    desc_of(&d, NCHANS);
    CHECK(ddtk_plan_desc_set_algorithm(&d, "subband") == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&d, "nsub", 16) == DDTK_OK);
    CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 0);
    CHECK(ddtk_wisdom_key(&d, key, sizeof key) == DDTK_OK && strstr(key, " nsub=16"));
    CHECK(ddtk_wisdom_store(path, key, cfg, 1e9) == DDTK_OK);
    CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 1);
    CHECK(ddtk_plan_desc_get_param(&d, "nsub", &v) == DDTK_OK && v == 16);
    CHECK(ddtk_plan_desc_get_param(&d, "dm_group", &v) == DDTK_OK && v == 4);
    /* a parameter the algorithm does not tune, or a value it refuses: one
     * warning naming the line, and the description as it was */
    const char *refused[] = { "cpu tile 512 dms 8 chans 16 max_smear_ratio 5",
                              "cpu tile 512 dms 8 chans 16 nsub 0", "nsub 8 chunk 512",
                              "cpu tile 512 dms 8 chans 16 nsub8",
                              "cpu tile 512 dms 8 chans 16  nsub 8", "cpu tile 512 dms 8 chans 16x",
                              "cpu tile 512 dms 8 chans 16 ", "nsub 8 dm_group" };
    ddtk_set_message_handler(on_message, NULL);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        desc_of(&d, NCHANS);
        CHECK(ddtk_plan_desc_set_algorithm(&d, "subband") == DDTK_OK);
        CHECK(ddtk_wisdom_key(&d, key, sizeof key) == DDTK_OK);
        CHECK(ddtk_wisdom_store(path, key, refused[i], 1e9) == DDTK_OK || i >= 3);
        last_warning[0] = '\0';
        CHECK(ddtk_wisdom_apply(&d, path, &found) == DDTK_OK && found == 0);
        CHECK(d.param_set == 0 && d.cpu.time_tile == 0);
        CHECK(strstr(last_warning, "using the default kernel configuration") != NULL);
        if (i < 3)
            CHECK(strstr(last_warning, "line 2: ") != NULL);
        unlink(path);
    }
    ddtk_set_message_handler(NULL, NULL);
}

/* The description of algorithm `name` over the test's channels: DMs 0 to
 * 63 (enough work per sample that the kernel, not the unpacking, fills the
 * tuner's timings), or the algorithm's own DMs up to 60. */
static void algo_desc(ddtk_plan_desc *d, const char *name, double **dms, int **ds)
{
    static double steps[64];
    int ndm;
    desc_of(d, NCHANS);
    CHECK(ddtk_plan_desc_set_algorithm(d, name) == DDTK_OK);
    *dms = NULL;
    *ds = NULL;
    for (int i = 0; i < 64; i++)
        steps[i] = i;
    d->dms = steps;
    d->ndm = 64;
    if (!ddtk_algorithm_own_dms(name))
        return;
    CHECK(ddtk_plan_desc_own_dms(d, 0, 60, 40e-6, 1, dms, ds, &ndm) == DDTK_OK);
    d->dms = *dms;
    d->downsamp = *ds;
    d->ndm = ndm;
}

/* The kept configuration is the fastest line of the tuner's table; the
 * wisdom gives it back; a plan from it and a plan with those parameters set
 * by hand give the same bytes. */
static void tuning_choice(const char *name, const char *path)
{
    ddtk_plan_desc d, w, hand;
    double *dms, *dms2, *dms3, top = 0, rate;
    int *ds, *ds2, *ds3, found = 0, lines = 0;
    char *table = NULL, kept[512] = "", text[512], line[512], cfgs[64][512];
    double rates[64];
    size_t size = 0;
    unlink(path);
    algo_desc(&d, name, &dms, &ds);
    FILE *fp = open_memstream(&table, &size);
    CHECK(ddtk_tune(&d, path, 1.5, fp) == DDTK_OK);
    fclose(fp);
    fp = fmemopen(table, size, "r");
    while (fp && fgets(line, sizeof line, fp)) {
        char *end = strstr(line, " sample-adds/s"), *num;
        if (strncmp(line, "best: ", 6) == 0 && end) {
            *strrchr(line, ',') = '\0';
            snprintf(kept, sizeof kept, "%s", line + 6);
        } else if (end && strncmp(line, "set-up", 6) != 0 && lines < 64) {
            *end = '\0';
            num = strrchr(line, ' ');
            rate = atof(num + 1);
            while (num > line && num[-1] == ' ')
                num--;
            *num = '\0';
            snprintf(cfgs[lines], sizeof cfgs[lines], "%s", line);
            rates[lines++] = rate;
            top = rate > top ? rate : top;
        }
    }
    if (fp)
        fclose(fp);
    if (lines < 2)
        fprintf(stderr, "%s: %s\n", name, table);
    free(table);
    CHECK(lines >= 2);
    /* kept: a line at the top rate (the table's 4 digits may tie several) */
    int at_top = 0;
    for (int i = 0; i < lines; i++)
        at_top |= strcmp(cfgs[i], kept) == 0 && rates[i] == top;
    CHECK(kept[0] && at_top);
    ddtk_config_text(&d, text, sizeof text);
    CHECK(strcmp(text, kept) == 0);
    /* read back from the wisdom: the same text */
    algo_desc(&w, name, &dms2, &ds2);
    CHECK(ddtk_wisdom_apply(&w, path, &found) == DDTK_OK && found == 1);
    ddtk_config_text(&w, text, sizeof text);
    CHECK(strcmp(text, kept) == 0);
    /* by hand: the kept parameters set by name, the kernel left at its default */
    algo_desc(&hand, name, &dms3, &ds3);
    ddtk_param_info pi;
    for (int i = 0; ddtk_algorithm_param(name, i, &pi) == DDTK_OK; i++)
        if (w.param_set & (1u << i))
            CHECK(ddtk_plan_desc_set_param(&hand, pi.name, w.param[i]) == DDTK_OK);
    CHECK(hand.param_set == w.param_set);
    ddtk_plan *pw, *ph;
    CHECK(ddtk_plan_create(&pw, &w) == DDTK_OK && ddtk_plan_create(&ph, &hand) == DDTK_OK);
    float *in = calloc((size_t)NSAMP * NCHANS, sizeof *in);
    unsigned x = 11;
    for (size_t i = 0; i < (size_t)NSAMP * NCHANS; i++)
        in[i] = (float)((x = x * 1103515245u + 12345u) >> 24);
    size_t n = (size_t)w.ndm * NSAMP;
    float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    CHECK(ddtk_plan_execute(pw, NSAMP, in, 32, a, NSAMP, 32) == DDTK_OK);
    CHECK(ddtk_plan_execute(ph, NSAMP, in, 32, b, NSAMP, 32) == DDTK_OK);
    CHECK(memcmp(a, b, n * sizeof *a) == 0);
    ddtk_plan_destroy(pw);
    ddtk_plan_destroy(ph);
    free(in);
    free(a);
    free(b);
    free(dms);
    free(ds);
    free(dms2);
    free(ds2);
    free(dms3);
    free(ds3);
}

int main(void)
{
    char dir[] = "/tmp/test_wisdom_XXXXXX", path[64];
    float *in = malloc((size_t)NSAMP * NCHANS * sizeof *in);
    unsigned x = 7;
    for (size_t i = 0; i < (size_t)NSAMP * NCHANS; i++)
        in[i] = (float)((x = x * 1103515245u + 12345u) >> 16) * 1e-3f;
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/sub/wisdom", dir);
    round_trip(path);
    damaged(path);
    every_tile_choice(in);
    unlink(path);
    tuning(path, in);
    params_round_trip(path);
    tuning_choice("subband", path);
    tuning_choice("tree", path);
    tuning_choice("fdmt", path);
    unlink(path);
    snprintf(path, sizeof path, "%s/sub", dir);
    rmdir(path);
    rmdir(dir);
    free(in);
    return check_result();
}
