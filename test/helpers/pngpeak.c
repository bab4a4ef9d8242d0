/*
 * pngpeak - test helper: decode a PNG with cairo's loader and report on it.
 *   pngpeak FILE                 width and height
 *   pngpeak FILE X Y W H         the brightest pixel (largest r+g+b, the
 *                                first in row order) of the rectangle, as
 *                                fractions of it: fx from the left, fy from
 *                                the bottom
 *   pngpeak FILE --pixel X Y     r g b of one pixel (0-255)
 * A file that does not decode is an error (exit 1).
 */
#include <cairo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void rgb(cairo_surface_t *s, int x, int y, int *r, int *g, int *b)
{
    const uint8_t *row = cairo_image_surface_get_data(s) + (size_t)y * cairo_image_surface_get_stride(s);
    uint32_t px = ((const uint32_t *)row)[x];
    *r = (px >> 16) & 255;
    *g = (px >> 8) & 255;
    *b = px & 255;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 5 && argc != 6) {
        fprintf(stderr, "usage: pngpeak FILE [X Y W H | --pixel X Y]\n");
        return 2;
    }
    cairo_surface_t *s = cairo_image_surface_create_from_png(argv[1]);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        fprintf(stderr, "pngpeak: %s: %s\n", argv[1], cairo_status_to_string(cairo_surface_status(s)));
        return 1;
    }
    cairo_surface_flush(s);
    int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
    int r, g, b;
    if (argc == 2)
        printf("%d %d\n", w, h);
    else if (argc == 5 && strcmp(argv[2], "--pixel") == 0) {
        int x = atoi(argv[3]), y = atoi(argv[4]);
        if (x < 0 || y < 0 || x >= w || y >= h)
            return 1;
        rgb(s, x, y, &r, &g, &b);
        printf("%d %d %d\n", r, g, b);
    } else if (argc == 6) {
        int x0 = atoi(argv[2]), y0 = atoi(argv[3]), rw = atoi(argv[4]), rh = atoi(argv[5]);
        int best = -1, bx = 0, by = 0;
        for (int y = y0; y < y0 + rh && y < h; y++)
            for (int x = x0; x < x0 + rw && x < w; x++) {
                rgb(s, x, y, &r, &g, &b);
                if (r + g + b > best) {
                    best = r + g + b;
                    bx = x;
                    by = y;
                }
            }
        printf("%.4f %.4f\n", (bx + 0.5 - x0) / rw, (y0 + rh - by - 0.5) / rh);
    } else
        return 2;
    cairo_surface_destroy(s);
    return 0;
}
