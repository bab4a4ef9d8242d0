/*
 * tempfile.c - temporary files and how they become outputs.
 *
 * An output is written to a hidden temporary ".NAME.XXXXXX" beside NAME and
 * renamed when complete. Temporaries still open when SIGINT, SIGTERM, SIGHUP
 * or SIGPIPE ends the process are removed.
 */
#include "tempfile.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Temporaries not yet committed, for the signal handler to remove. The list
 * only changes with those signals blocked, so the handler sees it whole. */
static char **pending;
static size_t npending, cap_pending;
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NCLEANUP (sizeof cleanup_signals / sizeof cleanup_signals[0])

static void remove_pending(int sig)
{
    for (size_t i = 0; i < npending; i++)
        unlink(pending[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void block_cleanup(int how, sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < NCLEANUP; i++)
        sigaddset(&set, cleanup_signals[i]);
    sigprocmask(how, how == SIG_BLOCK ? &set : old, how == SIG_BLOCK ? old : NULL);
}

static int track(char *tmp)
{
    sigset_t old;
    int ok = 1;
    block_cleanup(SIG_BLOCK, &old);
    if (!pending)
        for (size_t i = 0; i < NCLEANUP; i++) {
            struct sigaction sa = { .sa_handler = remove_pending };
            struct sigaction prev;
            sigaction(cleanup_signals[i], NULL, &prev);
            if (prev.sa_handler == SIG_DFL)   /* leave ignored signals ignored */
                sigaction(cleanup_signals[i], &sa, NULL);
        }
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
    block_cleanup(SIG_SETMASK, &old);
    return ok;
}

static void untrack(const char *tmp)
{
    sigset_t old;
    block_cleanup(SIG_BLOCK, &old);
    for (size_t i = 0; i < npending; i++)
        if (pending[i] == tmp) {
            pending[i] = pending[--npending];
            break;
        }
    block_cleanup(SIG_SETMASK, &old);
}

int ddtk_temp_is_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/* Create a hidden temporary beside path; *tmp receives its name (NULL when
 * path is a device or pipe, which is opened directly). */
FILE *ddtk_temp_create(const char *path, char **tmp)
{
    if (ddtk_temp_is_special(path)) {
        *tmp = NULL;
        FILE *fp = fopen(path, "wb");
        if (!fp)
            ddtk_fail(DDTK_ESYS, "%s: cannot open: %s", path, strerror(errno));
        return fp;
    }
    char *copy1 = strdup(path), *copy2 = strdup(path);
    size_t n = strlen(path) + 16;
    *tmp = malloc(n);
    FILE *fp = NULL;
    if (copy1 && copy2 && *tmp) {
        snprintf(*tmp, n, "%s/.%s.XXXXXX", dirname(copy1), basename(copy2));
        int fd = mkstemp(*tmp);
        if (fd >= 0) {
            mode_t mask = umask(0);
            umask(mask);
            fchmod(fd, 0666 & ~mask);
            fp = fdopen(fd, "wb");
            if (!fp)
                close(fd);
        }
    }
    if (fp && !track(*tmp)) {
        fclose(fp);
        fp = NULL;
        errno = ENOMEM;
    }
    if (!fp) {
        int err = errno;
        ddtk_fail(DDTK_ESYS, "%s: cannot create: %s", path, strerror(err));
        if (*tmp && (*tmp)[0])
            unlink(*tmp);
        free(*tmp);
        *tmp = NULL;
    }
    free(copy1);
    free(copy2);
    return fp;
}

int ddtk_temp_commit(FILE *fp, char **tmp, const char *path)
{
    int bad = ferror(fp);
    bad |= fclose(fp) != 0;
    int rc = DDTK_OK;
    if (bad)
        rc = ddtk_fail(DDTK_ESYS, "%s: write error: %s", path, strerror(errno));
    else if (*tmp && rename(*tmp, path) != 0)
        rc = ddtk_fail(DDTK_ESYS, "%s: cannot rename from %s: %s", path, *tmp, strerror(errno));
    if (*tmp) {
        if (rc)
            unlink(*tmp);
        untrack(*tmp);
        free(*tmp);
        *tmp = NULL;
    }
    return rc;
}

void ddtk_temp_discard(FILE *fp, char **tmp)
{
    if (fp)
        fclose(fp);
    if (*tmp) {
        unlink(*tmp);
        untrack(*tmp);
        free(*tmp);
        *tmp = NULL;
    }
}
