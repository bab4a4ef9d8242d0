/*
 * psrfits.h - the PSRFITS search-mode reader behind ddtk_input (psrfits.c).
 */
#ifndef DDTK_PSRFITS_H
#define DDTK_PSRFITS_H

#include "ddtk.h"

/* 1 when a file's first bytes are a FITS primary header. */
int ddtk_psrfits_sniff(const uint8_t *head, size_t n);
/* Open the n files of one observation (in time order): the header in SIGPROC
 * terms, the spectra (gaps included), .inf notes lines (malloc'd) saying how
 * the data are read and, when some DAT_WTS is 0, *dead (malloc'd, per
 * channel: 1 when its weight is 0 in every row). *p is set even on failure
 * (close it). */
int ddtk_psrfits_open(ddtk_psrfits **p, const char *const *paths, int n, ddtk_header *h,
                      int64_t *nsamples, char **notes, uint8_t **dead);
/* Up to n spectra in the header's layout; *got < n only at the end. */
int ddtk_psrfits_read(ddtk_psrfits *p, uint8_t *out, int64_t n, int64_t *got);
/* 1 when the spectra are scaled to float32, which ddtk_psrfits_read_rows
 * decodes straight into channel rows. */
int ddtk_psrfits_rows(const ddtk_psrfits *p);
/* Up to n such spectra into channel rows as ddtk_unpack lays them out
 * (out[row[c] * stride + t]; pol an IF or DDTK_POL_SUM); *got < n only at
 * the end. Reads may alternate with ddtk_psrfits_read. */
int ddtk_psrfits_read_rows(ddtk_psrfits *p, int64_t n, const int *row, int pol, float *out,
                           size_t stride, int64_t *got);
/* For the GPU: spectra per row when scaled spectra of 8 bits or fewer can be
 * read as their raw integers (ddtk_psrfits_read_scaled), else 0; *sgn: 8-bit
 * signed (a value is its byte - 128). */
int ddtk_psrfits_scaled_bytes(const ddtk_psrfits *p, int *sgn);
/* Up to n such spectra as one byte per value of the presented IFs (out:
 * n * nifs * nchans bytes, 8-bit as stored, sub-byte unpacked) and each
 * spectrum's multiply-add: seg[j] indexes tab, *nseg tables of the IFs'
 * multipliers then addends (2 * nifs * nchans floats each; table 0 is zeros,
 * for padding). value = byte * mul + add (byte - 128 when signed), as the
 * CPU decodes it; at most maxseg tables. *got < n only at the end. */
int ddtk_psrfits_read_scaled(ddtk_psrfits *p, int64_t n, uint8_t *out, int32_t *seg, float *tab,
                             int maxseg, int *nseg, int64_t *got);
void ddtk_psrfits_close(ddtk_psrfits *p);

/* How ddtk_psrfits_write lays an input out (psrfits_write.c). */
typedef struct ddtk_psrfits_layout {
    int nsblk;                    /* spectra per row */
    int64_t rows_per_file;        /* 0: one file */
    const char *pol_type;         /* NULL: AA+BB, AABB or AABBCRCI by the input's IFs */
    double scale, offset, zero_off;   /* DAT_SCL, DAT_OFFS and ZERO_OFF of every row */
    const uint8_t *zero_weight;   /* per channel, 1: DAT_WTS 0; NULL: all 1 */
    const int64_t *drop;          /* rows (over the observation, from 0) left out */
    int ndrop;
} ddtk_psrfits_layout;

/* Write a SIGPROC file input as PSRFITS search mode: path, or with several
 * files path_0001.ext, path_0002.ext ...; the input's samples unchanged (a
 * last partial row padded with zeros). *nfiles: the files written. */
int ddtk_psrfits_write(ddtk_input *in, const ddtk_psrfits_layout *l, const char *path,
                       int *nfiles);

#endif
