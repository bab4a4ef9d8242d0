"""A PEP 517 build backend that copies: the wheel holds ddtk/*.py and, when
one is built, the library (libddtk.so.0 next to the package, from
$DDTK_LIBRARY or the build tree above python/); the sdist holds the sources.
Nothing is compiled, nothing is fetched."""

import base64
import hashlib
import io
import os
import sysconfig
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME, VERSION = "ddtk", "0.1.0"
SONAME = "libddtk.so.0"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: Dedispersion toolkit (libddtk) from Python: plans on NumPy arrays, CPU and GPU
Requires-Python: >=3.8
Requires-Dist: numpy
"""


def _library():
    path = os.environ.get("DDTK_LIBRARY") or os.path.join(HERE, "..", SONAME)
    return os.path.realpath(path) if os.path.exists(path) else None


def _sources():
    pkg = os.path.join(HERE, NAME)
    return sorted(f for f in os.listdir(pkg) if f.endswith(".py"))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib = _library()
    tag = "py3-none-" + (sysconfig.get_platform().replace("-", "_").replace(".", "_")
                         if lib else "any")
    files = [(f"{NAME}/{f}", open(os.path.join(HERE, NAME, f), "rb").read())
             for f in _sources()]
    if lib:
        files.append((f"{NAME}/{SONAME}", open(lib, "rb").read()))
    files.append((f"{DIST_INFO}/METADATA", METADATA.encode()))
    files.append((f"{DIST_INFO}/WHEEL", (
        f"Wheel-Version: 1.0\nGenerator: ddtk-copy\nRoot-Is-Purelib: {'false' if lib else 'true'}"
        f"\nTag: {tag}\n").encode()))
    record = [_record_line(n, d) for n, d in files] + [f"{DIST_INFO}/RECORD,,"]
    wheel = f"{NAME}-{VERSION}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(SONAME) else 0o644) << 16
            z.writestr(info, data)
        z.writestr(f"{DIST_INFO}/RECORD", "\n".join(record) + "\n")
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "_build/backend.py"] + [f"{NAME}/{f}" for f in _sources()]:
            t.add(os.path.join(HERE, rel), f"{base}/{rel}")
        pkg_info = io.BytesIO(METADATA.encode())
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info.getvalue())
        t.addfile(info, pkg_info)
    return name
