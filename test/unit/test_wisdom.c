/*
 * test_wisdom.c - the wisdom file and the CPU tuner: entries stored and found
 * by key (and not by another set-up's), damaged and foreign files ignored
 * and replaced whole, every CPU tile choice giving the default's bytes, and
 * a tuning run whose configuration is kept and changes no output.
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
    unlink(path);
    snprintf(path, sizeof path, "%s/sub", dir);
    rmdir(path);
    rmdir(dir);
    free(in);
    return check_result();
}
