#!/usr/bin/env bats
# PSRFITS search-mode input: fbsim's PSRFITS in every layout against the same
# samples as a filterbank, bad files, and the real files of ../shared/data/real.
load common

REAL=$BATS_TEST_DIRNAME/../../shared/data/real

# sim ARGS...: the observation of these tests, more options after it
sim() {
    fbsim -q --nchans 32 --nsamples 4096 --pulse 0.1,30,0.001,40 --seed 7 --force "$@"
}

# dat FILE... -o OUT [more]: the DM 30 series as raw float32 (.dat), exact length
dat() {
    dd_direct -q --dm 30 --format dat --length exact --force "$@"
}

# the bytes of row 1's DATA cell of a PSRFITS file (NAXIS1 and the DATA
# column's offset from its header), hex
fits_data_hex() {
    "$PYTHON" - "$1" "$2" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
pos, hdus = 0, []
while len(hdus) < 2:
    cards = []
    while True:
        blk = d[pos:pos + 2880]; pos += 2880
        cards += [blk[i:i + 80].decode() for i in range(0, 2880, 80)]
        if any(c.startswith('END ') or c.rstrip() == 'END' for c in cards[-36:]):
            break
    hdus.append(cards)
    if len(hdus) == 2:
        break
def key(cards, k):
    for c in cards:
        if c[:8].strip() == k:
            return c[10:].split('/')[0].strip().strip("'").strip()
cards = hdus[1]
widths = {'D': 8, 'E': 4, 'B': 1, 'I': 2, 'J': 4}
off = 0
for i in range(1, int(key(cards, 'TFIELDS')) + 1):
    f = key(cards, 'TFORM%d' % i)
    if key(cards, 'TTYPE%d' % i) == 'DATA':
        break
    off += int(f[:-1] or 1) * widths[f[-1]]
n = int(sys.argv[2])
print(d[pos + off:pos + off + n].hex())
EOF
}

@test "psrfits: sub-byte samples are packed most significant first (PSRFITS), read back as the filterbank's" {
    for nbits in 1 2 4; do
        fbsim -q -o a.fil --nchans 16 --nbits $nbits --nsamples 64 --seed 3 --force
        fbsim -q -o a.fits --format psrfits --nsblk 64 --nchans 16 --nbits $nbits --nsamples 64 \
            --seed 3 --force
        hdr=$(fbinfo a.fil -k header_size)
        # the filterbank's first 8 bytes with the nbits-bit groups of each byte reversed
        want=$(tail -c +$((hdr + 1)) a.fil | head -c 8 | od -An -v -tu1 |
            awk -v b=$nbits '{ for (i = 1; i <= NF; i++) { v = $i; r = 0; m = 2 ^ b;
                for (k = 0; k < 8 / b; k++) { r = r * m + v % m; v = int(v / m) }
                printf "%02x", r } }')
        [ "$(fits_data_hex a.fits 8)" = "$want" ]
        tscrunch -q -n 1 --nbits-out 8 --force a.fits -o b.fil
        tscrunch -q -n 1 --nbits-out 8 --force a.fil -o c.fil
        cmp <(tail -c +$(($(fbinfo b.fil -k header_size) + 1)) b.fil) \
            <(tail -c +$(($(fbinfo c.fil -k header_size) + 1)) c.fil)
    done
}

@test "psrfits: every nbits (1, 2, 4, 8, 16, float; signed 8 and 16) gives the filterbank's series byte for byte" {
    for f in "1" "2" "4" "8" "8 --signed" "16" "16 --signed" "32"; do
        set -- $f
        sim -o a.fil --nbits $1 ${2:-}
        sim -o a.fits --format psrfits --nsblk 256 --nbits $1 ${2:-}
        [ "$(fbinfo a.fits -k nbits)" = "$1" ]
        dat a.fil -o a.dat
        dat a.fits -o b.dat
        cmp a.dat b.dat
        # gulps that end inside rows: the rows read one at a time
        dat a.fits -o c.dat --gulp 200
        cmp a.dat c.dat
    done
}

@test "psrfits: NPOL 2 (AABB) and 4 (AABBCRCI) are AA+BB, IQUV is I" {
    sim -o p2.fil --nifs 2
    sim -o p2.fits --format psrfits --nsblk 512 --nifs 2
    dat p2.fil -o a.dat
    dat p2.fits -o b.dat
    cmp a.dat b.dat
    sim -o p4.fil --nifs 4
    sim -o p4.fits --format psrfits --nsblk 512 --nifs 4
    [ "$(fbinfo p4.fits -k nifs)" = 2 ]
    dat p4.fil -o a.dat
    dat p4.fits -o b.dat
    cmp a.dat b.dat
    sim -o iquv.fits --format psrfits --nsblk 512 --nifs 4 --pol-type IQUV
    [ "$(fbinfo iquv.fits -k nifs)" = 1 ]
    dat p4.fil --pol 0 -o a.dat
    dat iquv.fits -o b.dat
    cmp a.dat b.dat
}

