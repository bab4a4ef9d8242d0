/*
 * sim.c - synthetic observations: Gaussian noise, dispersed single pulses and
 * (accelerated) periodic pulsars, quantised to any SIGPROC format.
 *
 * Signals are expressed in units of the per-channel noise sigma and scaled by
 * 1/sqrt(nchans), so that `amp` is the peak S/N the pulse has in the ideally
 * dedispersed series. Intra-channel dispersion smearing broadens each pulse
 * (conserving its fluence), and single pulses are averaged over each sample
 * exactly (error functions). Generation is sequential from one seed, so a
 * seed always gives the same bytes.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SIM_BLOCK 1024          /* spectra generated at once */
#define FWHM_PER_SIGMA 2.3548200450309493
#define SPEED_OF_LIGHT 299792458.0
#define PULSE_EXTENT 6.0        /* Gaussian sigmas beyond which a pulse is zero */

typedef struct sim_state {
    const ddtk_sim *s;
    unsigned short rng[3];
    double mean, sigma, fref, scale;
    double *freq, *smear;       /* per channel: frequency, smearing per unit DM (s) */
    float *block;               /* [t * nchans + c] in units of noise sigma */
    uint8_t *packed;
    int have_spare;
    double spare;
} sim_state;

void ddtk_sim_levels(int nbits, int sgn, double *mean, double *sigma)
{
    switch (nbits) {
    case 1: *mean = 0.5; *sigma = 0.5; break;
    case 2: *mean = 1.5; *sigma = 1.0; break;
    case 4: *mean = 7.5; *sigma = 2.5; break;
    case 8: *mean = sgn ? 0.0 : 127.5; *sigma = 16.0; break;
    case 16: *mean = sgn ? 0.0 : 32767.5; *sigma = 512.0; break;
    default: *mean = 0.0; *sigma = 1.0; break;
    }
}

/* Standard normal deviates (Marsaglia polar method) from erand48. */
static double gaussian(sim_state *st)
{
    if (st->have_spare) {
        st->have_spare = 0;
        return st->spare;
    }
    double u, v, q;
    do {
        u = 2.0 * erand48(st->rng) - 1.0;
        v = 2.0 * erand48(st->rng) - 1.0;
        q = u * u + v * v;
    } while (q >= 1.0 || q == 0.0);
    double f = sqrt(-2.0 * log(q) / q);
    st->spare = v * f;
    st->have_spare = 1;
    return u * f;
}

static void add_noise(sim_state *st, int64_t n, int nvalues)
{
    for (int64_t i = 0; i < n * nvalues; i++)
        st->block[i] = (float)gaussian(st);
}

/* Pulse width after smearing within a channel, and the peak scaled to keep fluence. */
static void smeared(double width, double dm_smear, double amp, double *w_eff, double *peak)
{
    *w_eff = sqrt(width * width + dm_smear * dm_smear);
    *peak = *w_eff > 0 ? amp * width / *w_eff : amp;
}

static void add_pulse(sim_state *st, const ddtk_sim_pulse *p, int64_t s0, int64_t n)
{
    const ddtk_header *h = &st->s->hdr;
    const double ts = h->tsamp;
    for (int c = 0; c < h->nchans; c++) {
        double w, peak;
        smeared(p->width, p->dm * st->smear[c], p->amp * st->scale, &w, &peak);
        double sig = w / FWHM_PER_SIGMA;
        double tc = p->t + ddtk_delay_seconds(p->dm, st->freq[c], st->fref, st->s->kdm);
        /* clamped to the block as doubles: a pulse far outside (DM 1e300) has
         * sample numbers no integer holds */
        double first = fmax(floor((tc - PULSE_EXTENT * sig) / ts) - 1, (double)s0);
        double last = fmin(ceil((tc + PULSE_EXTENT * sig) / ts) + 1, (double)(s0 + n));
        if (!(first < last))
            continue;
        int64_t lo = (int64_t)first, hi = (int64_t)last;
        /* Mean of the Gaussian over each sample: peak * sig*sqrt(pi/2) * d(erf)/ts. */
        double norm = sig > 0 ? peak * sig * sqrt(M_PI / 2.0) / ts : 0;
        for (int64_t s = lo; s < hi; s++) {
            double a = (s * ts - tc) / (sig * M_SQRT2), b = ((s + 1) * ts - tc) / (sig * M_SQRT2);
            st->block[(s - s0) * h->nifs * h->nchans + c] += (float)(norm * (erf(b) - erf(a)));
        }
    }
}

