/*
 * killfile.c - channel kill lists.
 *
 * Two forms (channel indices in file order):
 *  - a mask, one 0 or 1 per line for every channel, SIGPROC style: 0 kills the
 *    channel, 1 keeps it;
 *  - a list of channels to kill: indices and ranges lo:hi (inclusive),
 *    separated by commas, spaces or newlines, e.g. "0:10,40,100:120".
 * '#' starts a comment.
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void strip_comments(char *text)
{
    for (char *p = text; (p = strchr(p, '#')); )
        while (*p && *p != '\n')
            *p++ = ' ';
}

/* A mask has one token a line and no ranges or commas, and its tokens are
 * 0s and 1s; a list of indices one a line names channel 0 and 1 at most
 * once each. So lines of single tokens with more than two 0s and 1s among
 * them are a mask, typos and all (parse_mask names them), never a list. */
static int looks_like_mask(const char *text, int *ntokens)
{
    int n = 0, n01 = 0;
    for (const char *p = text; *p; ) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, " \t\r\n");
        if (memchr(p, ',', len) || memchr(p, ':', len))
            return 0;
        n01 += len == 1 && (*p == '0' || *p == '1');
        n++;
        p += len;
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (*p && *p != '\n')
            return 0;
    }
    *ntokens = n;
    return n > 0 && (n01 == n || n01 > 2);
}

static int parse_mask(const char *text, const char *path, int nchans, int ntokens, uint8_t *kill)
{
    int c = 0, line = 1;
    for (const char *p = text; *p; ) {
        if (*p == '\n' || *p == ' ' || *p == '\t' || *p == '\r') {
            line += *p++ == '\n';
            continue;
        }
        size_t len = strcspn(p, " \t\r\n");
        if (len != 1 || (*p != '0' && *p != '1'))
            return ddtk_fail(DDTK_EDATA, "%s: line %d: '%.*s' in a 0/1 mask (0 kills a "
                             "channel, 1 keeps it)", path, line, (int)(len < 20 ? len : 20), p);
        if (c < nchans)
            kill[c] = *p == '0';
        c++;
        p += len;
    }
    if (ntokens != nchans)
        return ddtk_fail(DDTK_EDATA, "%s: killfile mask has %d entries for %d channels "
                         "(to list channels to kill, separate them with commas)",
                         path, ntokens, nchans);
    return DDTK_OK;
}

static int parse_ranges(char *text, const char *path, int nchans, uint8_t *kill)
{
    for (char *tok = strtok(text, ", \t\r\n"); tok; tok = strtok(NULL, ", \t\r\n")) {
        char *end;
        errno = 0;
        long lo = strtol(tok, &end, 10), hi = lo;
        if (end != tok && *end == ':') {
            char *second = end + 1;
            hi = strtol(second, &end, 10);
            if (end == second)
                end = tok;
        }
        if (end == tok || *end || errno)
            return ddtk_fail(DDTK_EDATA, "%s: killfile entry '%s' is not a channel or lo:hi range",
                             path, tok);
        if (lo < 0 || hi >= nchans || lo > hi)
            return ddtk_fail(DDTK_EDATA, "%s: killfile entry '%s' is outside channels 0..%d",
                             path, tok, nchans - 1);
        for (long c = lo; c <= hi; c++)
            kill[c] = 1;
    }
    return DDTK_OK;
}

int ddtk_killfile_read(const char *path, int nchans, uint8_t **kill, int *nkilled)
{
    int ntokens = 0;
    char *text;
    int rc = ddtk_slurp(path, &text);
    if (rc)
        return rc;
    strip_comments(text);
    *kill = ddtk_calloc((size_t)nchans, 1, "kill mask");
    if (!*kill)
        rc = DDTK_ESYS;
    else if (looks_like_mask(text, &ntokens))
        rc = parse_mask(text, path, nchans, ntokens, *kill);
    else
        rc = parse_ranges(text, path, nchans, *kill);
    free(text);
    if (rc) {
        free(*kill);
        *kill = NULL;
        return rc;
    }
    *nkilled = 0;
    for (int c = 0; c < nchans; c++)
        *nkilled += (*kill)[c];
    if (*nkilled == nchans) {
        free(*kill);
        *kill = NULL;
        return ddtk_fail(DDTK_EDATA, "%s: killfile kills all %d channels", path, nchans);
    }
    return DDTK_OK;
}