@test "psrfits: an ascending band (DAT_FREQ float32) equals its filterbank and the flipped band" {
    sim -o u.fil --fch1 1469 --foff 1
    sim -o u.fits --format psrfits --nsblk 512 --fch1 1469 --foff 1
    [ "$(fbinfo u.fits -k foff)" = 1 ]
    [ "$(fbinfo u.fits -k fch1)" = 1469 ]
    fbflip u.fil d.fil
    dat u.fil -o a.dat
    dat u.fits -o b.dat
    dat d.fil -o c.dat
    cmp a.dat b.dat
    cmp a.dat c.dat
}

@test "psrfits: DAT_SCL, DAT_OFFS and ZERO_OFF are applied: float32 input, exact sums" {
    sim -o a.fil
    sim -o s.fits --format psrfits --nsblk 512 --dat-scl 2 --dat-offs 3 --zero-off 1
    [ "$(fbinfo s.fits -k nbits)" = 32 ]
    dat a.fil -o a.dat
    dat s.fits -o b.dat
    # each channel's value is (x - 1) * 2 + 3, so a sum of 32 is 2 S + 32
    "$PYTHON" -c "
import numpy as np
a = np.fromfile('a.dat', np.float32); b = np.fromfile('b.dat', np.float32)
assert len(a) == len(b) == 4059 and np.array_equal(b, 2 * a + 32), 'differ'"
}

@test "psrfits: scaled rows decoded straight into the engine's rows equal the float32 spectra" {
    # dd_direct decodes scaled rows into its channel rows (no float32
    # spectra); tscrunch reads the float32 spectra: the same values. NPOL 2,
    # zero weights, missing rows, several files, gulps that end inside rows.
    echo 3:5,20 > kill.txt
    sim -o s.fits --format psrfits --nsblk 100 --nifs 2 --rows-per-file 15 --drop-rows 4,30 \
        --dat-scl 1.5 --dat-offs -2 --zero-off 0.5 --zero-weight kill.txt
    tscrunch -q -n 1 s_000?.fits -o f.fil
    [ "$(fbinfo f.fil -k nbits)" = 32 ]
    [ "$(fbinfo f.fil -k nifs)" = 2 ]
    for pol in sum 0 1; do
        dat f.fil --pol $pol --killfile kill.txt -o a.dat
        dat s_000?.fits --pol $pol -o b.dat --gulp 136
        dat s_000?.fits --pol $pol -o c.dat
        cmp a.dat b.dat
        cmp a.dat c.dat
    done
}

@test "psrfits: DAT_WTS of 0 kills the channel, as a killfile does" {
    echo 3:5,20 > kill.txt
    for nbits in 8 4; do
        sim -o a.fil --nbits $nbits
        sim -o w.fits --format psrfits --nsblk 512 --nbits $nbits --zero-weight kill.txt
        dat a.fil --killfile kill.txt -o a.dat
        run dat w.fits -o b.dat -v
        [ "$status" -eq 0 ]
        [[ "$output" == *"4 channels killed"* ]]
        cmp a.dat b.dat
        grep -q "Killed channels: 4 of 32" b.inf
    done
}

@test "psrfits: several files of one observation are read as one, in order" {
    sim -o a.fil
    sim -o m.fits --format psrfits --nsblk 256 --rows-per-file 5
    [ -f m_0004.fits ] && [ ! -f m_0005.fits ]
    dat a.fil -o a.dat
    dat m_0001.fits m_0002.fits m_0003.fits m_0004.fits -o b.dat
    cmp a.dat b.dat
    dd_subband -q --dm 30 --format dat --length exact a.fil -o c.dat
    dd_subband -q --dm 30 --format dat --length exact m_000?.fits -o d.dat
    cmp c.dat d.dat
    run_err m_0001.fits dd_direct --dm 30 -o x.dat m_0002.fits m_0001.fits
    [ "$status" -eq 1 ]
    [ ! -e x.dat ]
    run_err a.fil dd_direct --dm 30 -o x.dat a.fil a.fil
    [ "$status" -eq 2 ]
}

@test "psrfits: missing rows are zeros where they were, said with -v and in the .inf" {
    sim -o a.fil
    sim -o g.fits --format psrfits --nsblk 256 --rows-per-file 5 --drop-rows 2,6,7
    run dat g_0001.fits g_0002.fits g_0003.fits g_0004.fits -o b.dat -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"768 spectra of zeros padded in 2 gaps"* ]]
    grep -q "768 spectra of zeros padded in 2 gaps" b.inf
    # gulps that end inside rows mix whole-row and row-by-row reads
    dat g_0001.fits g_0002.fits g_0003.fits g_0004.fits -o c.dat --gulp 1000
    cmp b.dat c.dat
    tscrunch -q -n 1 --nbits-out 8 g_000?.fits -o g.fil
    [ "$(fbinfo g.fil -k nsamples)" = 4096 ]
    hdr=$(fbinfo a.fil -k header_size)
    ghdr=$(fbinfo g.fil -k header_size)
    # spectra 512..767 and 1536..2047 (rows 2, 6, 7) are zeros, the rest the filterbank's
    "$PYTHON" -c "
