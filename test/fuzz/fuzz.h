/*
 * fuzz.h - shared by the libFuzzer harnesses (make fuzz): the parsers that
 * take a path get the input through a memfd, named /proc/self/fd/N.
 */
#ifndef DDTK_FUZZ_H
#define DDTK_FUZZ_H

#define _GNU_SOURCE               /* memfd_create */
#include "ddtk.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The input as a file: the same memfd, rewritten for every input. */
static inline const char *fuzz_path(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("ddtk-fuzz", MFD_CLOEXEC);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    return path;
}

/* The input as a NUL-terminated string (caller frees). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
