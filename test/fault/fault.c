/*
 * fault.c - an LD_PRELOAD shim for the commit tests: makes one call of the
 * rename family or of fsync fail, as a full or failing disk would.
 *
 *   DDTK_FAULT=rename:N:ERRNO   the Nth rename, renameat, renameat2 or link
 *   DDTK_FAULT=fsync:N:ERRNO    the Nth fsync or fdatasync
 *
 * ERRNO is ENOSPC, EIO, EDQUOT or EXDEV. Calls are counted per process, from
 * every thread (the commit syncs files on several).
 *
 *   DDTK_SLOW=MICROSECONDS      every call of those families and of fchmod
 *                               (just after a temporary is made) waits this
 *                               long first: signals land inside (signals.bats)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int parse_errno(const char *s)
{
    static const struct { const char *name; int value; } e[] = {
        { "ENOSPC", ENOSPC }, { "EIO", EIO }, { "EDQUOT", EDQUOT }, { "EXDEV", EXDEV },
    };
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        if (strcmp(s, e[i].name) == 0)
            return e[i].value;
    return EIO;
}

/* 1 (with errno set) if this call of family is the one to fail. */
static int fail_now(const char *family)
{
    static int calls[2];
    const char *spec = getenv("DDTK_FAULT");
    char name[16], err[16];
    int n;
    if (!spec || sscanf(spec, "%15[a-z]:%d:%15s", name, &n, err) != 3 || strcmp(name, family))
        return 0;
    if (__atomic_add_fetch(&calls[family[0] == 'f'], 1, __ATOMIC_SEQ_CST) != n)
        return 0;
    errno = parse_errno(err);
    return 1;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static void slow(void)
{
    const char *us = getenv("DDTK_SLOW");
    if (us)
        usleep((useconds_t)atoi(us));
}

int fchmod(int fd, mode_t mode)
{
    slow();
    return NEXT(fchmod)(fd, mode);
}

int rename(const char *from, const char *to)
{
    slow();
    return fail_now("rename") ? -1 : NEXT(rename)(from, to);
}

int renameat(int fd1, const char *from, int fd2, const char *to)
{
    slow();
    return fail_now("rename") ? -1 : NEXT(renameat)(fd1, from, fd2, to);
}

int renameat2(int fd1, const char *from, int fd2, const char *to, unsigned flags)
{
    slow();
    return fail_now("rename") ? -1 : NEXT(renameat2)(fd1, from, fd2, to, flags);
}

int link(const char *from, const char *to)
{
    slow();
    return fail_now("rename") ? -1 : NEXT(link)(from, to);
}

int fsync(int fd)
{
    slow();
    return fail_now("fsync") ? -1 : NEXT(fsync)(fd);
}

int fdatasync(int fd)
{
    slow();
    return fail_now("fsync") ? -1 : NEXT(fdatasync)(fd);
}
