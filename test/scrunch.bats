#!/usr/bin/env bats
# Time scrunching in dd_direct: --plan with downsampling and --scrunch auto.
load common

plan() {
    printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n'
    printf '%s\n' "$@"
}

mkdata() {
    fbsim -q -o a.fil --nchans 64 --nbits 8 --tsamp 0.000064 --tobs 2 --fch1 1500 --foff -1 \
        --pulse 1,300,0.001,30
}

@test "scrunch: scrunched dd_direct equals dd_direct on a tscrunch'ed file" {
    mkdata
    plan "$(printf '0\t100\t50\t1\t2')" "$(printf '100\t400\t100\t4\t3')" > p.tsv
    dd_direct -q a.fil --plan p.tsv --prefix s --gulp 1000
    tscrunch -q -n 4 a.fil -o a4.fil
    dd_direct -q a4.fil --dm 100,200,300 --prefix r
    for d in 100 200 300; do cmp s_DM$d.00.tim r_DM$d.00.tim; done
    dd_direct -q a.fil --dm 0,50 --prefix f
    cmp f_DM0.00.tim s_DM0.00.tim
    cmp f_DM50.00.tim s_DM50.00.tim
}

@test "scrunch: output length per resolution is floor(N/f) - maxdelay, tsamp multiplied" {
    mkdata
    plan "$(printf '300\t301\t1\t8\t1')" > p.tsv
    dd_direct -q a.fil --plan p.tsv -o s.tim
    tscrunch -q -n 8 a.fil -o a8.fil
    dd_direct -q a8.fil --dm 300 -o r.tim
    cmp s.tim r.tim
    approx "$(fbinfo s.tim -k tsamp)" 0.000512 1e-12
    [ "$(fbinfo s.tim -k tstart)" = "$(fbinfo a.fil -k tstart)" ]
}

@test "scrunch: stdin input, several gulps, single DM to stdout" {
    mkdata
    plan "$(printf '300\t301\t1\t4\t1')" > p.tsv
    dd_direct -q a.fil --plan p.tsv -o ref.tim
    cat a.fil | dd_direct -q --plan p.tsv --gulp 512 > s.tim
    cmp ref.tim s.tim
}

@test "scrunch: --scrunch auto scrunches past the diagonal and keeps the pulse" {
    mkdata
    dd_direct -q a.fil --dm 10,300 --scrunch auto --prefix s
    approx "$(fbinfo s_DM10.00.tim -k tsamp)" 0.000064 1e-12
    approx "$(fbinfo s_DM300.00.tim -k tsamp)" 0.000512 1e-12
    read -r dm peak t snr < <(timpeak s_DM300.00.tim)
    approx "$t" 1.0 0.002
    awk -v s="$snr" 'BEGIN { exit !(s > 10) }'
}

@test "scrunch: --scrunch none ignores the plan's factors" {
    mkdata
    plan "$(printf '100\t300\t100\t4\t2')" > p.tsv
    dd_direct -q a.fil --plan p.tsv --scrunch none --prefix s
    dd_direct -q a.fil --dm 100,200 --prefix r
    cmp s_DM200.00.tim r_DM200.00.tim
}

@test "scrunch: --pad pads each series to its resolution's length" {
    mkdata
    plan "$(printf '0\t100\t100\t1\t1')" "$(printf '100\t200\t100\t4\t1')" > p.tsv
    dd_direct -q a.fil --plan p.tsv --pad --length exact --prefix s --format dat
    grep -q "Number of bins in the time series *=  31250 " s_DM0.00.inf
    grep -q "Number of bins in the time series *=  7812 " s_DM100.00.inf
    grep -q "Width of each time series bin (sec) *=  0.000256" s_DM100.00.inf
}

@test "scrunch: plan with a gap is a data error naming the file, no output" {
    mkdata
    plan "$(printf '0\t10\t1\t1\t10')" "$(printf '12\t22\t1\t2\t10')" > gap.tsv
    run_err gap.tsv dd_direct a.fil --plan gap.tsv --prefix s
    [ "$status" -eq 1 ]
    [[ "$output" == *gap* ]]
    [ -z "$(ls s_* .s_* 2>/dev/null)" ]
}

@test "scrunch: plan with an overlap, bad factor or no header is a data error" {
    mkdata
    plan "$(printf '0\t10\t1\t1\t10')" "$(printf '8\t18\t1\t2\t10')" > over.tsv
    run_err over.tsv dd_direct a.fil --plan over.tsv --prefix s
    [ "$status" -eq 1 ] && [[ "$output" == *overlap* ]]
    plan "$(printf '0\t10\t1\t3\t10')" > ds.tsv
    run_err ds.tsv dd_direct a.fil --plan ds.tsv --prefix s
    [ "$status" -eq 1 ]
    printf '0\t10\t1\t1\t10\n' > nohdr.tsv
    run_err nohdr.tsv dd_direct a.fil --plan nohdr.tsv --prefix s
    [ "$status" -eq 1 ]
    plan "$(printf '0\t10\t0\t1\t10')" > step.tsv
    run_err step.tsv dd_direct a.fil --plan step.tsv --prefix s
    [ -z "$(ls s_* .s_* 2>/dev/null)" ]
}

@test "scrunch: bad --scrunch value and --plan with --dm are usage errors" {
    mkdata
    run_err scrunch dd_direct a.fil --dm 10 --scrunch sometimes
    [ "$status" -eq 2 ]
    plan "$(printf '0\t10\t1\t1\t10')" > p.tsv
    run_err plan dd_direct a.fil --dm 10 --plan p.tsv
    [ "$status" -eq 2 ]
}

@test "--max-mem counts the scrunch levels' buffers (CPU backend)" {
    fbsim -o mm.fil --nchans 256 --nbits 8 --tsamp 0.000256 --tobs 5 --fch1 1500 --foff -1
    dd_direct mm.fil --dm-min 0 --dm-max 500 --dm-step 1 --gulp 4096 --max-mem 18M \
        --scrunch none --discard -q --backend cpu
    run_err max-mem dd_direct mm.fil --dm-min 0 --dm-max 500 --dm-step 1 --gulp 4096 \
        --max-mem 18M --scrunch auto --discard -q --backend cpu
    [ "$status" -eq 2 ]
}
