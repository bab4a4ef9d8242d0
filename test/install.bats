#!/usr/bin/env bats
# install.bats - the installed library: `make install DESTDIR=...` stages the
# tools, libddtk.a, libddtk.so with its soname links, the headers and ddtk.pc;
# the shared library exports only ddtk_ names; the examples build with
# `pkg-config --cflags --libs ddtk` against the installed shared library and run.

load common

REPO=$BATS_TEST_DIRNAME/..
PREFIX=/opt/ddtk

# One staged install for the file, made with this build's CUDA setting (its
# stamp) so that nothing is rebuilt; MAKEFLAGS of an outer `make test` dropped.
# The stamp is config.cuda0, or config.cuda1-smA_B-RUNTIME (the architectures
# and CUDA runtime of a CUDA build, which make install would otherwise widen
# to every architecture).
setup_file() {
    local stamp cfg cuda archs build=()
    stamp=$(ls "$REPO"/build/config.cuda* 2>/dev/null | head -1)
    cfg=${stamp##*config.cuda}
    cuda=${cfg%%-*}
    [ -z "$cuda" ] || build+=("CUDA=$cuda")
    if [ "$cuda" = 1 ]; then
        archs=${cfg#1-sm}
        archs=${archs%-*}
        build+=("CUDA_ARCHS=${archs//_/ }" "CUDA_RUNTIME=${cfg##*-}")
    fi
    export STAGE=$BATS_FILE_TMPDIR/stage
    env -u MAKEFLAGS -u MAKELEVEL make -s -C "$REPO" install DESTDIR="$STAGE" \
        PREFIX=$PREFIX "${build[@]}" > "$BATS_FILE_TMPDIR/install.log" 2>&1 ||
        { cat "$BATS_FILE_TMPDIR/install.log" >&2; return 1; }
}

ddtk_pkg() {
    PKG_CONFIG_SYSROOT_DIR=$STAGE PKG_CONFIG_PATH=$STAGE$PREFIX/lib/pkgconfig pkg-config "$@" ddtk
}

@test "install: the library, its soname links, headers, ddtk.pc, tools and man pages" {
    local lib=$STAGE$PREFIX/lib version
    version=$(sed -n 's/^#define DDTK_VERSION "\(.*\)"/\1/p' "$REPO/include/ddtk.h")
    [ -f "$lib/libddtk.a" ]
    [ -f "$lib/libddtk.so.$version" ] && [ ! -L "$lib/libddtk.so.$version" ]
    [ "$(readlink "$lib/libddtk.so.${version%%.*}")" = "libddtk.so.$version" ]
    [ "$(readlink "$lib/libddtk.so")" = "libddtk.so.${version%%.*}" ]
    readelf -d "$lib/libddtk.so.$version" | grep -q "SONAME.*\[libddtk.so.${version%%.*}\]"
    [ -f "$STAGE$PREFIX/include/ddtk/ddtk.h" ] && [ -f "$STAGE$PREFIX/include/ddtk/dmplan.h" ]
    [ -x "$STAGE$PREFIX/bin/dd_direct" ] && [ -f "$STAGE$PREFIX/share/man/man1/dd_direct.1" ]
    [ "$(ddtk_pkg --modversion)" = "$version" ]
    # the .pc names the prefix it was installed for, not the staging directory
    grep -qx "prefix=$PREFIX" "$lib/pkgconfig/ddtk.pc"
    [[ "$(ddtk_pkg --static --libs)" == *-lfftw3f* ]]
    [[ "$(ddtk_pkg --libs)" != *-lfftw3f* ]]
}

@test "install: libddtk.so exports only ddtk_ symbols" {
    run bash -c "nm -D --defined-only '$REPO/libddtk.so' | awk '{ print \$NF }'"
    [ "$status" -eq 0 ]
    [ "${#lines[@]}" -gt 100 ]
    local other
    other=$(printf '%s\n' "${lines[@]}" | grep -v '^ddtk_' || true)
    [ -z "$other" ] || { echo "exported beyond ddtk_: $other"; return 1; }
    # the public entry points are there
    printf '%s\n' "${lines[@]}" | grep -qx ddtk_plan_execute
    printf '%s\n' "${lines[@]}" | grep -qx ddtk_errmsg
}

@test "install: the examples build with pkg-config against the installed shared library and run" {
    local lib=$STAGE$PREFIX/lib ex name n=0
    for ex in "$REPO"/examples/*.c; do
        name=$(basename "$ex" .c)
        # shellcheck disable=SC2046
        # (-lm: the examples call libm themselves)
        cc -O2 -std=gnu11 -Wall -Wextra -Werror "$ex" -o "$name" $(ddtk_pkg --cflags --libs) -lm
        readelf -d "$name" | grep -q 'NEEDED.*\[libddtk.so.[0-9]*\]'
        # linked dynamically: none of the library's code is in the program
        ! nm "$name" | grep -q ' T ddtk_plan_create'
        LD_LIBRARY_PATH=$lib run "./$name"
        echo "$output"
        [ "$status" -eq 0 ]
        LD_LIBRARY_PATH=$lib ldd "./$name" | grep -q "$lib/libddtk.so"
        n=$((n + 1))
    done
    [ "$n" -ge 1 ]
}

@test "install: the Python package lands beside the library and loads the installed libddtk.so" {
    local py dir
    py=$("$REPO/scripts/find-python") || skip "no python3 with NumPy"
    dir=$(ls -d "$STAGE$PREFIX"/lib/python3*/dist-packages)
    [ -f "$dir/ddtk/__init__.py" ] && [ -f "$dir/ddtk/_lib.py" ]
    fbsim -o a.fil --nchans 16 --nbits 8 --nsamples 2000 -q
    run env -u DDTK_LIBRARY PYTHONPATH="$dir" "$py" -c \
        'import ddtk; print(ddtk.library_path); print(ddtk.dedisperse("a.fil", [0, 10]).shape)'
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "$STAGE$PREFIX/lib/libddtk.so.0" ]
    [[ "${lines[1]}" == "(2, "* ]]
}
