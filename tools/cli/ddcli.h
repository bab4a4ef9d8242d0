/*
 * ddcli.h - command line shared by the dedispersion tools (see ddcli.c).
 */
#ifndef DDTK_DDCLI_H
#define DDTK_DDCLI_H

#include "cli.h"
#include "sps.h"

#include <getopt.h>

typedef struct ddtk_ddargs {
    const char *input;            /* the first input (NULL: stdin) */
    const char *const *inputs;    /* all of them: several PSRFITS files of one observation */
    int ninputs;
    ddtk_dmlist dms;
    int dm_given, tol_given, list_gpus;
    double dm_min, dm_max, dm_step, tol, pulse_width;
    const char *dm_list_file;
    const char *plan_file;        /* --plan */
    int scrunch;                  /* --scrunch: -1 not given (follow the plan), 0 none, 1 auto */
    int *downsamp;                /* per DM scrunch factor, NULL for none */
    char *default_prefix;
    const char *killfile;
    int pad;
    int nbits_out;                /* --nbits-out: 8, 16 or 32 */
    int nbits_scale, nbits_scale_given; /* --nbits-scale: DDTK_QUANT_NOISE or _SUM */
    double *freqs;                /* desc's channel frequencies and kill mask */
    uint8_t *kill;
    const char *wisdom;           /* --wisdom FILE */
    int no_wisdom, tune;          /* --no-wisdom, --tune */
    int dms_fixed;                /* the tool set dms and downsamp itself (dd_tree) */
    int gpus[DDTK_MAX_GPUS];      /* --gpu LIST (desc.gpus points here) */
    ddtk_clean_opts clean;        /* --rfi, --rfi-clip, --mask */
    int search;                   /* --search: PREFIX.cand from each series' single pulses */
    int search_opts;              /* --snr, --max-width or --search-window given */
    ddtk_sps_params sps;
    ddtk_outspec out;
    ddtk_plan_desc desc;          /* kdm, fref, rounding, resources, backend ... */
} ddtk_ddargs;

/* The options' help: every one; without output options (ddtune); without
 * the DM-trial options the tree does not take (dd_tree). */
extern const char ddtk_ddcli_help[], ddtk_ddcli_tune_help[], ddtk_ddcli_own_dms_help[];

void ddtk_ddargs_init(ddtk_ddargs *a);
void ddtk_ddargs_free(ddtk_ddargs *a);
int ddtk_ddargs_parse(ddtk_ddargs *a, int argc, char **argv,
                      const struct option *extra, int nextra,
                      ddtk_option_handler handler, void *ctx, void (*help)(void));
/* Open the input(s); -v prints how a PSRFITS input is read. */
int ddtk_ddargs_open(const ddtk_ddargs *a, ddtk_input *in);
/* DDTK_EUSAGE when an output option was given to a tool that writes no series. */
int ddtk_ddargs_no_outputs(const ddtk_ddargs *a);
/* Build the DM list from the options and the input header; set the default prefix. */
int ddtk_ddargs_resolve(ddtk_ddargs *a, const ddtk_header *h);
/* The DMs of an algorithm that computes its own (dd_tree, dd_fdmt, ddtune
 * --algorithm tree|fdmt), from --dm-min (default 0) to --dm-max for the
 * input, into a->dms and a->downsamp; the parameters the list resolves (the
 * tree's sub_chans) are set in a->desc. The other DM options are usage
 * errors, and so is a missing --dm-max. */
int ddtk_ddargs_own_dms(ddtk_ddargs *a, const ddtk_input *in);
/* --list-dms: those DMs, a line each with its scrunch factor, on stdout. */
int ddtk_ddargs_list_dms(const ddtk_ddargs *a);
/* Resolve the DMs and describe the plan of the tool's algorithm for the input
 * in a->desc (killfile, scrunch factors), with the built-in kernel configuration. */
int ddtk_ddargs_describe(ddtk_ddargs *a, const ddtk_input *in);
/* The same, then the kernel configuration (wisdom, --tune, DDTK_GPU_CONFIG:
 * the GPU kernel variant of benchmark sweeps), and the plan. */
int ddtk_ddargs_plan(ddtk_ddargs *a, const ddtk_input *in, ddtk_plan **plan);
/*
 * The .inf notes of a run, in short lines with the killed channels early
 * (PRESTO's reader keeps lines of under 100 characters and about the first
 * 500 characters of the notes): "Dedispersed by ddtk VERSION TOOL (ALGORITHM
 * algorithm, BACKEND backend)", the algorithm's `lead` lines, the killed
 * channels, its `trail` lines, the dispersion constant and reference (and,
 * with rounding, how delays were rounded), --zerodm, time scrunching when
 * `scrunched`, then how the input was read (PSRFITS: the input's notes).
 * lead and trail are "" or lines each ending in a newline.
 */
typedef struct ddtk_notes {
    const char *tool, *algorithm; /* "dd_subband", "sub-band" */
    const char *lead, *trail;
    int rounding, scrunched;
} ddtk_notes;
/* Run a plan on the input into the outputs the options name, with those
 * notes in every .inf, and print the summary unless -q. */
int ddtk_ddargs_run(ddtk_ddargs *a, ddtk_input *in, ddtk_plan *plan, const ddtk_notes *notes);

/* What a dd_* tool adds to the shared command line: its algorithm (each of
 * whose parameters is an option --NAME, underscores as dashes, set in
 * a->desc), its own options (handled with ctx), its help, a check after
 * parsing (NULL: none) and its work on the opened input. */
typedef struct ddtk_ddtool {
    const char *algorithm;
    const struct option *options;
    int noptions;
    ddtk_option_handler option;
    void *ctx;
    void (*help)(void);
    int (*check)(const ddtk_ddargs *a);
    int (*run)(ddtk_ddargs *a, ddtk_input *in, void *ctx);
} ddtk_ddtool;
/* The whole main of such a tool: parse into a, then --list-gpus or the run,
 * and the exit status. */
int ddtk_ddtool_main(const ddtk_ddtool *t, ddtk_ddargs *a, int argc, char **argv);

#endif
