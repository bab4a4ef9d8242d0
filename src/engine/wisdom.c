/*
 * wisdom.c - the wisdom file: tuned configurations (the direct kernel's and
 * the algorithms' tunable parameters) keyed by machine and set-up, as FFTW
 * keeps its wisdom.
 *
 * The file is plain text: the line "# ddtk wisdom 4", then one entry a line,
 * "KEY<TAB>CONFIG<TAB>SAMPLE-ADDS/S", CONFIG as ddtk_config_text writes it
 * (the parameters after the kernel's fields came later within version 4: an
 * older reader takes such a line for a damaged one). A writer holds the
 * directory's lock (tempfile.c), reads the file, replaces its key's line and
 * renames a complete new file into place, so concurrent writers never
 * interleave and readers never see half a file. Anything unexpected in a
 * file (another program's, a damaged one) is one warning and no wisdom: the
 * defaults are always safe.
 */
#define _GNU_SOURCE               /* asprintf */
#include "dmplan.h"
#include "engine.h"
#include "internal.h"
#include "tempfile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Versions 2 to 4: the GPU lane and float kernels gained configurations,
 * which renumbered the cached kernel's variants after them; older files are
 * ignored (one warning) and replaced by the next ddtune. */
static const char magic[] = "# ddtk wisdom 4";
static const char *const older[] = { "# ddtk wisdom 1", "# ddtk wisdom 2",
                                      "# ddtk wisdom 3" };

static int older_version(const char *line)
{
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++)
        if (strcmp(line, older[i]) == 0)
            return 1;
    return 0;
}

char *ddtk_wisdom_path(const char *file, const char *xdg, const char *home)
{
    char *s = NULL;
    if (file && *file)
        return strdup(file);
    if (xdg && *xdg && asprintf(&s, "%s/ddtk/wisdom", xdg) < 0)
        s = NULL;
    else if (!(xdg && *xdg) && home && *home && asprintf(&s, "%s/.cache/ddtk/wisdom", home) < 0)
        s = NULL;
    return s;
}

/* ---- keys ---------------------------------------------------------------------- */

static void cpu_model(char *s, size_t n)
{
    FILE *fp = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(s, n, "unknown CPU");
    while (fp && fgets(line, sizeof line, fp)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(s, n, "%s", colon + 2 + strspn(colon + 2, " "));
            s[strcspn(s, "\n")] = '\0';
            break;
        }
    }
    if (fp)
        fclose(fp);
}

/* Where d runs: "cpu MODEL x THREADS" or "gpu NAME, cc M.m, N GiB". */
static int machine_key(const ddtk_plan_desc *d, char *s, size_t n)
{
    int use_gpu = 0, rc = ddtk_backend_resolve(d->backend, d->gpu, 0, &use_gpu);
    char what[256];
    if (rc)
        return rc;
    if (use_gpu) {
        ddtk_gpu_describe(d->gpu, what, sizeof what);
        snprintf(s, n, "gpu %s", what);
    } else {
        cpu_model(what, sizeof what);
        snprintf(s, n, "cpu %s x %d", what, d->threads > 0 ? d->threads : omp_get_max_threads());
    }
    return DDTK_OK;
}

/* DMs below or past the diagonal DM, where one channel's smearing reaches
 * one sample (Barsdell 2.1): the regime that changes the kernel's reuse. */
static const char *dm_regime(const ddtk_plan_desc *d)
{
    double lo = d->freqs[0], hi = d->freqs[0], top = 0;
    for (int c = 1; c < d->nchans; c++) {
        lo = fmin(lo, d->freqs[c]);
        hi = fmax(hi, d->freqs[c]);
    }
    for (int i = 0; i < d->ndm; i++)
        top = fmax(top, d->dms[i]);
    double bw = d->nchans > 1 ? (hi - lo) / (d->nchans - 1) : d->chan_bw;
    ddtk_obs o;
    if (!(bw > 0) || ddtk_obs_init(&o, d->nchans, hi, -bw, d->tsamp, 0, d->kdm))
        return "below";
    return top > ddtk_diagonal_dm(&o) ? "past" : "below";
}

/* " NAME=VALUE" for each parameter of d's algorithm that d gives (per DM:
 * "NAME=per-DM"): a set-up tuned with them is another set-up. */
