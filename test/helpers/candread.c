/*
 * candread - test helper: an independent reader of PRESTO's binary
 * _ACCEL_<zmax>.cand (the fourierprops records prepfold -accelcand reads),
 * from the record layout alone (88 bytes a record, native byte order).
 * Prints one line per record:
 *   index  r  z  w  pow  sig  rawpow  phs  locpow
 * and exits 1 if the file is not a whole number of records.
 */
#include <stdio.h>
#include <string.h>

enum { RECORD = 88 };

static double f64(const unsigned char *rec, int off)
{
    double v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

static double f32(const unsigned char *rec, int off)
{
    float v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: candread FILE.cand\n");
        return 2;
    }
    FILE *fp = fopen(argv[1], "rb");
    if (!fp) {
        perror(argv[1]);
        return 1;
    }
    unsigned char rec[RECORD];
    size_t got;
    int i = 0;
    while ((got = fread(rec, 1, RECORD, fp)) == RECORD)
        printf("%d %.6f %.6f %.6f %.6f %.4f %.6f %.6f %.6f\n", ++i, f64(rec, 0), f64(rec, 16),
               f64(rec, 32), f32(rec, 44), f32(rec, 52), f32(rec, 56), f32(rec, 60),
               f32(rec, 84));
    fclose(fp);
    if (got != 0) {
        fprintf(stderr, "%s: %zu bytes left over: not whole %d-byte records\n", argv[1], got,
                RECORD);
        return 1;
    }
    return 0;
}
