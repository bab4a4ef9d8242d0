#!/usr/bin/env bats
# wisdom.bats - ddtune, the wisdom file and the dd_* options that use it:
# a tuned configuration is found by the next run (-v says so), --no-wisdom
# and --wisdom choose, --tune tunes a new set-up once, a damaged file is one
# warning and the defaults, concurrent tuners leave a whole file, and no
# configuration changes an output byte.

load common

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    export DDTK_WISDOM=$BATS_TEST_TMPDIR/cache/wisdom DDTK_TUNE_BUDGET=2
    fbsim -q -o a.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 1 --fch1 1500 --foff -1 \
        --pulse 0.5,40,0.001,20
}

@test "ddtune keeps the fastest configuration; dd_direct uses it, with the same bytes" {
    run ddtune a.fil --dm-min 0 --dm-max 60 --dm-step 1 --budget 3 --backend cpu
    [ "$status" -eq 0 ]
    [[ "$output" == *"set-up: cpu "*" | direct nchans 64 nbits 8 ndm 64 "* ]]
    best=$(printf '%s\n' "$output" | sed -n 's/^best: \(cpu tile [0-9]* dms [0-9]* chans [0-9]*\),.*/\1/p')
    [ -n "$best" ]
    [ "$(head -1 cache/wisdom)" = "# ddtk wisdom 4" ]
    [ "$(tail -n +2 cache/wisdom | cut -f2)" = "$best" ]
    mkdir w d
    run dd_direct a.fil --dm-min 0 --dm-max 60 --dm-step 1 --prefix w/x -v --backend cpu
    [[ "$output" == *"kernel configuration: $best (wisdom)"* ]]
    run dd_direct a.fil --dm-min 0 --dm-max 60 --dm-step 1 --prefix d/x -v --no-wisdom --backend cpu
    [[ "$output" == *"kernel configuration: cpu tile 1024 dms 64 chans 32 (built-in defaults)"* ]]
    for f in d/*.tim; do cmp "$f" "w/${f#d/}"; done
    [ "$(ls d | wc -l)" -eq 61 ]
}

@test "--tune tunes a set-up the wisdom lacks, once; --wisdom FILE names another file" {
    mkdir t u v
    run dd_direct a.fil --dm 0,10,20 --prefix t/x -v --tune
    [ "$status" -eq 0 ]
    [[ "$output" == *"tuning the kernel for this set-up (at most 2 s)"* ]]
    [[ "$output" == *"(tuned now)"* ]]
    run dd_direct a.fil --dm 0,10,20 --prefix u/x -v --tune
    [[ "$output" == *"(wisdom)"* ]] && [[ "$output" != *tuning* ]]
    run dd_direct a.fil --dm 0,10,20 --prefix v/x -v --wisdom other
    [[ "$output" == *"(built-in defaults)"* ]] && [ ! -e other ]
    for f in t/*.tim; do cmp "$f" "u/${f#t/}" && cmp "$f" "v/${f#t/}"; done
}

@test "a damaged or foreign wisdom file is one warning and the defaults, never a failure" {
    mkdir cache
    printf 'something else entirely\n' > cache/wisdom
    dd_direct -q a.fil --dm 40 -o ref.tim --no-wisdom
    run dd_direct a.fil --dm 40 -o x.tim -q
    [ "$status" -eq 0 ]
    [ "$output" = "dd_direct: warning: $DDTK_WISDOM: not a ddtk wisdom file; using the default kernel configuration" ]
    cmp x.tim ref.tim
    printf '# ddtk wisdom 4\nhalf a line' > cache/wisdom
    run dd_direct a.fil --dm 40 -o y.tim -q
    [ "$status" -eq 0 ] && [[ "$output" == *"line 2: not KEY<TAB>CONFIG<TAB>RATE"* ]]
    cmp y.tim ref.tim
    for v in 1 2 3; do
        printf '# ddtk wisdom %s\nk\tcpu tile 512 dms 8 chans 16\t1e9\n' $v > cache/wisdom
        run dd_direct a.fil --dm 40 -o z$v.tim -q
        [ "$status" -eq 0 ]
        [ "$output" = "dd_direct: warning: $DDTK_WISDOM: wisdom of an older ddtk (GPU variants renumbered; run ddtune again); using the default kernel configuration" ]
        cmp z$v.tim ref.tim
    done
}

@test "four tuners at once on four set-ups leave one whole file with four entries" {
    for n in 9 39 149 599; do         # 10, 40, 150, 600 DMs: four DM-count buckets
        ddtune -q a.fil --dm-min 0 --dm-max $n --dm-step 1 --budget 1 > t$n.log &
    done
    wait
    [ "$(head -1 cache/wisdom)" = "# ddtk wisdom 4" ]
    [ "$(tail -n +2 cache/wisdom | wc -l)" -eq 4 ]
    [ "$(tail -n +2 cache/wisdom | awk -F'\t' 'NF == 3 && $3 > 0' | wc -l)" -eq 4 ]
    [ -z "$(ls -A cache | grep -v '^wisdom$')" ]
}

@test "ddtune: bad budget, missing DMs and output options are usage errors; nothing is written" {
    run_err "--budget" ddtune a.fil --dm 10 --budget 0
    [ "$status" -eq 2 ]
    run_err "--dm" ddtune a.fil
    [ "$status" -eq 2 ]
    run_err "do not apply here" ddtune a.fil --dm 10 --prefix out/x
    [ "$status" -eq 2 ]
    [ ! -e cache ]
}

@test "gpu: ddtune times every lane-kernel variant; dd_direct runs the kept one, with the CPU's bytes" {
    dd_direct --list-gpus 2>/dev/null | grep -q "compute capability" || skip "no GPU"
    run ddtune a.fil --dm-min 0 --dm-max 60 --dm-step 1 --backend gpu --budget 30
    [ "$status" -eq 0 ]
    # the device's default (-1), then the 20 compiled configurations and the cached kernel's 8 shapes
    [ "$(printf '%s\n' "$output" | grep -c '^gpu lane -1 float -1 ')" -eq 1 ]
    [ "$(printf '%s\n' "$output" | grep -cE '^gpu lane [0-9]+ float -1 ')" -eq 28 ]
    best=$(printf '%s\n' "$output" | sed -n 's/^best: \(gpu lane -\{0,1\}[0-9]* float -1\),.*/\1/p')
    [ -n "$best" ]
    mkdir g c
    run dd_direct a.fil --dm-min 0 --dm-max 60 --dm-step 1 --backend gpu --prefix g/x -v
    [[ "$output" == *"kernel configuration: $best (wisdom)"* ]]
    dd_direct -q a.fil --dm-min 0 --dm-max 60 --dm-step 1 --backend cpu --prefix c/x
    for f in c/*.tim; do cmp "$f" "g/${f#c/}"; done
}

@test "wisdom values out of range are one warning and the defaults: same bytes, no crash (issue 32.1)" {
    mkdir ref
    dd_direct -q a.fil --dm-min 0 --dm-max 100 --prefix ref/x --no-wisdom --backend cpu
    mkdir sref
    dd_subband -q a.fil --dm-min 0 --dm-max 100 --prefix sref/x --no-wisdom --backend cpu
    ddtune -q a.fil --dm-min 0 --dm-max 100 --budget 1 --backend cpu > /dev/null
    key=$(tail -n +2 cache/wisdom | cut -f1)
    [ -n "$key" ]
    for cfg in "cpu tile 1 dms 2147483647 chans 2147483647" "cpu tile 1 dms 64 chans 2147483646" \
               "cpu tile 1024 dms 64 chans 2147483647" "cpu tile 2147483647 dms 2147483647 chans 4" \
               "cpu tile 1024 dms 64 chans -4"; do
        printf '# ddtk wisdom 4\n%s\t%s\t1e9\n%s\t%s\t1e9\n' "$key" "$cfg" \
            "${key/ direct / subband }" "$cfg" > cache/wisdom
        for tool in direct subband; do
            rm -rf o && mkdir o
            run dd_$tool a.fil --dm-min 0 --dm-max 100 --prefix o/x -q --backend cpu
            [ "$status" -eq 0 ]
            [[ "$output" == "dd_$tool: warning: $DDTK_WISDOM: line 2: "*"expected "*"; using the default kernel configuration" ]]
            r=ref && [ $tool = direct ] || r=sref
            for f in $r/*.tim; do cmp "$f" "o/${f#$r/}"; done
            [ "$(ls -A o | wc -l)" -eq "$(ls $r | wc -l)" ]
        done
    done
}

@test "the wisdom reader refuses FIFOs, devices, huge files and endless lines at once (issue 32.8)" {
    dd_direct -q a.fil --dm 40 -o ref.tim --no-wisdom
    mkfifo fifo
    for w in fifo /dev/zero; do
        run timeout 10 dd_direct a.fil --dm 40 -o "x${w//\/}.tim" -q --wisdom "$w"
        [ "$status" -eq 0 ]
        [ "$output" = "dd_direct: warning: $w: not a regular file; using the default kernel configuration" ]
        cmp "x${w//\/}.tim" ref.tim
    done
    { printf '# ddtk wisdom 4\n'; head -c 300000 /dev/zero | tr '\0' x; } > long
    run timeout 10 dd_direct a.fil --dm 40 -o y.tim -q --wisdom long
    [ "$status" -eq 0 ] && [[ "$output" == *"long: line 2: longer than "*" bytes; using the default"* ]]
    cmp y.tim ref.tim
    truncate -s 100M big && printf '# ddtk wisdom 4\n' | dd of=big conv=notrunc status=none
    run timeout 10 dd_direct a.fil --dm 40 -o z.tim -q --wisdom big
    [ "$status" -eq 0 ] && [[ "$output" == *"big: larger than "*"; using the default"* ]]
    cmp z.tim ref.tim
}

@test "ddtune --dm-max alone tunes the set-up of DM 0 to the maximum" {
    run ddtune a.fil --dm-max 60 --dm-step 1 --budget 1 --backend cpu --no-wisdom
    [ "$status" -eq 0 ]
    [[ "$output" == *" | direct nchans 64 nbits 8 ndm 64 "* ]]
}
