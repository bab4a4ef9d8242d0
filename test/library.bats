#!/usr/bin/env bats
# library.bats - libddtk on its own: the installed headers compile alone as
# C99 and as C++ with every warning, and the library's objects reach for no
# stderr, command-line parser, environment, process-wide thread setting or
# signal handler (messages and progress go through the caller's handlers;
# the tools read the environment into the plan and catch the signals).

load common

ROOT=$BATS_TEST_DIRNAME/..
# The library beside the tools under test (bin/ -> ., build/sanitize/bin -> build/sanitize).
LIB=$(dirname "$BIN")/libddtk.a

@test "each installed header compiles alone as C99 and as C++, -Wall -Wextra -pedantic clean" {
    command -v g++ >/dev/null || skip "no g++"
    for h in "$ROOT"/include/*.h; do
        printf '#include "%s"\nint main(void) { return 0; }\n' "$(basename "$h")" > t.c
        cp t.c t.cpp
        gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$ROOT/include" -c t.c -o t.o \
            || { echo "C99: $h"; return 1; }
        g++ -std=c++11 -Wall -Wextra -pedantic -Werror -I"$ROOT/include" -c t.cpp -o t.o \
            || { echo "C++: $h"; return 1; }
    done
}

@test "the library's objects refer to no stderr, getopt_long, getenv, omp_set_num_threads, signal handler or umask" {
    [ -f "$LIB" ] || skip "no $LIB"
    [ "$(nm "$LIB" | grep -c ' U ')" -gt 100 ]     # nm reads the archive
    # (not atexit: nvcc's registration of each object's kernels calls it)
    run bash -c "nm -A '$LIB' | grep -E ' U (stderr|getopt_long|getenv|secure_getenv|omp_set_num_threads|sigaction|signal|umask)\$'"
    [ "$status" -eq 1 ] || { echo "$output"; return 1; }
    [ -z "$output" ]
}

@test "the command-line layer is outside the library: no option parsing or tool names in it" {
    [ -f "$LIB" ] || skip "no $LIB"
    run bash -c "nm -A --defined-only '$LIB' | grep -E ' T ddtk_(getopt|opt_|ddargs|ddtool|msg|set_progname|progress_|print_summary)'"
    [ -z "$output" ] || { echo "$output"; return 1; }
}

@test "every DDTK_ variable a program reads is in a man page's ENVIRONMENT section" {
    vars=$(grep -rhoE '(getenv|ddtk_env_mib)\("DDTK_[A-Z_]+"' "$ROOT"/tools "$ROOT"/src "$ROOT"/cpu \
        "$ROOT"/cuda | sed 's/.*("\(.*\)"/\1/' | sort -u)
    [ "$(echo "$vars" | wc -l)" -ge 6 ]
    for v in $vars; do
        found=0
        for m in "$ROOT"/man/man1/*.1; do
            sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' "$m" | grep -q "$v" && found=1
        done
        [ "$found" -eq 1 ] || { echo "$v is in no ENVIRONMENT section"; return 1; }
    done
}

# The tool's one line for a failing command (its stderr, exit status 2).
usage_line() {
    run bash -c '"$@" 2>&1 >/dev/null' _ "$@"
    [ "$status" -eq 2 ] || { echo "status $status: $output"; return 1; }
}

@test "library messages name values; the tools put their options back, as the lines always read" {
    fbsim -q -o a.fil --nchans 16 --nbits 8 --tsamp 0.001 --tobs 2 --fch1 1500 --foff -1
    fbsim -q --tim -o t.tim --tsamp 0.001 --tobs 2 --nbits 8
    usage_line dd_direct a.fil --dm-min 0 --dm-max 10 --dm-step 0
    [ "$output" = "dd_direct: --dm-step 0: need a step > 0" ]
    usage_line dd_direct a.fil --dm-min 0 --dm-max 10 --tol 1
    [ "$output" = "dd_direct: --tol 1: the tolerance must be > 1" ]
    usage_line dd_direct a.fil --dm 10,20 -o x.tim
    [ "$output" = "dd_direct: -o names the output of a single DM; use --prefix for 2 DMs" ]
    usage_line dd_direct a.fil --dm 10 -o a.fil
    [ "$output" = "dd_direct: a.fil: exists (use --force to overwrite)" ]
    usage_line dd_direct a.fil --dm 10 --prefix p --format dat --nbits-out 8
    [ "$output" = "dd_direct: --nbits-out 8: PRESTO .dat files hold float32; use --format tim" ]
    usage_line dd_subband a.fil --dm 10,20 --nsub 100 --prefix s
    [ "$output" = "dd_subband: --nsub 100 exceeds the input's 16 live channels" ]
    usage_line fdas --flo 1000 --fhi 1001 t.tim
    [ "$output" = "fdas: t.tim: --flo 1000 --fhi 1001: empty frequency range for a 2 s observation" ]
    usage_line ddplan --nchans 4 --fch1 1400 --foff 0 --tsamp 0.001
    [ "$output" = "ddplan: --fch1 1400 --foff 0: need finite values, foff != 0" ]
    # The library's own words, where no option is near: no "--" anywhere in them.
    run grep -rhoE '(ddtk_fail|ddtk_report)\([^;]*"[^"]*--[a-z]' "$ROOT"/src "$ROOT"/cpu "$ROOT"/cuda
    [ -z "$output" ] || { echo "$output"; return 1; }
}
