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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- removal on signals ------------------------------------------------------ */

/*
 * Temporaries not yet committed, for the signal handler to remove. The list
 * only changes inside held sections (ddtk_temp_hold_signals), and a process
 * has several threads (OpenMP, the writeback thread, fdas's GPU workers), any
 * of which may take a process's signal: blocking it in the thread that holds
 * is not enough. So the handler, on whichever thread, notes the signal and
 * cleans up only when no thread is inside a held section; otherwise the last
 * thread to leave one does, and a thread that would enter one after the
 * signal waits for the end instead. A creation, a list change or a set's
 * renames are thus never cut in half.
 */
static char **pending;
static size_t npending, cap_pending;
static atomic_int holders;        /* threads inside a held section */
static atomic_int dying;          /* the first cleanup signal that came; 0: none */
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NCLEANUP (sizeof cleanup_signals / sizeof cleanup_signals[0])

static void cleanup_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < NCLEANUP; i++)
        sigaddset(set, cleanup_signals[i]);
}

static void (*volatile end_process)(int sig);

/* Remove the temporaries and let the program end the process by sig
 * (async-signal-safe). An end that returns (a test's) leaves the process
 * going on as before. */
static void remove_pending_and_end(int sig)
{
    for (size_t i = 0; i < npending; i++)
        unlink(pending[i]);
    if (end_process)
        end_process(sig);
    atomic_store(&dying, 0);      /* end returned: the process goes on */
}

void ddtk_remove_temporaries(int sig, void (*end)(int sig))
{
    int none = 0;
    end_process = end;
    atomic_compare_exchange_strong(&dying, &none, sig);
    if (atomic_load(&holders) == 0)
        remove_pending_and_end(atomic_load(&dying));
}

static void leave_held(void)
{
    int sig;
    if (atomic_fetch_sub(&holders, 1) == 1 && (sig = atomic_load(&dying)))
        remove_pending_and_end(sig);
}

/* This thread's held sections, nested: only the outermost counts in holders. */
static __thread int depth;

void ddtk_temp_hold_signals(sigset_t *old)
{
    sigset_t set;
    cleanup_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, old);
    if (depth++ > 0)
        return;
    atomic_fetch_add(&holders, 1);
    if (atomic_load(&dying)) {    /* the process is ending: the cleanup is not to move */
        depth--;
        leave_held();
        for (;;)
            pause();
    }
}

void ddtk_temp_release_signals(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
    if (--depth == 0)
        leave_held();
}

static int track(char *tmp)
{
    sigset_t old;
    int ok = 1;
    ddtk_temp_hold_signals(&old);
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
    ddtk_temp_release_signals(&old);
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

/* Create name exclusively (from a mkstemp-style template, or as it is) and track
 * it, in one held section: a signal never finds it created but untracked. */
static int create_tracked(char *name, int from_template)
{
    sigset_t old;
    ddtk_temp_hold_signals(&old);
    int fd = from_template ? create_unique(name)
                           : open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 && !track(name)) {
        close(fd);
        unlink(name);
        fd = -1;
        errno = ENOMEM;
    }
    int err = errno;
    ddtk_temp_release_signals(&old);
    errno = err;
    return fd;
}

/* Create name exclusively, locked and tracked, with the mode the umask gives
 * new files. */
static FILE *open_new(char *name, int from_template)
{
    int fd = create_tracked(name, from_template);
    if (fd < 0)
        return NULL;
    flock(fd, LOCK_EX | LOCK_NB);   /* a new file: never contended; NFS may refuse */
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        int err = errno;
        close(fd);
        unlink(name);
        untrack(name);
        errno = err;
    }
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

/* Rename the open temporaries in turn with other runs in the directory (a
 * sweep never finds them closed and unlocked) and with the cleanup signals
 * held; if one fails, those already renamed are removed again. */
static int rename_all(char **tmp, const char *const *path, int n, int force)
{
    sigset_t old;
    int rc = DDTK_OK, i, lock = ddtk_tempdir_lock(path[0]);
    char renamed[n];
    ddtk_temp_hold_signals(&old);
    for (i = 0; i < n && !rc; i++) {
        renamed[i] = tmp[i] != NULL;
        rc = ddtk_temp_rename(&tmp[i], path[i], force);
    }
    for (int j = 0; rc && j < i - 1; j++)
        if (renamed[j])
            unlink(path[j]);
    if (!rc && lock >= 0)
        fsync(lock);              /* the renames themselves, where the system allows */
    ddtk_temp_release_signals(&old);
    ddtk_tempdir_unlock(lock);
    return rc;
}

int ddtk_temp_commit_all(FILE **fp, char **tmp, const char *const *path, int n, int force)
{
    int rc = DDTK_OK;
    for (int i = 0; i < n && !rc; i++)
        rc = ddtk_temp_flush(fp[i], tmp[i], path[i]);
    if (!rc)
        rc = rename_all(tmp, path, n, force);
    for (int i = 0; i < n; i++) {
        if (fclose(fp[i]) != 0 && !rc) {
            rc = ddtk_fail(DDTK_ESYS, "%s: write error: %s", path[i], strerror(errno));
            for (int j = 0; j < n; j++)
                if (!tmp[j] && !ddtk_temp_is_special(path[j]))
                    unlink(path[j]);
        }
        fp[i] = NULL;
        ddtk_temp_remove(&tmp[i]);
    }
    return rc;
}

int ddtk_temp_commit(FILE *fp, char **tmp, const char *path)
{
    return ddtk_temp_commit_all(&fp, tmp, &path, 1, 1);
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
