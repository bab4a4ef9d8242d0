/*
 * inf.c - reading PRESTO .inf files and opening the .dat beside them, .dat and
 * .inf names, and reading small text files whole. (Writing .inf files is
 * output.c's.)
 */
#include "inf.h"
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ddtk_text_open(const char *path, FILE **fp)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    *fp = NULL;
    if (fd < 0)
        return ddtk_fail(DDTK_ESYS, "%s: cannot open: %s", path, strerror(errno));
    int rc = DDTK_OK;
    if (fstat(fd, &st) != 0)
        rc = ddtk_fail(DDTK_ESYS, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
        rc = ddtk_fail(DDTK_EDATA, "%s: not a regular file or a pipe", path);
    else if (S_ISREG(st.st_mode) && st.st_size > DDTK_TEXT_MAX)
        rc = ddtk_fail(DDTK_EDATA, "%s: larger than %d MiB: not a text input", path,
                       DDTK_TEXT_MAX >> 20);
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0
             || !(*fp = fdopen(fd, "r")))
        rc = ddtk_fail(DDTK_ESYS, "%s: %s", path, strerror(errno));
    if (rc)
        close(fd);
    return rc;
}

long ddtk_text_line(FILE *fp, const char *path, long lineno, char **line, size_t *cap,
                    int64_t *total)
{
    size_t n = 0;
    int c = 0;
    while (c != '\n' && (c = getc_unlocked(fp)) != EOF) {
        if (c == '\0')
            return -ddtk_fail(DDTK_EDATA, "%s: line %ld: a NUL byte: not a text file", path,
                              lineno);
        if (n == DDTK_TEXT_LINE_MAX || ++*total > DDTK_TEXT_MAX)
            return -ddtk_fail(DDTK_EDATA, "%s: line %ld: %s", path, lineno,
                              n == DDTK_TEXT_LINE_MAX ? "longer than 64 KiB"
                                                      : "past 256 MiB of text");
        if (n + 2 > *cap) {
            size_t want = *cap ? 2 * *cap : 256;
            char *grown = realloc(*line, want);
            if (!grown)
                return -ddtk_fail(DDTK_ESYS, "%s: out of memory", path);
            *line = grown;
            *cap = want;
        }
        (*line)[n++] = (char)c;
    }
    if (ferror(fp))
        return -ddtk_fail(DDTK_ESYS, "%s: read error: %s", path, strerror(errno));
    if (*line)
        (*line)[n] = '\0';
    return (long)n;
}