static void add_pulsar(sim_state *st, const ddtk_sim_pulsar *p, int64_t s0, int64_t n)
{
    const ddtk_header *h = &st->s->hdr;
    const double f0 = 1.0 / p->period, fdot = p->accel * f0 / SPEED_OF_LIGHT;
    for (int c = 0; c < h->nchans; c++) {
        double w, peak;
        smeared(p->duty * p->period, p->dm * st->smear[c], p->amp * st->scale, &w, &peak);
        double sig = w / FWHM_PER_SIGMA, limit = PULSE_EXTENT * sig;
        double delay = ddtk_delay_seconds(p->dm, st->freq[c], st->fref, st->s->kdm);
        for (int64_t s = s0; s < s0 + n; s++) {
            double t = (s + 0.5) * h->tsamp - delay;
            double phase = t * (f0 + 0.5 * fdot * t);
            double dt = (phase - floor(phase + 0.5)) / (f0 + fdot * t);
            if (fabs(dt) < limit)
                st->block[(s - s0) * h->nifs * h->nchans + c] +=
                    (float)(peak * exp(-0.5 * dt * dt / (sig * sig)));
        }
    }
}

/* Copy IF 0's signal into the other IFs (each already has its own noise). */
static void copy_signal_to_ifs(sim_state *st, const float *signal, int64_t n)
{
    const ddtk_header *h = &st->s->hdr;
    for (int64_t t = 0; t < n; t++)
        for (int i = 1; i < h->nifs; i++)
            for (int c = 0; c < h->nchans; c++)
                st->block[(t * h->nifs + i) * h->nchans + c] += signal[t * h->nifs * h->nchans + c];
}

/* A number in [0, 1) from a 64-bit hash of (seed, i): RFI choices that draw
 * nothing from the noise generator. */
