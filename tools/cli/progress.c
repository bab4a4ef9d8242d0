/*
 * progress.c - progress on stderr (a tool's own, or the library's through
 * ddtk_cli_progress) and the end-of-run summary line.
 *
 * A bar when stderr is a terminal; otherwise, with -v, a plain line every few
 * seconds; nothing with -q. With a known total both say the time left, at
 * the rate so far.
 */
#include "ddtk.h"
#include "cli.h"

#include <unistd.h>

#define PLAIN_INTERVAL 5.0
#define BAR_INTERVAL 0.2
#define BAR_WIDTH 40

void ddtk_progress_start(ddtk_progress *p, const char *what, int64_t total,
                         int quiet, int verbose)
{
    p->start = p->last = ddtk_now();
    p->total = total;
    p->done = 0;
    p->tty = isatty(STDERR_FILENO);
    p->quiet = quiet;
    p->verbose = verbose;
    p->what = what;
}

/* Seconds left at the rate so far; negative when not known yet. */
static double time_left(const ddtk_progress *p, double elapsed)
{
    if (p->total <= 0 || p->done <= 0 || elapsed <= 0)
        return -1;
    return elapsed * (double)(p->total - p->done) / (double)p->done;
}

static void draw_bar(const ddtk_progress *p, double elapsed)
{
    if (p->total > 0) {
        double frac = (double)p->done / (double)p->total, left = time_left(p, elapsed);
        int fill = (int)(frac * BAR_WIDTH + 0.5);
        fprintf(stderr, "\r%s: [%.*s%*s] %5.1f%% %6.1f s", ddtk_progname, fill,
                "########################################", BAR_WIDTH - fill, "",
                100.0 * frac, elapsed);
        if (left >= 0)
            fprintf(stderr, ", %.0f s left ", left);
    } else
        fprintf(stderr, "\r%s: %lld %s %6.1f s", ddtk_progname, (long long)p->done,
                p->what, elapsed);
}

void ddtk_progress_update(ddtk_progress *p, int64_t done)
{
    p->done = done;
    if (p->quiet || (!p->tty && !p->verbose))
        return;
    double now = ddtk_now();
    if (now - p->last < (p->tty ? BAR_INTERVAL : PLAIN_INTERVAL))
        return;
    p->last = now;
    if (p->tty)
        draw_bar(p, now - p->start);
    else if (p->total > 0)
        ddtk_msg("%lld of %lld %s (%.0f%%), %.1f s, %.0f s left", (long long)done,
                 (long long)p->total, p->what, 100.0 * (double)done / (double)p->total,
                 now - p->start, time_left(p, now - p->start));
    else
        ddtk_msg("%lld %s, %.1f s", (long long)done, p->what, now - p->start);
}

void ddtk_progress_end(ddtk_progress *p)
{
    if (!p->quiet && p->tty && p->last > p->start) {
        draw_bar(p, ddtk_now() - p->start);
        fputc('\n', stderr);
    }
}

/* One bar or line at a time: the library reports the progress of one run. */
static ddtk_progress shown;
int ddtk_cli_verbose;

void ddtk_cli_progress(void *ctx, int stage, const char *what, int64_t done, int64_t total)
{
    (void)ctx;
    if (stage == DDTK_PROGRESS_START)
        ddtk_progress_start(&shown, what, total, 0, ddtk_cli_verbose);
    else if (stage == DDTK_PROGRESS_UPDATE)
        ddtk_progress_update(&shown, done);
    else
        ddtk_progress_end(&shown);
}

void ddtk_print_summary(const ddtk_run_stats *s, const char *algorithm)
{
    double adds = s->adds;
    char written[64] = "", committed[96] = "";
    if (s->nlen > s->nout)
        snprintf(written, sizeof written, " (padded to %lld)", (long long)s->nlen);
    else if (s->nlen < s->nout)
        snprintf(written, sizeof written, " (trimmed to %lld)", (long long)s->nlen);
    if (s->commit >= 0.0005)
        snprintf(committed, sizeof committed, " (the wall includes %.3f s committing the output "
                 "files)", s->commit);
    ddtk_msg("%lld samples in, %lld out per DM%s, %d DMs, %d channels (%d killed), %s, %s; "
             "%.3f s wall, %.3f s kernel, %.3g sample-adds/s, real-time factor %.3g%s",
             (long long)s->nin, (long long)s->nout, written, s->ndm, s->nlive + s->nkilled,
             s->nkilled,
             algorithm, s->backend, s->wall, s->kernel,
             s->kernel > 0 ? adds / s->kernel : 0.0, s->wall > 0 ? s->tobs / s->wall : 0.0,
             committed);
}
