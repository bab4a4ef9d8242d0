/*
 * test_rfi.c - the RFI cleaner's output does not depend on how it is read:
 * reads of fewer spectra than a block, of a block and a few, of several
 * blocks and of the whole input, on 1, 2, 3 and 7 threads (the read-ahead
 * cleans whole blocks for small reads), give the cleaned bytes of one read
 * on one thread, and the same report; the spectra delivered and the end are
 * counted as they are delivered, through a last partial block and to
 * reads that end exactly at the end, and reads of several whole blocks
 * and part of one more (cleaned in place, the part read ahead). The same for
 * sub-byte samples with two IFs, for a PRESTO mask's blocks (its interval,
 * not a power of two) and for stdin through a pipe (no seeking), where a
 * live stream's first block comes out before the next is sent.
 */
#include "ddtk.h"
#include "internal.h"
#include "check.h"
#include "sim_file.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 5 whole blocks and a partial one */
#define NSAMP (5 * DDTK_RFI_BLOCK + 1000)
#define MASK_PTS 1000

static char dir[] = "/tmp/ddtk_rfi_XXXXXX";

/* An observation with a burst, persistent narrow-band RFI, broadband
 * impulses (pulses at DM 0) and dropouts. */
static void write_input(const char *path, int nchans, int nbits, int nifs)
{
    ddtk_sim s;
    ddtk_sim_pulse pulse[] = {
        { .t = 1.0, .dm = 60, .width = 0.002, .amp = 20 },
        { .t = 0.4, .dm = 0, .width = 0.0003, .amp = 50 },
        { .t = 2.2, .dm = 0, .width = 0.0003, .amp = 50 },
    };
    sim_file_init(&s, nchans, nbits, nifs, -1, NSAMP, 11);
    s.pulses = pulse;
    s.npulses = 3;
    s.rfi_chan_frac = 0.1;
    s.rfi_chan_amp = 5;
    s.dropout_rate = 1;
    s.dropout_len = 0.01;
    sim_file_write(&s, path);
}

/* A PRESTO rfifind mask (mask.c's layout) of intervals of MASK_PTS spectra
 * zapping channels 3 and 17 throughout and interval 4 whole. */
static void write_mask(const char *path, int nchans)
{
    const int nint = NSAMP / MASK_PTS + 1, chans[] = { 3, 17 }, zint = 4;
    const double head[6] = { 6, 10, 60000, MASK_PTS * 0.000256, 1373, 1 };
    const int hd[4] = { nchans, nint, MASK_PTS, 2 }, one = 1;
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    fwrite(head, sizeof(double), 6, fp);
    fwrite(hd, sizeof(int), 4, fp);
    fwrite(chans, sizeof(int), 2, fp);
    fwrite(&one, sizeof(int), 1, fp);
    fwrite(&zint, sizeof(int), 1, fp);
    for (int i = 0; i < nint; i++) {
        int per = i == zint ? nchans : 2;
        fwrite(&per, sizeof(int), 1, fp);
    }
    for (int i = 0; i < nint; i++)
        if (i != zint)
            fwrite(chans, sizeof(int), 2, fp);
    fclose(fp);
}

typedef struct cleaned {
    uint8_t *bytes;
    int64_t nbytes, spectra;
    ddtk_rfi_report rep;
} cleaned;

/* Clean path (NULL: stdin) in reads of chunk spectra on threads threads,
 * checking the count of what is delivered and the end as it goes. */
static cleaned clean(const char *path, const ddtk_clean_opts *o, int64_t chunk, int threads)
{
    ddtk_input in;
    cleaned c = { 0 };
    CHECK(ddtk_input_open(&in, path ? path : "-") == DDTK_OK);
    CHECK(ddtk_input_clean(&in, o) == DDTK_OK);
    ddtk_threads_set(threads);
    c.bytes = malloc((size_t)ddtk_input_bytes(&in, NSAMP + chunk));
    int64_t got;
    do {
        CHECK(ddtk_input_read(&in, c.bytes + ddtk_input_bytes(&in, c.spectra), chunk, &got)
              == DDTK_OK);
        c.spectra += got;
        CHECK(in.samples_read == c.spectra);
        /* the end is told with the last spectra, or by the next read */
        CHECK(got == chunk || in.eof);
        CHECK(!in.eof || c.spectra == NSAMP);
    } while (got == chunk && !in.eof);
    CHECK(in.eof && c.spectra == NSAMP);
    CHECK(ddtk_input_read(&in, c.bytes, chunk, &got) == DDTK_OK && got == 0);
    CHECK(in.samples_read == NSAMP);
    c.nbytes = ddtk_input_bytes(&in, c.spectra);
    ddtk_input_clean_report(&in, &c.rep);
    ddtk_input_close(&in);
    ddtk_threads_set(0);
    return c;
}

static int same(const cleaned *a, const cleaned *b)
{
    return a->nbytes == b->nbytes && memcmp(a->bytes, b->bytes, (size_t)a->nbytes) == 0
           && memcmp(&a->rep, &b->rep, sizeof a->rep) == 0;
}

