#!/usr/bin/env bats
# readme.bats - the README's pipelines (its "## Pipelines" sh block) run as
# printed, one after another in one directory, each writing its own outputs:
# no pipeline may stop on another's files ("exists") or overwrite them. A
# pipeline that needs PRESTO or SIGPROC programs runs where they are on PATH
# (DDTK_INTEROP_PATH, as in interop.bats), one that insists on a GPU where
# one is usable; the others always. Two substitutions keep the run to
# seconds, and only these: the observation is 2 s long instead of 10
# (--tobs 10 -> --tobs 2) and ddtune's budget 3 s instead of 60.
load common

[ -n "${DDTK_INTEROP_PATH:-}" ] && PATH="$DDTK_INTEROP_PATH:$PATH"

README=$BATS_TEST_DIRNAME/../README.md

# The pipelines: the sh block after "## Pipelines", split at blank lines,
# each NUL-terminated, with the two substitutions.
pipelines() {
    awk '/^## Pipelines/ { p = 1 } p && /^```sh/ { inblk = 1; next }
         inblk && /^```/ { exit } inblk { print }' "$README" |
        sed -e 's/--tobs 10 /--tobs 2 /g' -e 's/--budget 60/--budget 3/' |
        awk 'BEGIN { RS = ""; ORS = "\0" } { print }'
}

# The programs from outside ddtk a pipeline runs (in its commands, not its
# comments), missing from PATH.
missing_for() {
    local p miss=() code
    code=$(sed -e '/^ *#/d' -e 's/  *#.*//' <<<"$1")
    for p in seek accelsearch ACCEL_sift.py prepfold single_pulse_search.py rfifind; do
        if grep -Eq "(^|[ (;&|])$p( |$)" <<<"$code" && ! command -v "$p" > /dev/null; then
            miss+=("$p")
        fi
    done
    if grep -q -- '--backend gpu' <<<"$code" && ! gpu_usable; then
        miss+=("a usable GPU")
    fi
    echo "${miss[*]}"
}

@test "README: the pipelines run one after another as printed, each with its own outputs" {
    export DDTK_WISDOM=$PWD/wisdom
    local n=0 ran=0 p miss
    while IFS= read -r -d '' p; do
        n=$((n + 1))
        miss=$(missing_for "$p")
        if [ -n "$miss" ]; then
            echo "# pipeline $n skipped, no $miss: $(head -1 <<<"$p")" >&3
            continue
        fi
        bash -euo pipefail -c "$p" > "pipeline$n.out" 2> "pipeline$n.err" ||
            { echo "pipeline $n failed:"; echo "$p"; cat "pipeline$n.err"; return 1; }
        ran=$((ran + 1))
    done < <(pipelines)
    echo "# $ran of $n pipelines ran" >&3
    [ "$n" -ge 17 ] && [ "$ran" -ge 13 ]
    # what each wrote, under its own names
    [ -s obs.fil ] && [ -s obs_DM56.70.tim ] && [ -s dm300.tim ] && [ -s dm300_2x.tim ]
    [ "$(ls fdas/*_ACCEL_50 | wc -l)" -eq 25 ] && [ "$(ls fdas/*_ACCEL_50.cand | wc -l)" -eq 25 ]
    [ "$(head -1 cands.tsv | cut -f1)" != "" ] && [ "$(wc -l < cands.tsv)" -ge 2 ]
    [ -s obs.plan ] && [ "$(ls plan/*.tim | wc -l)" -gt 10 ]
    [ "$(ls 8bit/*.tim | wc -l)" -gt 10 ] && [ "$(fbinfo -k nbits "$(ls 8bit/*.tim | head -1)")" = 8 ]
    [ "$(ls tuned/*.tim | wc -l)" -eq "$(ls 8bit/*.tim | wc -l)" ]
    [ "$(ls tree/*.dat | wc -l)" -eq "$(ls tree/*.inf | wc -l)" ] && [ "$(ls tree/*.dat | wc -l)" -gt 10 ]
    [ "$(ls allgpus/*.tim | wc -l)" -eq "$(ls 8bit/*.tim | wc -l)" ]
    [ "$(ls batch/obs1_DM*.tim | wc -l)" -eq "$(wc -l < dms.txt)" ]
    [ "$(ls batch/obs2_DM*.tim | wc -l)" -eq "$(wc -l < dms.txt)" ]
    [ "$(ls fits/*.tim | wc -l)" -gt 10 ] && [ "$(fbinfo -k nchans guppi_0001.fil)" = 256 ]
    [ "$(ls rfi/*.tim | wc -l)" -eq "$(ls 8bit/*.tim | wc -l)" ]
    # the tuned run found the wisdom ddtune kept
    grep -q "(wisdom)" pipeline*.err
    # the burst streamed through dd_direct at DM 300 is at 1.5 s
    read -r _ _ t snr < <(timpeak dm300.tim)
    approx "$t" 1.5 0.01 && awk -v a="$snr" 'BEGIN { exit !(a > 8) }'
}
