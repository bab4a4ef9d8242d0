/*
 * test_fdmt_bands.c - the GPU FDMT's plan (src/algos/fdmt_bands.c) run on
 * the host as cuda/fdmt.cu runs it: staged rows read into slots, rows made
 * slot by slot over each tile's packs, targets written to stored rows or
 * series. Every series equals the CPU transform's bit for bit (16-bit
 * integer rows wrapping as the GPU's do, or floats) for power-of-two and
 * odd channel counts, both band orders, one and two channels, shared
 * memory from an H100's share down to a few KB, and the slots start full
 * of junk so that a window too short shows. No read leaves its slot (a
 * row's window once began before its reader's: harmless to the outputs,
 * but a read before the slot), and no block takes more shared memory than
 * the budget.
 */
#include "fdmt.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KDM 4148.808
#define TSAMP 0.000064
#define H100 115712               /* bytes a block of two on an H100 */

typedef struct geom {
    int nch;
    double fch1, foff, dm_max;
    int maxval, esize;
    size_t budget;
} geom;

/* A tile's samples of a slot or row element, in the rows' arithmetic. */
static float sum(const geom *g, float u, float l)
{
    return g->esize == 2 ? (float)(int16_t)((int)u + (int)l) : u + l;
}

/* Band b of B over nout outputs from rows (stride apart, inlen valid),
 * stored rows in st (pitch apart), series into out (nout apart); 1 where a
 * read leaves its slot. */
static int run_band(const geom *g, const ddtk_fdmt_band *B, const float *rows, int64_t stride,
                    int inlen, float *st, int64_t pitch, int nout, float *out, unsigned *seed)
{
    const int np = 16 / g->esize, T = B->tile, ntile = (nout + B->lim + T - 1) / T;
    const size_t nslot = (size_t)B->nslot * B->pitch;
    float *S = malloc(nslot * sizeof *S);
    int bad = 0;
    for (int gi = 0; gi < B->ngroup; gi++)
        for (int tile = 0; tile < ntile; tile++) {
            const ddtk_fdmt_group *G = &B->group[gi];
            const ddtk_fdmt_ext *E = (const ddtk_fdmt_ext *)(B->desc + G->desc0);
            const ddtk_fdmt_op *O = B->desc + G->desc0 + G->next;
            const int t0 = tile * T;
            for (size_t i = 0; i < nslot; i++)
                S[i] = (float)(int16_t)check_rand(seed);
            for (int i = 0; i < G->next; i++) {
                const int end = E[i].kind == DDTK_FDMT_IN ? inlen : nout + E[i].lim;
                for (int j = 0; j < B->pitch; j++) {
                    const int t = t0 + E[i].off + j;
                    S[(size_t)E[i].slot * B->pitch + j] =
                        t >= end ? 0
                        : E[i].kind == DDTK_FDMT_IN ? rows[(size_t)E[i].ref * stride + t]
                                                    : st[(size_t)E[i].ref * pitch + t];
                }
            }
            for (int s = 0, o = 0; s < G->nstage; o += G->nops[s++])
                for (int i = o; i < o + G->nops[s]; i++) {
                    const ddtk_fdmt_op *x = &O[i];
                    /* the first and the last pack read (a shifted read takes the one
                     * after); a row that reads outside a slot is not run */
                    if (x->su < 0 || (x->l >= 0 && x->sl < 0)
                        || (x->su / np + x->npk + (x->su % np != 0)) * np > B->pitch
                        || (x->l >= 0
                            && (x->sl / np + x->npk + (x->sl % np != 0)) * np > B->pitch)) {
                        bad = 1;
                        continue;
                    }
                    for (int j = 0; j < np * x->npk; j++) {
                        const float u = S[(size_t)x->u * B->pitch + x->su + j];
                        const float l = x->l < 0 ? 0 : S[(size_t)x->l * B->pitch + x->sl + j];
                        const int t = t0 + j;
                        if (x->dst >= 0)
                            S[(size_t)x->dst * B->pitch + j] = x->l < 0 ? u : sum(g, u, l);
                        else if (x->dst == -1 && t < nout + x->glim)
                            st[(size_t)x->gref * pitch + t] = x->l < 0 ? u : sum(g, u, l);
                        else if (x->dst == -2 && t < nout)
                            out[(size_t)x->gref * nout + t] = g->esize == 2 ? u + l
                                                              : x->l < 0 ? u : u + l;
                    }
                }
        }
    free(S);
    return bad;
}

