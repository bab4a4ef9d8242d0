/*
 * test_dmlist.c - DM lists: files with lines longer than any buffer, and the
 * cap on list lengths (a tolerance close to 1 is refused before allocating).
 */
#include "ddtk.h"
#include "check.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A DM line of 300 characters is one DM, not a DM per 255-byte piece. */
static void long_line(void)
{
    ddtk_dmlist l = { 0 };
    char path[] = "/tmp/test_dmlist_XXXXXX";
    FILE *fp = fdopen(mkstemp(path), "w");
    fprintf(fp, "%0300d5\n12.5\n", 0);
    fclose(fp);
    CHECK(ddtk_dmlist_file(&l, path) == DDTK_OK);
    CHECK(l.n == 2);
    CHECK(l.n == 2 && l.dm[0] == 5 && l.dm[1] == 12.5);
    unlink(path);
    ddtk_dmlist_free(&l);
}

/* --tol 1.0000001 over 0..1000 for the htru set-up: hundreds of millions of
 * DMs; refused as a usage error with an empty list. */
static void tol_cap(void)
{
    ddtk_dmlist l = { 0 };
    double t0 = ddtk_now();
    CHECK(ddtk_dmlist_tol(&l, 0, 1000, 64e-6, 40, 1.0000001, 1381.8, 0.390625, 1024)
          == DDTK_EUSAGE);
    CHECK(strstr(ddtk_errmsg(), "10^7") != NULL);
    CHECK(l.n == 0 && l.dm == NULL);
    CHECK(ddtk_now() - t0 < 5);
    ddtk_dmlist_free(&l);
}

int main(void)
{
    long_line();
    tol_cap();
    return check_result();
}