/* Every read size on every thread count against one read on one thread. */
static void check_reads(const char *path, const ddtk_clean_opts *o, const char *what)
{
    /* 6644: three whole blocks in place and the fourth, where the read ends,
     * read ahead in the same pass (on up to 5 threads; the GPU's gulps) */
    static const int64_t chunks[] = { 1000, 2048, 2056, NSAMP / 4, 3000, 8192, 6644, 4 * NSAMP };
    static const int threads[] = { 1, 2, 3, 7 };
    cleaned ref = clean(path, o, 4 * NSAMP, 1);
    CHECK(ref.rep.blocks > 0 && ref.rep.samples_masked > 0);
    if (o->auto_rfi)
        CHECK(ref.rep.chans_ever > 0 && ref.rep.spectra_clipped > 0);
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
        for (size_t j = 0; j < sizeof threads / sizeof threads[0]; j++) {
            cleaned c = clean(path, o, chunks[i], threads[j]);
            if (!same(&c, &ref)) {
                fprintf(stderr, "%s: reads of %lld on %d threads differ\n", what,
                        (long long)chunks[i], threads[j]);
                CHECK(0);
            }
            free(c.bytes);
        }
    free(ref.bytes);
}

/* path's cleaning from stdin, a pipe a child process fills. */
static void check_stdin(const char *path, const ddtk_clean_opts *o)
{
    cleaned ref = clean(path, o, 4 * NSAMP, 1);
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *fp = fopen(path, "rb");
        char buf[65536];
        size_t n;
        close(fd[0]);
        while (fp && (n = fread(buf, 1, sizeof buf, fp)) > 0)
            if (write(fd[1], buf, n) != (ssize_t)n)
                _exit(1);
        _exit(0);
    }
    close(fd[1]);
    CHECK(dup2(fd[0], 0) == 0);
    close(fd[0]);
    cleaned c = clean(NULL, o, 1000, 3);
    CHECK(same(&c, &ref));
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    free(c.bytes);
    free(ref.bytes);
}

/* A live stream on stdin: the first block's cleaned spectra come out as
 * soon as that block is in, not after a read-ahead of several threads'
 * blocks that have not been sent yet (the writer waits for a go between the
 * two blocks it sends and the rest; the alarm fails a read that waits). */
static void check_live(const char *path, const ddtk_clean_opts *o)
{
    cleaned ref = clean(path, o, 4 * NSAMP, 1);
    ddtk_input probe;
    CHECK(ddtk_input_open(&probe, path) == DDTK_OK);
    const size_t first = (size_t)probe.hdr.header_bytes
                         + (size_t)ddtk_input_bytes(&probe, 2 * DDTK_RFI_BLOCK);
    ddtk_input_close(&probe);
    int fd[2], go[2];
    CHECK(pipe(fd) == 0 && pipe(go) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *fp = fopen(path, "rb");
        char buf[65536], c;
        size_t n, sent = 0;
        close(fd[0]);
        close(go[1]);
        while (fp && (n = fread(buf, 1, sizeof buf, fp)) > 0) {
            for (size_t at = 0; at < n;) {
                size_t part = sent < first && first - sent < n - at ? first - sent : n - at;
                if (write(fd[1], buf + at, part) != (ssize_t)part)
                    _exit(1);
                sent += part;
                at += part;
                if (sent == first && read(go[0], &c, 1) != 1)
                    _exit(1);
            }
        }
        _exit(0);
    }
    close(fd[1]);
    close(go[0]);
    CHECK(dup2(fd[0], 0) == 0);
    close(fd[0]);
    clearerr(stdin);              /* check_stdin read its pipe to the end */
    ddtk_input in;
    CHECK(ddtk_input_open(&in, "-") == DDTK_OK);
    CHECK(ddtk_input_clean(&in, o) == DDTK_OK);
    ddtk_threads_set(7);
    uint8_t *bytes = malloc((size_t)ref.nbytes);
    int64_t got, total = 0;
    alarm(20);
    CHECK(ddtk_input_read(&in, bytes, DDTK_RFI_BLOCK, &got) == DDTK_OK && got == DDTK_RFI_BLOCK);
    alarm(0);
    CHECK(write(go[1], "g", 1) == 1);
    for (total = got; got > 0; total += got)
        CHECK(ddtk_input_read(&in, bytes + ddtk_input_bytes(&in, total), 3000, &got) == DDTK_OK);
    CHECK(total == NSAMP && memcmp(bytes, ref.bytes, (size_t)ref.nbytes) == 0);
    ddtk_input_close(&in);
    ddtk_threads_set(0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(go[1]);
    free(bytes);
    free(ref.bytes);
}

int main(void)
{
    char fil8[256], fil2[256], mask[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fil8, sizeof fil8, "%s/a.fil", dir);
    snprintf(fil2, sizeof fil2, "%s/b.fil", dir);
    snprintf(mask, sizeof mask, "%s/a.mask", dir);
    write_input(fil8, 64, 8, 1);
    write_input(fil2, 32, 2, 2);
    write_mask(mask, 64);
    ddtk_clean_opts o = { .auto_rfi = 1 };
    check_reads(fil8, &o, "8-bit --rfi auto");
    check_reads(fil2, &o, "2-bit, 2 IFs, --rfi auto");
    o.mask = mask;
    check_reads(fil8, &o, "8-bit --rfi auto --mask");
    o.auto_rfi = 0;
    check_reads(fil8, &o, "8-bit --mask");
    o.auto_rfi = 1;
    o.mask = NULL;
    check_stdin(fil8, &o);
    check_live(fil8, &o);
    unlink(fil8);
    unlink(fil2);
    unlink(mask);
    rmdir(dir);
    return check_result();
}
