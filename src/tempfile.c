/*
 * tempfile.c - temporary files and how they become outputs.
 *
 * An output is written to a hidden temporary ".NAME.XXXXXX" beside NAME and
 * renamed when complete. The process writing a temporary holds flock on it
 * while it is open, so that a later run can tell the temporaries of dead runs
 * (unlocked, even after SIGKILL) from those of live ones; a temporary named
 * "<another temporary>.inf" lives as long as that other one. Runs writing
 * into one directory take turns (flock on the directory) to create
 * temporaries, sweep stale ones and commit, so a sweep never sees a
 * temporary before it is locked, and two commits never interleave.
 * Temporaries not yet committed are listed for ddtk_remove_temporaries,
 * which a program's signal handler calls (the tools' do on SIGINT, SIGTERM,
 * SIGHUP and SIGPIPE): the library installs no handler itself.
 */
#define _GNU_SOURCE               /* renameat2 */
#include "tempfile.h"
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- removal on signals ------------------------------------------------------ */

/* Temporaries not yet committed, for a signal handler to remove. The list
 * only changes with those signals blocked, so the handler sees it whole. */
static char **pending;
static size_t npending, cap_pending;
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NCLEANUP (sizeof cleanup_signals / sizeof cleanup_signals[0])

void ddtk_remove_temporaries(void)
{
    for (size_t i = 0; i < npending; i++)
        unlink(pending[i]);
}