static double hash01(unsigned long seed, uint64_t i)
{
    uint64_t z = (uint64_t)seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static void add_rfi(sim_state *st, int64_t s0, int64_t n)
{
    const ddtk_sim *s = st->s;
    const ddtk_header *h = &s->hdr;
    const int per_spectrum = h->nchans * h->nifs;
    for (int c = 0; c < h->nchans && s->rfi_chan_frac > 0; c++) {
        if (hash01(s->seed, 3 * (uint64_t)c) >= s->rfi_chan_frac)
            continue;
        double f = 0.3 + 2.7 * hash01(s->seed, 3 * (uint64_t)c + 1);
        double phase = 2 * M_PI * hash01(s->seed, 3 * (uint64_t)c + 2);
        for (int64_t t = 0; t < n; t++) {
            double v = s->rfi_chan_amp * (1 + 0.5 * sin(2 * M_PI * f * (s0 + t) * h->tsamp + phase));
            for (int i = 0; i < h->nifs; i++)
                st->block[(t * h->nifs + i) * h->nchans + c] += (float)v;
        }
    }
    if (!(s->dropout_rate > 0))
        return;
    for (int64_t t = 0; t < n; t++) {
        double time = (s0 + t) * h->tsamp, k = floor(time * s->dropout_rate - 0.37);
        if (time - (k + 0.37) / s->dropout_rate < s->dropout_len)
            for (int e = 0; e < per_spectrum; e++)
                st->block[t * per_spectrum + e] = (float)(-st->mean / st->sigma);
    }
}

static double quantise(double x, double lo, double hi)
{
    x = floor(x + 0.5);
    return x < lo ? lo : x > hi ? hi : x;
}

static void pack(sim_state *st, int64_t nvalues)
{
    const ddtk_header *h = &st->s->hdr;
    const int nbits = h->nbits, sgn = h->signed_data == 1;
    memset(st->packed, 0, (size_t)(nvalues * nbits + 7) / 8);
    for (int64_t e = 0; e < nvalues; e++) {
        double x = st->mean + st->sigma * st->block[e];
        if (nbits < 8) {
            unsigned v = (unsigned)quantise(x, 0, (1 << nbits) - 1);
            st->packed[(e * nbits) >> 3] |= (uint8_t)(v << ((e * nbits) & 7));
        } else if (nbits == 8) {
            st->packed[e] = sgn ? (uint8_t)(int8_t)quantise(x, -128, 127)
                                : (uint8_t)quantise(x, 0, 255);
        } else if (nbits == 16) {
            uint16_t v = sgn ? (uint16_t)(int16_t)quantise(x, -32768, 32767)
                             : (uint16_t)quantise(x, 0, 65535);
            memcpy(st->packed + 2 * e, &v, 2);
        } else {
            float v = (float)x;
            memcpy(st->packed + 4 * e, &v, 4);
        }
    }
}

static int setup(sim_state *st, const ddtk_sim *s)
{
    const ddtk_header *h = &s->hdr;
    memset(st, 0, sizeof *st);
    st->s = s;
    st->rng[0] = (unsigned short)(0x330e ^ ((s->seed >> 32) & 0xffff));
    st->rng[1] = (unsigned short)(s->seed & 0xffff);
    st->rng[2] = (unsigned short)((s->seed >> 16) & 0xffff);
    ddtk_sim_levels(h->nbits, h->signed_data == 1, &st->mean, &st->sigma);
    if (!isnan(s->mean))
        st->mean = s->mean;
    if (!isnan(s->sigma))
        st->sigma = s->sigma;
    st->scale = 1.0 / sqrt((double)h->nchans * (h->nifs >= 2 ? 2 : 1));
    size_t nvalues = (size_t)SIM_BLOCK * h->nchans * h->nifs;
    st->freq = ddtk_malloc((size_t)h->nchans * sizeof *st->freq, "channel table");
    st->smear = ddtk_malloc((size_t)h->nchans * sizeof *st->smear, "channel table");
    st->block = ddtk_malloc(2 * nvalues * sizeof *st->block, "simulation block");
    st->packed = ddtk_malloc(nvalues * 4, "simulation block");
    if (!st->freq || !st->smear || !st->block || !st->packed)
        return DDTK_ESYS;
    st->fref = -INFINITY;
    for (int c = 0; c < h->nchans; c++) {
        st->freq[c] = ddtk_chan_freq(h, c);
        st->fref = fmax(st->fref, st->freq[c]);
    }
    double bw = h->nchans > 1 ? fabs(st->freq[h->nchans - 1] - st->freq[0]) / (h->nchans - 1)
                              : fabs(h->foff);
    for (int c = 0; c < h->nchans; c++)   /* 2 K dnu / f^3 per unit DM */
        st->smear[c] = h->nchans > 1 ? 2.0 * s->kdm * bw / pow(st->freq[c], 3) : 0.0;
    return DDTK_OK;
}

static void teardown(sim_state *st)
{
    free(st->freq);
    free(st->smear);
    free(st->block);
    free(st->packed);
}

int ddtk_sim_write(const ddtk_sim *s, FILE *fp, const char *name)
{
    const ddtk_header *h = &s->hdr;
    sim_state st;
    int rc = setup(&st, s);
    if (!rc)
        rc = ddtk_header_write(fp, h);
    const int per_spectrum = h->nchans * h->nifs;
    float *signal = st.block ? st.block + (size_t)SIM_BLOCK * per_spectrum : NULL;
    for (int64_t s0 = 0; !rc && s0 < s->nsamples; s0 += SIM_BLOCK) {
        int64_t n = s->nsamples - s0 < SIM_BLOCK ? s->nsamples - s0 : SIM_BLOCK;
        memset(st.block, 0, (size_t)(n * per_spectrum) * sizeof *st.block);
        for (int i = 0; i < s->npulses; i++)
            add_pulse(&st, &s->pulses[i], s0, n);
        for (int i = 0; i < s->npulsars; i++)
            add_pulsar(&st, &s->pulsars[i], s0, n);
        memcpy(signal, st.block, (size_t)(n * per_spectrum) * sizeof *signal);
        add_noise(&st, n, per_spectrum);
        for (int64_t e = 0; e < n * per_spectrum; e++)
            st.block[e] += signal[e];
        if (h->nifs > 1)
            copy_signal_to_ifs(&st, signal, n);
        add_rfi(&st, s0, n);
        pack(&st, n * per_spectrum);
        size_t bytes = (size_t)(n * per_spectrum * h->nbits + 7) / 8;
        if (fwrite(st.packed, 1, bytes, fp) != bytes)
            rc = ddtk_fail(DDTK_ESYS, "%s: write error", name);
        if (s->progress)
            s->progress(s->progress_ctx, s0 + n);
    }
    teardown(&st);
    return rc;
}