static void given_params(const ddtk_plan_desc *d, char *s, size_t n)
{
    const ddtk_algo *a = ddtk_algo_find(d->algorithm);
    s[0] = '\0';
    for (int i = 0; a && i < a->nparams; i++) {
        size_t used = strlen(s);
        if (!(d->param_set & (1u << i)))
            continue;
        if (d->param_per_dm[i])
            snprintf(s + used, n - used, " %s=per-DM", a->params[i].name);
        else
            snprintf(s + used, n - used, " %s=%.10g", a->params[i].name, d->param[i]);
    }
}

int ddtk_wisdom_key(const ddtk_plan_desc *d, char *key, size_t n)
{
    char machine[320];
    int rc = machine_key(d, machine, sizeof machine), bucket = 1, scrunch = 0;
    if (rc)
        return rc;
    while (bucket < d->ndm)
        bucket *= 2;
    for (int i = 0; d->downsamp && i < d->ndm; i++)
        scrunch |= d->downsamp[i] > 1;
    snprintf(key, n, "%s | %s nchans %d nbits %d ndm %d %s-diagonal%s", machine,
             d->algorithm ? d->algorithm : "direct", d->nchans, d->nbits, bucket, dm_regime(d),
             scrunch ? " scrunched" : "");
    given_params(d, key + strlen(key), n - strlen(key));
    return DDTK_OK;
}

/* ---- configurations: their ranges and their text ----------------------------------- */

static int uses_gpu(const ddtk_plan_desc *d)
{
    int use_gpu = 0;
    return !ddtk_backend_resolve(d->backend, d->gpu, 0, &use_gpu) && use_gpu;
}

/* d's algorithm's tunable parameters that d sets, " NAME VALUE" each, after s. */
static void tuned_params(const ddtk_plan_desc *d, char *s, size_t n)
{
    const ddtk_algo *a = ddtk_algo_find(d->algorithm);
    double v;
    for (int t = 0; a && t < a->ntunables; t++) {
        const char *name = a->tunables[t].param;
        int i = ddtk_algo_param(a, name);
        if (i < 0 || !(d->param_set & (1u << i)) || d->param_per_dm[i]
            || ddtk_plan_desc_get_param(d, name, &v))
            continue;
        size_t used = strlen(s);
        snprintf(s + used, n - used, "%s%s %.10g", used ? " " : "", name, v);
    }
}

void ddtk_config_text(const ddtk_plan_desc *d, char *s, size_t n)
{
    const ddtk_algo *a = ddtk_algo_find(d->algorithm);
    s[0] = '\0';
    if (a && a->tune == DDTK_TUNE_NONE)
        ;                         /* no direct kernel: only its own parameters */
    else if (uses_gpu(d))
        snprintf(s, n, "gpu lane %d float %d", d->gpu_config.lane_variant,
                 d->gpu_config.float_variant);
    else {
        ddtk_cpu_config c = d->cpu;
        ddtk_cpu_config_resolve(&c);
        snprintf(s, n, "cpu tile %d dms %d chans %d", c.time_tile, c.dm_block, c.chan_block);
    }
    tuned_params(d, s, n);
    if (!s[0])
        snprintf(s, n, "defaults");
}

static int field_check(const char *what, int v, int lo, int hi)
{
    if (v < lo || v > hi)
        return ddtk_fail(DDTK_EUSAGE, "%s %d: expected %d to %d", what, v, lo, hi);
    return DDTK_OK;
}

int ddtk_config_check(const ddtk_cpu_config *c, const ddtk_gpu_config *g)
{
    int rc = DDTK_OK;
    if (c && !rc)
        rc = field_check("cpu tile", c->time_tile, 0, DDTK_CPU_TILE_MAX);
    if (c && !rc)
        rc = field_check("cpu dms", c->dm_block, 0, DDTK_CPU_BLOCK_MAX);
    if (c && !rc)
        rc = field_check("cpu chans", c->chan_block, 0, DDTK_CPU_BLOCK_MAX);
    if (g && !rc)
        rc = field_check("gpu lane", g->lane_variant, -1, DDTK_GPU_VARIANT_MAX);
    if (g && !rc)
        rc = field_check("gpu float", g->float_variant, -1, DDTK_GPU_VARIANT_MAX);
    return rc;
}