void ddtk_temp_hold_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < NCLEANUP; i++)
        sigaddset(&set, cleanup_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

void ddtk_temp_release_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

/* Called with the signals held (open_new). */
static int track(char *tmp)
{
    int ok = 1;
    if (npending == cap_pending) {
        size_t cap = cap_pending ? 2 * cap_pending : 64;
        char **p = realloc(pending, cap * sizeof *p);
        if (p) {
            pending = p;
            cap_pending = cap;
        } else
            ok = 0;
    }
    if (ok)
        pending[npending++] = tmp;
    return ok;
}

static void untrack(const char *tmp)
{
    sigset_t old;
    ddtk_temp_hold_signals(&old);
    for (size_t i = 0; i < npending; i++)
        if (pending[i] == tmp) {
            pending[i] = pending[--npending];
            break;
        }
    ddtk_temp_release_signals(&old);
}

/* ---- creating ------------------------------------------------------------------ */

int ddtk_temp_is_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

static char *dir_of(const char *path)
{
    char *copy = strdup(path), *dir = copy ? strdup(dirname(copy)) : NULL;
    free(copy);
    return dir;
}

int ddtk_tempdir_lock(const char *path)
{
    char *dir = dir_of(path);
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1, rc;
    free(dir);
    if (fd < 0)
        return -1;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
        ;
    if (rc != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void ddtk_tempdir_unlock(int fd)
{
    if (fd >= 0)
        close(fd);                /* releases the lock */
}

/* A new file from a template ending in XXXXXX, as mkostemp makes one but
 * with mode 0666 less the umask, as any new output: mkostemp's is 0600, and
 * the umask can only be read by setting it, for every thread of the process. */
static int create_unique(char *name)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    char *x = name + strlen(name) - 6;
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = ((uint64_t)getpid() << 40) ^ (uint64_t)(ddtk_now() * 1e9) ^ (uint64_t)attempt;
        for (int i = 0; i < 6; i++, r /= 62)
            x[i] = chars[r % 62];
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* The new file's lock, stream and place in the list (or it goes). */
static FILE *open_tracked(char *name, int fd)
{
    flock(fd, LOCK_EX | LOCK_NB);   /* a new file: never contended; NFS may refuse */
    FILE *fp = fdopen(fd, "wb");
    if (fp && !track(name)) {
        fclose(fp);
        fp = NULL;
        fd = -1;
        errno = ENOMEM;
    }
    if (!fp) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        unlink(name);
        errno = err;
    }
    return fp;
}

/* Create name exclusively (from a mkstemp template, or as it is), locked and
 * tracked, with the mode the umask gives new files. The signals are held from
 * before the file exists until it is listed (a failure included): a signal
 * between the two left it behind. */
static FILE *open_new(char *name, int from_template)
{
    sigset_t old;
    ddtk_temp_hold_signals(&old);
    FILE *fp = NULL;
    int fd = from_template ? create_unique(name)
                           : open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0)
        fp = open_tracked(name, fd);
    ddtk_temp_release_signals(&old);
    return fp;
}

static FILE *created(FILE *fp, const char *path, char **tmp)
{
    if (!fp) {
        ddtk_fail(DDTK_ESYS, "%s: cannot create: %s", path, strerror(errno));
        free(*tmp);
        *tmp = NULL;
    }
    return fp;
}

FILE *ddtk_temp_open(const char *path, char **tmp)
{
    *tmp = NULL;
    if (ddtk_temp_is_special(path))
        return created(fopen(path, "wb"), path, tmp);
    char *dir = dir_of(path), *copy = strdup(path);
    size_t n = strlen(path) + 16;
    FILE *fp = NULL;
    errno = ENOMEM;
    if (dir && copy && (*tmp = malloc(n))) {
        snprintf(*tmp, n, "%s/.%s.XXXXXX", dir, basename(copy));
        fp = open_new(*tmp, 1);
    }
    free(dir);
    free(copy);
    return created(fp, path, tmp);
}

FILE *ddtk_temp_open_beside(const char *of, const char *suffix, const char *path, char **tmp)
{
    size_t n = strlen(of) + strlen(suffix) + 1;
    FILE *fp = NULL;
    errno = ENOMEM;
    if ((*tmp = malloc(n))) {
        snprintf(*tmp, n, "%s%s", of, suffix);
        fp = open_new(*tmp, 0);
    }
    return created(fp, path, tmp);
}

FILE *ddtk_temp_create(const char *path, char **tmp)
{
    int lock = ddtk_temp_is_special(path) ? -1 : ddtk_tempdir_lock(path);
    FILE *fp = ddtk_temp_open(path, tmp);
    ddtk_tempdir_unlock(lock);
    return fp;
}

/* ---- committing ---------------------------------------------------------------- */

int ddtk_temp_flush(FILE *fp, const char *tmp, const char *path)
{
    errno = 0;
    if (fflush(fp) != 0 || ferror(fp) || (tmp && fsync(fileno(fp)) != 0))
        return ddtk_fail(DDTK_ESYS, "%s: write error: %s", path, strerror(errno ? errno : EIO));
    return DDTK_OK;
}

/* rename() that fails with EEXIST instead of replacing to: RENAME_NOREPLACE,
 * or where the file system lacks it, link() (which never replaces) and unlink. */
static int rename_noreplace(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1;
    if (link(from, to) != 0)
        return -1;
    unlink(from);
    return 0;
}

int ddtk_temp_rename(char **tmp, const char *path, int force)
{
    if (!*tmp)
        return DDTK_OK;           /* a device or pipe, written in place */
    if ((force ? rename(*tmp, path) : rename_noreplace(*tmp, path)) != 0) {
        if (errno == EEXIST)
            return ddtk_fail(DDTK_EUSAGE, "%s: exists (overwriting it needs force)", path);
        return ddtk_fail(DDTK_ESYS, "%s: cannot rename from %s: %s", path, *tmp,
                         strerror(errno));
    }
    untrack(*tmp);
    free(*tmp);
    *tmp = NULL;
    return DDTK_OK;
}

void ddtk_temp_remove(char **tmp)
{
    if (!*tmp)
        return;
    unlink(*tmp);
    untrack(*tmp);
    free(*tmp);
    *tmp = NULL;
}

int ddtk_temp_commit(FILE *fp, char **tmp, const char *path)
{
    int rc = ddtk_temp_flush(fp, *tmp, path);
    if (fclose(fp) != 0 && !rc)
        rc = ddtk_fail(DDTK_ESYS, "%s: write error: %s", path, strerror(errno));
    if (!rc)
        return ddtk_temp_rename(tmp, path, 1);
    ddtk_temp_remove(tmp);
    return rc;
}

void ddtk_temp_discard(FILE *fp, char **tmp)
{
    if (fp)
        fclose(fp);
    ddtk_temp_remove(tmp);
}

/* ---- stale temporaries ------------------------------------------------------------ */

/* ".NAME.XXXXXX" (mkstemp's letters and digits), or that plus ".inf" (*beside
 * set): NAME goes to name (n bytes). 0 for any other directory entry. */
static int parse_temp(const char *entry, char *name, size_t n, int *beside)
{
    size_t len = strlen(entry);
    *beside = len > 4 && strcmp(entry + len - 4, ".inf") == 0;
    if (*beside)
        len -= 4;
    if (len < 9 || entry[0] != '.' || entry[len - 7] != '.' || len - 8 >= n)
        return 0;
    for (size_t i = len - 6; i < len; i++)
        if (!isalnum((unsigned char)entry[i]))
            return 0;
    snprintf(name, n, "%.*s", (int)(len - 8), entry + 1);
    return 1;
}

/* 1 if no process holds the temporary entry (for a temporary beside
 * another, the other: gone or unlocked). */
static int is_stale(int dir, const char *entry, int beside)
{
    char holder[NAME_MAX + 1];
    struct stat st;
    snprintf(holder, sizeof holder, "%.*s", (int)(strlen(entry) - (beside ? 4 : 0)), entry);
    int fd = openat(dir, holder, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return beside && errno == ENOENT;
    int stale = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return stale;
}

int ddtk_temp_sweep(const char *path, int (*owned)(const char *name, const void *ctx),
                    const void *ctx)
{
    char *dir = dir_of(path), first[NAME_MAX + 1] = "", name[NAME_MAX + 1];
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    int n = 0, beside;
    while (d && (e = readdir(d)))
        if (parse_temp(e->d_name, name, sizeof name, &beside) && owned(name, ctx)
            && is_stale(dirfd(d), e->d_name, beside) && unlinkat(dirfd(d), e->d_name, 0) == 0
            && n++ == 0)
            snprintf(first, sizeof first, "%s", e->d_name);
    if (n)
        ddtk_report(DDTK_MSG_NOTE, "removed %d stale temporar%s of dead runs in %s (%s%s)", n,
                    n == 1 ? "y" : "ies", dir, first, n > 1 ? ", ..." : "");
    if (d)
        closedir(d);
    free(dir);
    return n;
}
