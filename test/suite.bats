#!/usr/bin/env bats
# Suite-wide conventions: every tool has --help, --version, a man page that
# renders cleanly, and rejects unknown options with exit 2 and one line.

load common

tools() { ls "$BIN"; }

@test "every tool answers --help and --version with exit 0" {
    for t in $(tools); do
        run "$t" --help
        [ "$status" -eq 0 ] || { echo "$t --help: $status"; return 1; }
        [[ "$output" == *"Usage: $t"* ]] || { echo "$t --help lacks Usage"; return 1; }
        run "$t" --version
        [ "$status" -eq 0 ] && [ "$output" = "$t (ddtk) 0.1.0" ] || { echo "$t: $output"; return 1; }
    done
}

@test "every tool rejects an unknown option: exit 2, one line naming it" {
    for t in $(tools); do
        run_err "--no-such-option" "$t" --no-such-option
        [ "$status" -eq 2 ] || { echo "$t: status $status"; return 1; }
    done
}

@test "every tool has a man page that renders without warnings" {
    command -v groff >/dev/null || skip "groff not installed"
    for t in $(tools); do
        page="$BATS_TEST_DIRNAME/../man/man1/$t.1"
        [ -f "$page" ] || { echo "no man page for $t"; return 1; }
        run bash -c "groff -man -ww -z -Tutf8 '$page' 2>&1"
        [ -z "$output" ] || { echo "$t.1: $output"; return 1; }
    done
}

@test "every option in --help is in the man page" {
    for t in $(tools); do
        page="$BATS_TEST_DIRNAME/../man/man1/$t.1"
        for opt in $("$t" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
            grep -q -- "${opt//-/\\\\-}\|$opt" "$page" || { echo "$t.1 lacks $opt"; return 1; }
        done
    done
}

@test "ensure-deps finds what the build already uses (no reinstall)" {
    [ -z "${DDTK_DEPS:-}" ] || skip "dependencies staged in DDTK_DEPS (a machine without packages)"
    run "$BATS_TEST_DIRNAME/../scripts/ensure-deps"
    [ "$status" -eq 0 ]
    [[ "$output" != *missing* ]]
}

@test "every tool fails (exit 3, one line) when its --version cannot be written" {
    for t in $(tools); do
        run_err stdout bash -c "$t --version > /dev/full"
        [ "$status" -eq 3 ] || { echo "$t: status $status"; return 1; }
    done
}

@test "every tool takes -q and -v (and lists them in --help)" {
    for t in $(tools); do
        run "$t" --help
        [[ "$output" == *"-q, --quiet"* ]] || { echo "$t --help lacks -q, --quiet"; return 1; }
        [[ "$output" == *"-v, --verbose"* ]] || { echo "$t --help lacks -v, --verbose"; return 1; }
    done
    fbsim -q -o a.fil --nchans 16 --nbits 8 --tobs 0.1
    run fbinfo -q a.fil
    [ "$status" -eq 0 ] && [ -z "$output" ]
    run fbinfo -v a.fil
    [[ "$output" == *"Header keywords"*" nchans"* ]]
    head -c 50 a.fil > bad.fil
    run fbinfo -q bad.fil
    [ "$status" -eq 1 ]
}
