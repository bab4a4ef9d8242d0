/*
 * report.c - the library's voice: messages and progress go to the handlers
 * the caller sets (none set: the library is silent), and the monotonic
 * clock runs are timed by. The library never writes to stdout or stderr;
 * the tools install handlers that print as they always have.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* Set once by a program before it works, read by every thread after. */
static ddtk_message_fn message_fn;
static void *message_ctx;
static ddtk_progress_fn progress_fn;
static void *progress_ctx;

void ddtk_set_message_handler(ddtk_message_fn fn, void *ctx)
{
    message_fn = fn;
    message_ctx = ctx;
}

void ddtk_set_progress_handler(ddtk_progress_fn fn, void *ctx)
{
    progress_fn = fn;
    progress_ctx = ctx;
}

void ddtk_report(int level, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    if (!message_fn)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    message_fn(message_ctx, level, text);
}

void ddtk_report_progress(int stage, const char *what, int64_t done, int64_t total)
{
    if (progress_fn)
        progress_fn(progress_ctx, stage, what, done, total);
}

double ddtk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
