/*
 * error.c - the library's error message slot and checked allocation.
 *
 * Library calls return a DDTK_E* code and leave one line here; the tools print
 * it with their name and exit with the code (SPEC section 4).
 */
#include "internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static __thread char errbuf[1024];

/* Formatted apart first, so that a message may quote the one it replaces
 * (ddtk_fail(..., "line %d: %s", n, ddtk_errmsg())). */
int ddtk_fail(int code, const char *fmt, ...)
{
    char msg[sizeof errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(errbuf, msg, sizeof errbuf);
    return code;
}

const char *ddtk_errmsg(void)
{
    return errbuf[0] ? errbuf : "unknown error";
}

void ddtk_thread_error_init(ddtk_thread_error *e)
{
    pthread_mutex_init(&e->lock, NULL);
    e->rc = DDTK_OK;
    e->job = 0;
    e->msg[0] = '\0';
}

void ddtk_thread_error_keep(ddtk_thread_error *e, int job, int rc)
{
    pthread_mutex_lock(&e->lock);
    if (!e->rc || job < e->job) {
        e->job = job;
        snprintf(e->msg, sizeof e->msg, "%s", ddtk_errmsg());
        __atomic_store_n(&e->rc, rc, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&e->lock);
}

/* Lock-free: the writer asks once per series of every gulp. */
int ddtk_thread_error_code(ddtk_thread_error *e)
{
    return __atomic_load_n(&e->rc, __ATOMIC_ACQUIRE);
}

int ddtk_thread_error_end(ddtk_thread_error *e)
{
    pthread_mutex_destroy(&e->lock);
    return e->rc ? ddtk_fail(e->rc, "%s", e->msg) : DDTK_OK;
}

void *ddtk_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        ddtk_fail(DDTK_ESYS, "out of memory allocating %zu bytes for %s", bytes, what);
    return p;
}

void *ddtk_grow(void *buf, int64_t *cap, size_t elem, int64_t first, const char *what)
{
    int64_t c = *cap ? 2 * *cap : first;
    void *p = realloc(buf, (size_t)c * elem);
    if (!p) {
        ddtk_fail(DDTK_ESYS, "out of memory for %s", what);
        return NULL;
    }
    *cap = c;
    return p;
}

void *ddtk_calloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        ddtk_fail(DDTK_ESYS, "out of memory allocating %zu x %zu bytes for %s", n, size, what);
    return p;
}

/* Transparent huge pages are often "madvise" only: without the advice, the
 * first touch of a 4 GiB buffer takes a million 4 KiB page faults (15 s of
 * system time for the padded tree on htru, against 13 s of its kernel). */
void *ddtk_malloc_large(size_t bytes, const char *what)
{
    const size_t huge = (size_t)2 << 20, align = bytes >= huge ? huge : 64;
    size_t n = (bytes + align - 1) / align * align;
    void *p = NULL;
    if (posix_memalign(&p, align, n ? n : align) != 0) {
        ddtk_fail(DDTK_ESYS, "out of memory allocating %zu bytes for %s", bytes, what);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (align == huge)
        madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}