import numpy as np
a = np.fromfile('a.fil', np.uint8)[$hdr:].reshape(4096, 32).copy()
g = np.fromfile('g.fil', np.uint8)[$ghdr:].reshape(4096, 32)
a[512:768] = 0; a[1536:2048] = 0
assert np.array_equal(a, g), 'differ'"
}

@test "psrfits: tscrunch converts PSRFITS to a filterbank in one command" {
    sim -o a.fil --nbits 2
    sim -o a.fits --format psrfits --nsblk 256 --nbits 2
    tscrunch -q -n 1 --nbits-out 8 a.fits -o b.fil
    tscrunch -q -n 1 --nbits-out 8 a.fil -o c.fil
    cmp <(tail -c +$(($(fbinfo b.fil -k header_size) + 1)) b.fil) \
        <(tail -c +$(($(fbinfo c.fil -k header_size) + 1)) c.fil)
    [ "$(fbinfo b.fil -k tstart)" = "$(fbinfo a.fil -k tstart)" ]
    [ "$(fbinfo b.fil -k tsamp)" = "$(fbinfo a.fil -k tsamp)" ]
}

@test "psrfits: scaled data read for the GPU (raw bytes, each row's multiply-add) give the float32 spectra exactly" {
    # 8-bit NPOL 2 over three files with missing rows and a zero weight
    # (whole rows read straight), 4-bit, signed 8-bit IQUV (read row by
    # row), 2-bit; gulps inside rows and across gaps
    echo 3:5,20 > kill.txt
    fbsim -q -o s.fits --format psrfits --nsblk 300 --nifs 2 --rows-per-file 20 --drop-rows 4,30 \
        --dat-scl 1.5 --dat-offs -2 --zero-off 0.5 --zero-weight kill.txt --nchans 64 \
        --tsamp 64e-6 --nsamples 15000 --pulse 0.5,60,0.002,20
    fbsim -q -o f4.fits --format psrfits --nsblk 256 --nbits 4 --nchans 64 --dat-scl 2 \
        --zero-off 1 --dat-offs 3 --tsamp 64e-6 --nsamples 9000 --rows-per-file 12 --drop-rows 5
    fbsim -q -o sg.fits --format psrfits --nsblk 200 --signed --nifs 4 --pol-type IQUV \
        --nchans 32 --dat-scl 0.5 --dat-offs 1 --tsamp 64e-6 --nsamples 5000
    fbsim -q -o s2.fits --format psrfits --nsblk 128 --nbits 2 --nifs 2 --nchans 64 --dat-scl 3 \
        --tsamp 64e-6 --nsamples 3000
    for g in 4096 1000 37; do
        run "$TBIN/psrfits_scaled_cmp" $g s_0001.fits s_0002.fits s_0003.fits
        [ "$status" -eq 0 ] && [[ "$output" == *"15000 spectra"*"difference 0 of"* ]]
        run "$TBIN/psrfits_scaled_cmp" $g f4_0001.fits f4_0002.fits f4_0003.fits
        [ "$status" -eq 0 ] && [[ "$output" == *"9216 spectra"*"difference 0 of"* ]]
        run "$TBIN/psrfits_scaled_cmp" $g sg.fits
        [ "$status" -eq 0 ] && [[ "$output" == *"difference 0 of"* ]]
        run "$TBIN/psrfits_scaled_cmp" $g s2.fits
        [ "$status" -eq 0 ] && [[ "$output" == *"difference 0 of"* ]]
    done
}

@test "psrfits: on stdin, in fold mode, not PSRFITS or truncated: one line, exit 1, no output" {
    sim -o a.fits --format psrfits --nsblk 256
    run_err stdin bash -c 'dd_direct --dm 30 -o x.tim < a.fits'
    [ "$status" -eq 1 ]
    [[ "$output" == *PSRFITS* ]]
    LC_ALL=C sed "s/OBS_MODE= 'SEARCH  '/OBS_MODE= 'PSR     '/" a.fits > fold.fits
    run_err fold.fits dd_direct --dm 30 -o x.tim fold.fits
    [ "$status" -eq 1 ]
    [[ "$output" == *"fold"* ]]
    LC_ALL=C sed "s/FITSTYPE= 'PSRFITS '/FITSTYPE= 'OTHER   '/" a.fits > other.fits
    run_err other.fits dd_direct --dm 30 -o x.tim other.fits
    [ "$status" -eq 1 ]
    head -c 20000 a.fits > short.fits
    run_err short.fits dd_direct --dm 30 -o x.tim short.fits
    [ "$status" -eq 1 ]
    [ ! -e x.tim ]
    ls -A | grep -v -e '\.fits$' && false || true
}