int ddtk_slurp(const char *path, char **text)
{
    FILE *fp;
    int rc = ddtk_text_open(path, &fp);
    if (rc)
        return rc;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while (buf && n <= DDTK_TEXT_MAX && (got = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    int err = ferror(fp);
    fclose(fp);
    if (!buf || err)
        rc = ddtk_fail(DDTK_ESYS, "%s: %s", path, buf ? "read error" : "out of memory");
    else if (n > DDTK_TEXT_MAX)
        rc = ddtk_fail(DDTK_EDATA, "%s: past %d MiB of text", path, DDTK_TEXT_MAX >> 20);
    else if (memchr(buf, '\0', n))
        rc = ddtk_fail(DDTK_EDATA, "%s: a NUL byte at offset %zu: not a text file", path,
                       (size_t)((char *)memchr(buf, '\0', n) - buf));
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *text = buf;
    return DDTK_OK;
}

const char *ddtk_inf_value(const char *line, const char *label)
{
    while (*line == ' ')
        line++;
    if (strncmp(line, label, strlen(label)) != 0)
        return NULL;
    const char *eq = strchr(line, '=');
    if (!eq)
        return NULL;
    eq++;
    while (*eq == ' ')
        eq++;
    return eq;
}

static void copy_trim(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src);
    size_t len = strlen(dst);
    while (len && (dst[len - 1] == '\n' || dst[len - 1] == '\r' || dst[len - 1] == ' '))
        dst[--len] = '\0';
}

enum { INF_BINS = 1, INF_TSAMP = 2, INF_DM = 4, INF_EPOCH = 8 };

static int inf_line(ddtk_inf *inf, const char *line)
{
    const char *v;
    if ((v = ddtk_inf_value(line, "Data file name without suffix")))
        copy_trim(inf->basename, sizeof inf->basename, v);
    else if ((v = ddtk_inf_value(line, "Telescope used")))
        copy_trim(inf->telescope, sizeof inf->telescope, v);
    else if ((v = ddtk_inf_value(line, "Object being observed")))
        copy_trim(inf->object, sizeof inf->object, v);
    else if ((v = ddtk_inf_value(line, "Epoch of observation")))
        return sscanf(v, "%lf", &inf->mjd) == 1 ? INF_EPOCH : 0;
    else if ((v = ddtk_inf_value(line, "Number of bins in the time series")))
        return sscanf(v, "%lld", (long long *)&inf->nsamples) == 1 ? INF_BINS : 0;
    else if ((v = ddtk_inf_value(line, "Width of each time series bin")))
        return sscanf(v, "%lf", &inf->tsamp) == 1 ? INF_TSAMP : 0;
    else if ((v = ddtk_inf_value(line, "Dispersion measure")))
        return sscanf(v, "%lf", &inf->dm) == 1 ? INF_DM : 0;
    return 0;
}

int ddtk_inf_read(const char *path, ddtk_inf *inf, char **text)
{
    static const char *need[] = { "Number of bins in the time series",
                                  "Width of each time series bin (sec)",
                                  "Dispersion measure (cm-3 pc)", "Epoch of observation (MJD)" };
    char *buf = NULL;
    int rc = ddtk_slurp(path, &buf), found = 0;
    if (rc)
        return rc;
    memset(inf, 0, sizeof *inf);
    for (char *line = buf; *line;) {
        size_t len = strcspn(line, "\n");
        char save = line[len];
        line[len] = '\0';
        found |= inf_line(inf, line);
        line[len] = save;
        line += len + (save != '\0');
    }
    for (int i = 0; i < 4; i++)
        if (!(found & (1 << i))) {
            free(buf);
            return ddtk_fail(DDTK_EDATA, "%s: truncated or invalid .inf (no '%s' line)",
                             path, need[i]);
        }
    /* the numbers as the tools use them: a tsamp of inf or 0 is no time series */
    if (!(inf->tsamp > 0) || !isfinite(inf->tsamp))
        rc = ddtk_fail(DDTK_EDATA, "%s: bin width %g: must be a finite number > 0", path,
                       inf->tsamp);
    else if (!isfinite(inf->dm) || !isfinite(inf->mjd))
        rc = ddtk_fail(DDTK_EDATA, "%s: DM %g or epoch %g is not a finite number", path,
                       inf->dm, inf->mjd);
    else if (inf->nsamples < 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: %lld bins: must be >= 0", path,
                       (long long)inf->nsamples);
    if (text && !rc)
        *text = buf;
    else
        free(buf);
    return rc;
}

int ddtk_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

char *ddtk_inf_path(const char *dat)
{
    size_t n = strlen(dat);
    char *s = malloc(n + 5);
    if (!s)
        return NULL;
    strcpy(s, dat);
    if (n > 4 && strcmp(s + n - 4, ".dat") == 0)
        strcpy(s + n - 4, ".inf");
    else
        strcat(s, ".inf");
    return s;
}

/* Samples of a regular file of float32; -1 for pipes and devices. */
static int64_t dat_samples(FILE *fp)
{
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    return (int64_t)st.st_size / (int64_t)sizeof(float);
}

int ddtk_dat_open(ddtk_input *in, const char *path, ddtk_inf *inf, char **inf_text)
{
    memset(in, 0, sizeof *in);
    ddtk_header_init(&in->hdr);
    char *inf_path = ddtk_inf_path(path);
    int rc = inf_path ? ddtk_inf_read(inf_path, inf, inf_text)
                      : ddtk_fail(DDTK_ESYS, "out of memory");
    free(inf_path);
    if (!rc && !(inf->tsamp > 0))
        rc = ddtk_fail(DDTK_EDATA, "%s: sample time %g in its .inf: must be > 0", path,
                       inf->tsamp);
    if (rc)
        return rc;
    if (!(in->name = strdup(path)))
        return ddtk_fail(DDTK_ESYS, "out of memory");
    if (!(in->fp = fopen(path, "rb")))
        return ddtk_fail(DDTK_ESYS, "%s: cannot open: %s", path, strerror(errno));
    in->hdr.nchans = in->hdr.nifs = 1;
    in->hdr.nbits = 32;
    in->hdr.tsamp = inf->tsamp;
    in->bits_per_spectrum = 32;
    in->nsamples = dat_samples(in->fp);
    if (in->nsamples >= 0 && in->nsamples != inf->nsamples)
        ddtk_report(DDTK_MSG_WARNING, "%s: %lld samples, but its .inf says %lld; using the file "
                    "size", path, (long long)in->nsamples, (long long)inf->nsamples);
    return DDTK_OK;
}