/* The kernel part of ddtk_config_text's form at the start of s into c or
 * g (*used: its length, 0 when there is none): DDTK_OK or DDTK_EDATA. */
static int parse_kernel(const char *s, ddtk_cpu_config *c, ddtk_gpu_config *g, int *used)
{
    *used = 0;
    if (sscanf(s, "cpu tile %d dms %d chans %d%n", &c->time_tile, &c->dm_block,
               &c->chan_block, used) == 3 && *used > 0)
        return ddtk_config_check(c, NULL) ? DDTK_EDATA : DDTK_OK;
    *used = 0;
    if (sscanf(s, "gpu lane %d float %d%n", &g->lane_variant, &g->float_variant, used) == 2
        && *used > 0)
        return ddtk_config_check(NULL, g) ? DDTK_EDATA : DDTK_OK;
    *used = 0;
    return DDTK_OK;
}

/* The index of d's algorithm's tunable parameter `name` in its list, or -1. */
static int tunable_index(const ddtk_plan_desc *d, const char *name)
{
    const ddtk_algo *a = ddtk_algo_find(d->algorithm);
    for (int t = 0; a && t < a->ntunables; t++)
        if (strcmp(a->tunables[t].param, name) == 0)
            return ddtk_algo_param(a, name);
    return -1;
}

/* Tunable `name` = v in d unless d gives it already. */
static int set_tuned(ddtk_plan_desc *d, const char *name, double v)
{
    int i = tunable_index(d, name);
    if (i < 0)
        return ddtk_fail(DDTK_EDATA, "'%s' is not a tunable parameter of the %s algorithm",
                         name, d->algorithm ? d->algorithm : "direct");
    if (d->param_set & (1u << i))
        return DDTK_OK;
    /* a value out of range is the file's error: its message as it is */
    return ddtk_plan_desc_set_param(d, name, v) ? DDTK_EDATA : DDTK_OK;
}

/*
 * Parse ddtk_config_text's form: a kernel configuration, then "NAME VALUE"
 * pairs of the algorithm's tunable parameters, one space apart, or
 * "defaults". With d, set them in d: the kernel configuration, and each
 * parameter d does not give already (the caller's value wins; the wisdom
 * key names it). DDTK_OK, or DDTK_EDATA with the message set (not a
 * configuration, a field out of range, a parameter that d's algorithm does
 * not tune or a value it refuses); d is changed only on success.
 */
static int parse_config(const char *s, ddtk_plan_desc *d)
{
    ddtk_cpu_config c = { 0, 0, 0 };
    ddtk_gpu_config g = { -1, -1 };
    ddtk_plan_desc set;
    char name[64];
    double v;
    int used, n, rc = DDTK_OK;
    if (strcmp(s, "defaults") == 0)
        return DDTK_OK;
    if (parse_kernel(s, &c, &g, &used))
        return DDTK_EDATA;
    if (d) {
        set = *d;
        if (used && s[0] == 'c')
            set.cpu = c;
        else if (used)
            set.gpu_config = g;
    }
    const char *t = s + used;
    int bad = 0;
    while (*t && !rc && !bad) {
        n = 0;
        bad = (t != s && *t++ != ' ')
              || sscanf(t, "%63[a-z_] %lf%n", name, &v, &n) != 2 || t[strlen(name)] != ' '
              || !isfinite(v) || (t[n] && t[n] != ' ');
        if (!bad && d)
            rc = set_tuned(&set, name, v);
        t += n;
    }
    if (bad)
        return ddtk_fail(DDTK_EDATA, "'%.40s' is not a kernel configuration", s);
    if (!rc && d)
        *d = set;
    return rc;
}

/* ---- the file ----------------------------------------------------------------------- */

/* A wisdom file holds a few hundred entries of about 200 bytes: anything far
 * past these bounds is not one, and is refused before it is read. */
#define WISDOM_MAX_BYTES (4 << 20)
#define WISDOM_LINE_MAX 4096

typedef struct wisdom {
    char **line;                  /* entries: "key\tconfig\trate" without the newline */
    int n;
} wisdom;