@test "psrfits: a TTYPEn card whose unquoted value fills its 70 columns: one line, exit 1 (cfitsio would overflow a buffer)" {
    # found by fuzz_psrfits: cfitsio 4.2's ffgtbp copies such a value into a
    # 70-byte column name and aborts the process
    sim -o a.fits --format psrfits --nsblk 256
    "$PYTHON" - <<'EOF'
d = open('a.fits', 'rb').read()
i = d.index(b"TTYPE7  = ")
open('b.fits', 'wb').write(d[:i] + b"TTYPE7  = " + b"x" * 70 + d[i + 80:])
EOF
    run_err b.fits dd_direct --dm 30 -o x.tim b.fits
    [ "$status" -eq 1 ]
    [[ "$output" == *"TTYPE7"* ]]
    [ ! -e x.tim ]
    run_err b.fits fbinfo b.fits
    [ "$status" -eq 1 ]
}

@test "psrfits: real: your_28.fits has your_28.fil's samples and its burst at its DM and t 2.029 s" {
    [ -f "$REAL/your_28.fits" ] || skip "no $REAL (real telescope files)"
    tscrunch -q -n 1 --nbits-out 8 "$REAL/your_28.fits" -o y.fil
    [ "$(fbinfo y.fil -k nsamples)" = 5523 ]
    cmp <(tail -c +$(($(fbinfo "$REAL/your_28.fil" -k header_size) + 1)) "$REAL/your_28.fil") \
        <(tail -c +$(($(fbinfo y.fil -k header_size) + 1)) y.fil | head -c 1720320)
    [ "$(fbinfo "$REAL/your_28.fits" -k tstart)" = "$(fbinfo "$REAL/your_28.fil" -k tstart)" ]
    dd_direct -q --dm-min 400 --dm-max 550 --dm-step 0.5 --prefix s "$REAL/your_28.fits"
    dd_direct -q --dm-min 400 --dm-max 550 --dm-step 0.5 --prefix l "$REAL/your_28.fil"
    read -r dm sample t snr < <(timpeak s_DM*.tim | sort -t$'\t' -k4,4g | tail -1)
    read -r ldm lsample lt lsnr < <(timpeak l_DM*.tim | sort -t$'\t' -k4,4g | tail -1)
    # the brightest sample: your's DM 475.28 (0.5 steps), t 2.02888 s, as in the filterbank
    approx "$dm" 475.28 0.5
    approx "$t" 2.02888 0.0013
    [ "$dm" = "$ldm" ] && [ "$sample" = "$lsample" ]
}

@test "psrfits: real: parkes_4bit.sf (AABBCRCI, 4-bit, ZERO_OFF) and your_test_4pol.fits (IQUV) are read" {
    [ -f "$REAL/parkes_4bit.sf" ] || skip "no $REAL (real telescope files)"
    [ "$(fbinfo "$REAL/parkes_4bit.sf" -k nchans)" = 416 ]
    [ "$(fbinfo "$REAL/parkes_4bit.sf" -k nifs)" = 2 ]
    [ "$(fbinfo "$REAL/parkes_4bit.sf" -k nbits)" = 32 ]
    [ "$(fbinfo "$REAL/parkes_4bit.sf" -k nsamples)" = 4096 ]
    approx "$(fbinfo "$REAL/parkes_4bit.sf" -k tsamp)" 0.000512 1e-12
    approx "$(fbinfo "$REAL/parkes_4bit.sf" -k fch1)" 4028 1e-3
    dd_direct -q --dm 56.77 --format dat --length exact -o p.dat "$REAL/parkes_4bit.sf"
    [ "$(fbinfo "$REAL/your_test_4pol.fits" -k nchans)" = 512 ]
    [ "$(fbinfo "$REAL/your_test_4pol.fits" -k nifs)" = 1 ]
    [ "$(fbinfo "$REAL/your_test_4pol.fits" -k nsamples)" = 200 ]
    dd_direct -q --dm 0 --format dat --length exact -o v.dat "$REAL/your_test_4pol.fits"
    # sane series: finite, not constant, as long as the data allow
    "$PYTHON" -c "
import numpy as np
p = np.fromfile('p.dat', np.float32); v = np.fromfile('v.dat', np.float32)
assert len(v) == 200 and np.isfinite(p).all() and np.isfinite(v).all(), 'not finite'
assert p.std() > 0 and v.std() > 0 and len(p) > 3000, 'constant or short'"
}
