#!/usr/bin/env bats
# wisdom.bats - ddtune, the wisdom file and the dd_* options that use it:
# a tuned configuration is found by the next run (-v says so), --no-wisdom
# and --wisdom choose, --tune tunes a new set-up once, a damaged file is one
# warning and the defaults, concurrent tuners leave a whole file, and no
# configuration changes an output byte. ddtune --algorithm tunes every
# algorithm: its table's fastest line is kept, the algorithm's tool reads it
# back and gives the bytes of the same parameters given as options.

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

@test "ddtune: a spent budget lists the configurations it did not time and keeps the best timed" {
    # a loaded machine once cut the table short without a word (device, stop 36)
    run ddtune a.fil --dm-min 0 --dm-max 60 --dm-step 1 --budget 0.000001 --backend cpu --no-wisdom
    [ "$status" -eq 0 ]
    # the default timed, then the 13 other values of the three axes, each listed
    [ "$(printf '%s\n' "$output" | grep -c '^cpu tile ')" -eq 14 ]
    [ "$(printf '%s\n' "$output" | grep -c 'skipped: not timed, the time budget was spent$')" -eq 13 ]
    [[ "$output" == *"best: cpu tile 1024 dms 64 chans 32, "* ]]
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
    need_gpu
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

# Whether configuration $2 is a fastest line of ddtune's table $1 (the table
# prints 4 digits: configurations that tie there are all fastest).
fastest() { printf '%s\n' "$1" | awk -v want="$2" '/ sample-adds\/s$/ && !/^best: / {
        r = $(NF - 1) + 0; sub(/ +[^ ]+ sample-adds\/s$/, ""); rate[$0] = r; if (r > top) top = r }
    END { exit !(want in rate && rate[want] == top) }'; }
kept() { printf '%s\n' "$1" | sed -n 's/^best: \(.*\), [^ ]* sample-adds\/s$/\1/p'; }
# "nsub 8 dm_group 4 chunk 512" (after a kernel configuration) -> "--nsub 8 --dm-group 4 --chunk 512"
as_options() { printf '%s\n' "$1" |
    sed -E 's/^(cpu tile [0-9]+ dms [0-9]+ chans [0-9]+|gpu lane -?[0-9]+ float -?[0-9]+|defaults) ?//' |
    awk '{ for (i = 1; i < NF; i += 2) { o = $i; gsub(/_/, "-", o); printf "--%s %s ", o, $(i + 1) } }'; }

# tuned ALG BACKEND BUDGET: ddtune --algorithm ALG over 0-60 (the sub-band
# one on a DM list); $dms its DM options, $output its table, $best what it kept
tuned() {
    dms=(--dm-max 60) && [ "$1" != subband ] || dms=(--dm-min 0 --dm-max 60 --dm-step 1)
    run ddtune --algorithm "$1" a.fil "${dms[@]}" --budget "$3" --backend "$2"
    [ "$status" -eq 0 ]
    [[ "$output" == *"set-up: $2 "*" | $1 nchans 64 "* ]]
    best=$(kept "$output")
    [ -n "$best" ] && fastest "$output" "$best"
}

@test "ddtune --algorithm subband|tree|fdmt keeps its table's fastest; the tool reads it back, bytes as the options" {
    for alg in subband tree fdmt; do
        tuned $alg cpu 2
        [[ "$output" == *"set-up: cpu "*" | $alg nchans 64 nbits 8 "* ]]
        [ "$(grep -F "| $alg " cache/wisdom | cut -f2)" = "$best" ]
        rm -rf w e && mkdir w e
        run dd_$alg a.fil "${dms[@]}" --backend cpu --prefix w/x -v
        [ "$status" -eq 0 ]
        [[ "$output" == *"kernel configuration: $best (wisdom)"* ]]
        dd_$alg -q a.fil "${dms[@]}" --backend cpu --prefix e/x --no-wisdom $(as_options "$best")
        [ "$(ls w | wc -l)" -gt 20 ] && [ "$(ls w | wc -l)" -eq "$(ls e | wc -l)" ]
        for f in e/*; do cmp "$f" "w/${f#e/}"; done
    done
    [ "$(tail -n +2 cache/wisdom | wc -l)" -eq 3 ]
}

@test "ddtune --algorithm: a sub-band layout past --max-smear-ratio is never kept; a given parameter is kept" {
    run ddtune --algorithm subband a.fil --dm-min 0 --dm-max 200 --dm-step 1 --budget 4 --backend cpu \
        --nsub 16 --max-smear-ratio 0.01 --no-wisdom
    [ "$status" -eq 0 ]
    [[ "$output" == *" nsub=16 max_smear_ratio=0.01"* ]]
    [[ "$output" == *" nsub 16 dm_group 128"*"skipped: past the accuracy budget"* ]]
    [ "$(printf '%s\n' "$output" | grep -c ' nsub [0-9]* dm_group')" -ge 1 ]
    fastest "$output" "$(kept "$output")"
    run ddtune --algorithm fdmt a.fil --dm-max 60 --chunk 4096 --budget 1 --backend cpu --no-wisdom
    [ "$status" -eq 0 ]
    [[ "$output" == *"| fdmt "*" chunk=4096"* ]]
    [ "$(printf '%s\n' "$output" | grep -c 'sample-adds/s$')" -eq 2 ]     # the one line, and best
    [ "$(kept "$output")" = "chunk 4096" ]
}

@test "ddtune --algorithm: unknown names, the tree's DM options and abbreviations are usage errors" {
    run_err "unknown algorithm 'nope' (expected direct, subband, tree or fdmt)" \
        ddtune --algorithm nope a.fil --dm-max 10
    [ "$status" -eq 2 ]
    run_err "computes its own DMs" ddtune --algorithm tree a.fil --dm 10
    [ "$status" -eq 2 ]
    run_err "--dm-max" ddtune --algorithm=fdmt a.fil
    [ "$status" -eq 2 ]
    run_err "spell the option out" ddtune --algo tree a.fil --dm-max 10
    [ "$status" -eq 2 ]
    run_err "--chunk" ddtune --algorithm direct a.fil --dm-max 10 --chunk 512
    [ "$status" -eq 2 ]
    [ ! -e cache ]
}

@test "a wisdom entry with a parameter the algorithm does not tune is one warning and the defaults" {
    mkdir ref o
    dd_subband -q a.fil --dm-min 0 --dm-max 60 --prefix ref/x --no-wisdom --backend cpu
    ddtune -q --algorithm subband a.fil --dm-min 0 --dm-max 60 --budget 1 --backend cpu > /dev/null
    key=$(tail -n +2 cache/wisdom | cut -f1)
    printf '# ddtk wisdom 4\n%s\tcpu tile 512 dms 8 chans 16 max_smear_ratio 5\t1e9\n' "$key" > cache/wisdom
    run dd_subband a.fil --dm-min 0 --dm-max 60 --prefix o/x -q --backend cpu
    [ "$status" -eq 0 ]
    [ "$output" = "dd_subband: warning: $DDTK_WISDOM: line 2: 'max_smear_ratio' is not a tunable parameter of the subband algorithm; using the default kernel configuration" ]
    for f in ref/*; do cmp "$f" "o/${f#ref/}"; done
}

@test "gpu: ddtune --algorithm subband|tree keeps its table's fastest; the tool runs it with the CPU's bytes" {
    need_gpu
    for alg in subband tree; do
        tuned $alg gpu 10
        rm -rf g c && mkdir g c
        run dd_$alg a.fil "${dms[@]}" --backend gpu --prefix g/x -v
        [[ "$output" == *"kernel configuration: $best (wisdom)"* ]]
        dd_$alg -q a.fil "${dms[@]}" --backend cpu --no-wisdom --prefix c/x $(as_options "$best")
        for f in c/*; do cmp "$f" "g/${f#c/}"; done
    done
    # the FDMT has nothing to tune on the GPU: one usage error, nothing kept
    run_err "the fdmt algorithm has nothing to tune on the GPU" \
        ddtune --algorithm fdmt a.fil --dm-max 60 --backend gpu --budget 1
    [ "$status" -eq 2 ]
    run_err "the fdmt algorithm has nothing to tune on the GPU" \
        dd_fdmt a.fil --dm-max 60 --backend gpu --tune --prefix g/f
    [ "$status" -eq 2 ]
    [ -z "$(ls g/f* 2>/dev/null)" ]
}
