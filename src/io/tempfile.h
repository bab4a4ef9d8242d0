/*
 * tempfile.h - hidden temporaries renamed into place when complete
 * (tempfile.c). Single files (.inf, --plan, tscrunch's output) use
 * create/commit/discard; output sets (output.c) take the steps one by one, so
 * that every file of a set is on disk before the first is renamed and a failed
 * commit can be undone. Not installed.
 */
#ifndef DDTK_TEMPFILE_H
#define DDTK_TEMPFILE_H

#include "ddtk.h"

#include <signal.h>

/*
 * Outputs are written to a hidden temporary beside their final name
 * (tempfile.c): create opens it (*tmp gets its name; NULL for devices and
 * pipes, which are written in place); commit flushes, fsyncs and closes it and
 * renames it to path (replacing it), or removes it if that fails; discard
 * closes and removes it. Both free *tmp. Temporaries still open when SIGINT,
 * SIGTERM, SIGHUP or SIGPIPE ends the process are removed, so an interrupted
 * run leaves nothing behind; those of a run killed otherwise are removed by
 * the next output set written beside them.
 */
FILE *ddtk_temp_create(const char *path, char **tmp);
int ddtk_temp_commit(FILE *fp, char **tmp, const char *path);
void ddtk_temp_discard(FILE *fp, char **tmp);
/* Commit n files as one (a .dat and its .inf, fdas's ACCEL text and .cand):
 * each flushed and fsynced, then renamed under the directory's lock (that of
 * path[0]) with the cleanup signals held, an existing path refused unless
 * force; if any step fails, none of the n is left: those renamed are removed
 * and the rest discarded. Closes every fp[i] and frees every tmp[i]. */
int ddtk_temp_commit_all(FILE **fp, char **tmp, const char *const *path, int n, int force);

/* Devices and pipes (-o /dev/null, a FIFO) are written in place, never replaced. */
int ddtk_temp_is_special(const char *path);

/* Hold flock on the directory of path, so that runs writing there take turns
 * to create temporaries, sweep stale ones and commit; -1 where the directory
 * cannot be locked (NFS), which takes no turns. Unlock with the result. */
int ddtk_tempdir_lock(const char *path);
void ddtk_tempdir_unlock(int fd);

/* Create path's temporary ".NAME.XXXXXX" (locked while open; *tmp NULL for a
 * device or pipe, opened in place), or "<of><suffix>", which lives as long as
 * the temporary `of` does. Call with the directory lock held. */
FILE *ddtk_temp_open(const char *path, char **tmp);
FILE *ddtk_temp_open_beside(const char *of, const char *suffix, const char *path, char **tmp);

/* Flush fp, and fsync it when it is a temporary: DDTK_ESYS naming path. */
int ddtk_temp_flush(FILE *fp, const char *tmp, const char *path);
/* Rename the (closed or open) temporary *tmp to path, which must not exist
 * unless force: an existing path is DDTK_EUSAGE "exists". Frees *tmp. */
int ddtk_temp_rename(char **tmp, const char *path, int force);
/* Remove the closed temporary *tmp and free it. */
void ddtk_temp_remove(char **tmp);

/*
 * Remove the temporaries of dead runs beside path: those whose final name
 * owned() accepts and that no live process holds. One note (ddtk_report) says
 * how many went. Call with the directory lock held.
 */
int ddtk_temp_sweep(const char *path, int (*owned)(const char *name, const void *ctx),
                    const void *ctx);

/* Hold off the cleanup of SIGINT, SIGTERM, SIGHUP and SIGPIPE while a set is
 * committed: the signal, on whichever thread it comes, waits until every
 * thread has released (sections nest; a thread that would hold after the
 * signal came waits for the end instead). */
void ddtk_temp_hold_signals(sigset_t *old);
void ddtk_temp_release_signals(const sigset_t *old);

#endif