static void wisdom_free(wisdom *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->line[i]);
    free(w->line);
    memset(w, 0, sizeof *w);
}

/* An entry's fields, split in place: DDTK_OK, or DDTK_EDATA with the message set. */
static int split_entry(char *line, char **key, char **config, double *rate)
{
    char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL, *end;
    if (!t1 || !t2 || t1 == line || strchr(t2 + 1, '\t'))
        return ddtk_fail(DDTK_EDATA, "not KEY<TAB>CONFIG<TAB>RATE");
    *t1 = *t2 = '\0';
    *key = line;
    *config = t1 + 1;
    *rate = strtod(t2 + 1, &end);
    if (*end != '\0' || !(*rate > 0) || !isfinite(*rate))
        return ddtk_fail(DDTK_EDATA, "rate '%.40s' is not a positive number", t2 + 1);
    return parse_config(*config, NULL);
}

static int entry_check(const char *line)
{
    char *copy = strdup(line), *key, *config;
    double rate;
    if (!copy)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    int rc = split_entry(copy, &key, &config, &rate);
    free(copy);
    return rc;
}

/* Open path for reading without blocking on a FIFO: a regular file of at most
 * WISDOM_MAX_BYTES, else NULL with the message set (*absent: no such file). */
static FILE *wisdom_open(const char *path, int *absent)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    FILE *fp = NULL;
    *absent = fd < 0 && errno == ENOENT;
    if (fd < 0)
        return ddtk_fail(DDTK_ESYS, "%s", strerror(errno)), NULL;
    if (fstat(fd, &st) != 0)
        ddtk_fail(DDTK_ESYS, "%s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        ddtk_fail(DDTK_EDATA, "not a regular file");
    else if (st.st_size > WISDOM_MAX_BYTES)
        ddtk_fail(DDTK_EDATA, "larger than %d MiB: not a wisdom file", WISDOM_MAX_BYTES >> 20);
    else if (!(fp = fdopen(fd, "r")))
        ddtk_fail(DDTK_ESYS, "%s", strerror(errno));
    if (!fp)
        close(fd);
    return fp;
}

/* One line of fp into buf (WISDOM_LINE_MAX + 1 bytes) without its newline:
 * 1, 0 at the end, or -1 with the message set (too long, a NUL, a read error). */
static int read_line(FILE *fp, char *buf, int lineno)
{
    size_t len = 0;
    int c;
    while ((c = getc(fp)) != EOF && c != '\n') {
        if (len == WISDOM_LINE_MAX)
            return ddtk_fail(DDTK_EDATA, "line %d: longer than %d bytes", lineno,
                             WISDOM_LINE_MAX), -1;
        if (c == '\0')
            return ddtk_fail(DDTK_EDATA, "line %d: a NUL byte", lineno), -1;
        buf[len++] = (char)c;
    }
    buf[len] = '\0';
    if (ferror(fp))
        return ddtk_fail(DDTK_ESYS, "read error"), -1;
    return c == EOF && len == 0 ? 0 : 1;
}

/* Read path's entries. 1: no file; -1: not a wisdom file (the message says why). */
static int wisdom_read(const char *path, wisdom *w)
{
    char buf[WISDOM_LINE_MAX + 1];
    int rc = 0, lineno = 0, absent, more;
    memset(w, 0, sizeof *w);
    FILE *fp = wisdom_open(path, &absent);
    if (!fp)
        return absent ? 1 : -1;
    while (!rc && (more = read_line(fp, buf, ++lineno)) > 0) {
        if (lineno == 1) {
            if (older_version(buf))
                rc = ddtk_fail(DDTK_EDATA, "wisdom of an older ddtk (GPU variants renumbered; "
                               "tune again)");
            else if (strcmp(buf, magic) != 0)
                rc = ddtk_fail(DDTK_EDATA, "not a ddtk wisdom file");
        } else if (entry_check(buf)) {
            rc = ddtk_fail(DDTK_EDATA, "line %d: %s", lineno, ddtk_errmsg());
        } else {
            char **grown = realloc(w->line, (size_t)(w->n + 1) * sizeof *grown);
            if (!grown || !(grown[w->n] = strdup(buf)))
                rc = ddtk_fail(DDTK_ESYS, "out of memory");
            else
                w->line = grown, w->n++;
        }
    }
    if (!rc && more < 0)
        rc = DDTK_EDATA;
    if (!rc && lineno == 1)
        rc = ddtk_fail(DDTK_EDATA, "an empty file");
    fclose(fp);
    if (rc)
        wisdom_free(w);
    return rc ? -1 : 0;
}

