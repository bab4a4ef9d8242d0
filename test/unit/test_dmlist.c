/*
 * test_dmlist.c - DM lists: files with lines longer than any buffer.
 */
#include "ddtk.h"
#include "check.h"

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

int main(void)
{
    long_line();
    return check_result();
}
