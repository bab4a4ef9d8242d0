"""Every ctypes mirror in ddtk._lib against its C struct: a C program
compiled from the installed headers prints sizeof and each field's offsetof,
which must equal ctypes' own."""

import os
import shutil
import subprocess

import pytest

from conftest import REPO
from ddtk import _lib


def test_struct_layouts_match_the_headers(tmp):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to read the headers' layouts")
    lines = ['#include <stddef.h>', '#include <stdio.h>']
    lines += [f'#include "{h}"' for h in _lib.HEADERS]
    lines.append("int main(void) {")
    want = []
    for cname, mirror in _lib.STRUCTS.items():
        lines.append(f'printf("%zu\\n", sizeof({cname}));')
        want.append((cname, "sizeof", ctypes_size(mirror)))
        for field, _ in mirror._fields_:
            lines.append(f'printf("%zu\\n", offsetof({cname}, {field}));')
            want.append((cname, field, getattr(mirror, field).offset))
    lines.append("return 0; }")
    src = tmp / "abi.c"
    src.write_text("\n".join(lines))
    subprocess.run([cc, "-std=gnu11", "-I", os.path.join(REPO, "include"), str(src), "-o",
                    str(tmp / "abi")], check=True)
    got = subprocess.run([str(tmp / "abi")], capture_output=True, text=True,
                         check=True).stdout.split()
    assert len(got) == len(want)
    wrong = [f"{c}.{f}: C {g}, ctypes {w}" for (c, f, w), g in zip(want, got) if int(g) != w]
    assert not wrong, "ctypes mirrors out of date: " + "; ".join(wrong)


def ctypes_size(mirror):
    import ctypes
    return ctypes.sizeof(mirror)


def test_every_struct_field_is_checked():
    # a mirror without fields would check nothing
    assert all(m._fields_ for m in _lib.STRUCTS.values())
    assert "ddtk_plan_desc" in _lib.STRUCTS and "ddtk_header" in _lib.STRUCTS