/* The index of key's entry, or -1. */
static int wisdom_find(const wisdom *w, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < w->n; i++)
        if (strncmp(w->line[i], key, k) == 0 && w->line[i][k] == '\t')
            return i;
    return -1;
}

int ddtk_wisdom_lookup(const char *path, const char *key, ddtk_plan_desc *d, int *found)
{
    wisdom w;
    *found = 0;
    int rc = wisdom_read(path, &w);
    if (rc)
        return rc < 0 ? DDTK_EDATA : DDTK_OK;
    int i = wisdom_find(&w, key);
    if (i >= 0) {
        char *copy = strdup(w.line[i]), *k, *config;
        double rate;
        rc = !copy ? ddtk_fail(DDTK_ESYS, "out of memory")
                   : split_entry(copy, &k, &config, &rate);
        if (!rc && (rc = parse_config(config, d))) {
            rc = ddtk_fail(DDTK_EDATA, "line %d: %s", i + 2, ddtk_errmsg());
        }
        *found = !rc;
        free(copy);
    }
    wisdom_free(&w);
    return rc;
}

int ddtk_wisdom_apply(ddtk_plan_desc *d, const char *path, int *found)
{
    char key[1024];
    int rc = ddtk_wisdom_key(d, key, sizeof key);
    *found = 0;
    if (rc)
        return rc;
    if (ddtk_wisdom_lookup(path, key, d, found))
        ddtk_report(DDTK_MSG_WARNING, "%s: %s; using the default kernel configuration", path,
                    ddtk_errmsg());
    return DDTK_OK;
}

static int make_parent(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    for (char *s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            int rc = ddtk_fail(DDTK_ESYS, "%s: cannot create: %s", dir, strerror(errno));
            free(dir);
            return rc;
        }
        *s = '/';
    }
    free(dir);
    return DDTK_OK;
}

static int wisdom_write(const char *path, const wisdom *w)
{
    char *tmp;
    FILE *fp = ddtk_temp_open(path, &tmp);
    if (!fp)
        return DDTK_ESYS;
    fprintf(fp, "%s\n", magic);
    for (int i = 0; i < w->n; i++)
        fprintf(fp, "%s\n", w->line[i]);
    int rc = ddtk_temp_flush(fp, tmp, path);
    if (fclose(fp) != 0 && !rc)
        rc = ddtk_fail(DDTK_ESYS, "%s: write error: %s", path, strerror(errno));
    if (rc)
        ddtk_temp_remove(&tmp);
    return rc ? rc : ddtk_temp_rename(&tmp, path, 1);
}

/* Replace (or add) key's entry; a file that is not wisdom is replaced whole. */
int ddtk_wisdom_store(const char *path, const char *key, const char *config, double rate)
{
    wisdom w;
    char *entry;
    int rc = make_parent(path);
    if (rc)
        return rc;
    int lock = ddtk_tempdir_lock(path);
    if (wisdom_read(path, &w) < 0)
        ddtk_report(DDTK_MSG_WARNING, "%s: %s; starting a new wisdom file", path, ddtk_errmsg());
    if (asprintf(&entry, "%s\t%s\t%.4g", key, config, rate) < 0) {
        rc = ddtk_fail(DDTK_ESYS, "out of memory");
    } else {
        int i = wisdom_find(&w, key);
        i = i >= 0 ? i : w.n;
        char **grown = i < w.n ? w.line : realloc(w.line, (size_t)(w.n + 1) * sizeof *grown);
        if (!grown) {
            free(entry);
            rc = ddtk_fail(DDTK_ESYS, "out of memory");
        } else {
            w.line = grown;
            if (i < w.n)
                free(w.line[i]);
            else
                w.n++;
            w.line[i] = entry;
            rc = wisdom_write(path, &w);
        }
    }
    ddtk_tempdir_unlock(lock);
    wisdom_free(&w);
    return rc;
}