static void test_geometry(const geom *g, int nout)
{
    double *freq = malloc((size_t)g->nch * sizeof *freq), *dms = NULL;
    for (int c = 0; c < g->nch; c++)
        freq[c] = g->fch1 + c * g->foff;
    /* descending frequencies, as the engine gives them */
    if (g->foff > 0)
        for (int c = 0; c < g->nch / 2; c++) {
            const double x = freq[c];
            freq[c] = freq[g->nch - 1 - c];
            freq[g->nch - 1 - c] = x;
        }
    const double span = g->nch > 1 ? KDM * (pow(freq[g->nch - 1], -2) - pow(freq[0], -2)) : 1;
    int ndm = 0;
    dms = malloc(((size_t)(g->dm_max / (TSAMP / span)) + 2) * sizeof *dms);
    for (double d = 0; d <= g->dm_max; d += TSAMP / span)
        dms[ndm++] = d;
    ddtk_fdmt_plan f;
    CHECK(ddtk_fdmt_plan_init(&f, freq, g->nch, freq[0], KDM, DDTK_ROUND_NEAREST, TSAMP, dms,
                              ndm) == DDTK_OK);
    ddtk_fdmt_bands B;
    CHECK(ddtk_fdmt_bands_init(&B, &f, g->esize, g->budget) == DDTK_OK);
    const int inlen = nout + (int)f.overlap;
    const int64_t stride = inlen + 64, pitch = nout + B.reach + 64;
    float *rows = malloc((size_t)g->nch * stride * sizeof *rows);
    unsigned seed = 7;
    const int bias = (g->maxval + 1) / 2;
    for (size_t i = 0; i < (size_t)g->nch * stride; i++)
        rows[i] = g->maxval ? (float)((int)(check_rand(&seed) % (g->maxval + 1)) - bias)
                            : (float)((int)(check_rand(&seed) % 20001) - 10000) / 64.0f;
    float *ws = malloc((ddtk_fdmt_workspace(&f, nout) + 16) * sizeof *ws);
    float *ref = malloc((size_t)f.ndm * nout * sizeof *ref);
    float *out = malloc((size_t)f.ndm * nout * sizeof *out);
    float *st = calloc((size_t)(B.nstore ? B.nstore : 1) * pitch, sizeof *st);
    ddtk_fdmt_chunk_cpu(&f, rows, stride, nout, nout, ws, ref, nout);
    for (size_t i = 0; i < (size_t)f.ndm * nout; i++)
        out[i] = NAN;
    int leaks = 0, over = 0;
    for (int b = 0; b < B.nband; b++) {
        leaks += run_band(g, &B.band[b], rows, stride, inlen, st, pitch, nout, out, &seed);
        over += B.band[b].smem > g->budget;
    }
    int bad = 0;
    for (size_t i = 0; i < (size_t)f.ndm * nout; i++)
        bad += memcmp(&ref[i], &out[i], sizeof *out) != 0;
    CHECK(bad == 0);
    CHECK(leaks == 0);
    CHECK(over == 0);
    if (bad || leaks || over)
        fprintf(stderr, "  %d channels, esize %d, budget %zu: %d of %zu differ\n", g->nch,
                g->esize, g->budget, bad, (size_t)f.ndm * nout);
    ddtk_fdmt_bands_free(&B);
    ddtk_fdmt_plan_free(&f);
    free(freq);
    free(dms);
    free(rows);
    free(ws);
    free(ref);
    free(out);
    free(st);
}

int main(void)
{
    const geom g[] = {
        { 1024, 1581.8, -0.390625, 65.3, 3, 2, H100 },       /* htru's level 0, 2-bit */
        { 1024, 1581.8, -0.390625, 65.3, 255, 4, H100 },     /* 8-bit: float rows */
        { 1024, 1581.8, -0.390625, 65.3, 0, 4, 24000 },      /* float input, a small GPU */
        { 256, 1581.8, -1.5625, 300, 255, 2, H100 },
        { 77, 1300, 3, 500, 15, 2, H100 },                   /* ascending, odd */
        { 77, 1300, 3, 500, 15, 2, 3000 },                   /* tiles of a few samples */
        { 1000, 1581.8, -0.39, 200, 1, 4, 20000 },
        { 3, 1400, -10, 500, 255, 4, H100 },
        { 2, 1400, -10, 100, 255, 2, H100 },
        { 1, 1400, -10, 0, 255, 4, H100 },
    };
    for (size_t i = 0; i < sizeof g / sizeof *g; i++)
        test_geometry(&g[i], i < 3 ? 2500 : 1500);
    return check_result();
}
