/*
 * fdmt.c - the CPU kernel of the FDMT (Zackay & Ofek 2017; src/algos/fdmt.h has
 * the transform): one chunk of output samples through the whole merge tree.
 *
 * A chunk walks the nodes in post-order, so a node's rows are made just
 * after its children's, while they are warm in cache. Node rows live in a
 * per-thread workspace laid out as a stack: a node's rows at `buf`, its
 * upper child's just above, its lower child's above those; the upper
 * child's own children sit where the lower child will go, as they are done
 * with by then. Leaves are the input rows themselves, and the root's merge
 * writes the outputs, so neither takes workspace. Every output is the same
 * sum in the same order whatever the chunk or gulp.
 */
#include "fdmt.h"

static size_t pitch(const ddtk_fdmt_node *s, int64_t chunk)
{
    return (size_t)((chunk + s->reach + 15) / 16 * 16);
}

static int is_stored(const ddtk_fdmt_plan *f, int s)
{
    return f->node[s].up >= 0 && s != f->nnode - 1;
}

/* Lay out node s and its subtree from base; returns the extent (floats). */
static size_t layout(ddtk_fdmt_plan *f, int s, size_t base, int64_t chunk)
{
    ddtk_fdmt_node *n = &f->node[s];
    n->buf = base;
    if (n->up < 0)
        return base;
    size_t top = base + (is_stored(f, s) ? (size_t)n->nd * pitch(n, chunk) : 0);
    size_t a = layout(f, n->up, top, chunk);
    size_t above = top + (size_t)f->node[n->up].nd * (is_stored(f, n->up)
                                                      ? pitch(&f->node[n->up], chunk) : 0);
    size_t b = layout(f, n->lo, above, chunk);
    return a > b ? a : b;
}

size_t ddtk_fdmt_workspace(ddtk_fdmt_plan *f, int64_t chunk)
{
    return layout(f, f->nnode - 1, 0, chunk);
}

/* Row r of node s: an input row for a leaf, else its workspace row. */
static const float *row_of(const ddtk_fdmt_plan *f, int s, int r, const float *rows,
                           size_t stride, const float *ws, int64_t chunk)
{
    const ddtk_fdmt_node *n = &f->node[s];
    if (n->up < 0)
        return rows + (size_t)n->a * stride;
    return ws + n->buf + (size_t)r * pitch(n, chunk);
}

static void add(const float *restrict a, const float *restrict b, float *restrict o, int64_t n)
{
    for (int64_t t = 0; t < n; t++)
        o[t] = a[t] + b[t];
}

void ddtk_fdmt_chunk_cpu(const ddtk_fdmt_plan *f, const float *rows, size_t stride, int64_t n,
                         int64_t chunk, float *ws, float *out, size_t ostride)
{
    const int root = f->nnode - 1;
    for (int s = 0; s < root; s++) {
        const ddtk_fdmt_node *S = &f->node[s];
        if (S->up < 0)
            continue;
        size_t ps = pitch(S, chunk);
        for (int i = 0; i < S->nd; i++) {
            const int32_t *r = S->route + 4 * (size_t)i;
            if (r[3] < 0)
                continue;
            add(row_of(f, S->up, r[0], rows, stride, ws, chunk),
                row_of(f, S->lo, r[1], rows, stride, ws, chunk) + r[2],
                ws + S->buf + (size_t)i * ps, n + r[3]);
        }
    }
    const ddtk_fdmt_node *R = &f->node[root];
    for (int d = 0; d < f->ndm; d++) {
        const int32_t *r = f->out_route + 4 * (size_t)d;
        float *o = out + (size_t)d * ostride;
        if (R->up < 0) {
            const float *x = rows + r[3];
            for (int64_t t = 0; t < n; t++)
                o[t] = x[t];
        } else {
            add(row_of(f, R->up, r[0], rows, stride, ws, chunk) + r[3],
                row_of(f, R->lo, r[1], rows, stride, ws, chunk) + r[2] + r[3], o, n);
        }
    }
}
