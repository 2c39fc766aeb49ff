#!/usr/bin/env python3
"""build-wheel.py -- a Python wheel that carries NIIN_HOME: `pip install` it, and NVSHMEM
programs compile, link and run against niin-rs with the package's headers, library,
CMake package, pkg-config file and niinrun, as NVSHMEM's own wheel (nvidia-nvshmem-cu13)
carries NVSHMEM.

Usage: python3 scripts/build-wheel.py [--home DIR] [--out DIR] [--no-strip]

  --home DIR   an NIIN_HOME already laid out by scripts/build-niin-home.sh; without it, the
               script runs build-niin-home.sh (release build) into target/wheel/NIIN_HOME
  --out DIR    where the wheel goes (default: target/wheel)
  --no-strip   keep debug information in libnvshmem_host.so and niinrun (default: `strip`
               them when strip is on PATH; a debug build is ~100 MB otherwise)

The wheel, niin_rs-<version>-py3-none-manylinux_2_<N>_<arch>.whl (N: the newest glibc
symbol version the library and niinrun use), installs the package `niin_rs`:

  niin_rs/include, niin_rs/lib, niin_rs/bin/niinrun   NIIN_HOME itself; the package folder
                                                      is the NIIN_HOME
  niin_rs/__init__.py    home(), include_dir(), lib_dir(), library(), niinrun(),
                         cmake_prefix(), pkgconfig_dir(); __version__, NVSHMEM_VERSION
  niin_rs/__main__.py    python -m niin_rs --home | --cmake-prefix | --pkg-config-path |
                         --cflags | --libs | --version (nothing: a summary)
  a `niinrun` console script that executes niin_rs/bin/niinrun

lib/libnvshmem.so, a symbolic link in NIIN_HOME, becomes a one-line linker script
(INPUT(libnvshmem_host.so)): wheels hold no links, and -lnvshmem still links the library.
Only the Python standard library is used; the wheel is a zip file with the metadata that
the wheel format (PEP 427, PEP 491) asks for, its RECORD with sha256 digests.
"""

import argparse
import base64
import hashlib
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(ROOT, "scripts", "wheel")
NAME = "niin_rs"  # the distribution's file-name form and the package's import name


def die(message):
    sys.exit(f"build-wheel.py: {message}")


def versions():
    """(niin-rs's version, the NVSHMEM API version) from device/include/niin/types.h."""
    with open(os.path.join(ROOT, "device", "include", "niin", "types.h")) as f:
        text = f.read()
    niin = re.search(r'^#define NIIN_VERSION_STRING "([^"]+)"$', text, re.M)
    parts = [
        re.search(rf"^#define NVSHMEM_VENDOR_{p}_VERSION (\d+)$", text, re.M)
        for p in ("MAJOR", "MINOR", "PATCH")
    ]
    if not niin or not all(parts):
        die("types.h lacks NIIN_VERSION_STRING or NVSHMEM_VENDOR_*_VERSION")
    return niin.group(1), ".".join(m.group(1) for m in parts)


def glibc_minor(paths):
    """The newest GLIBC_2.N symbol version any of `paths` asks for (at least 17)."""
    newest = 17
    for path in paths:
        with open(path, "rb") as f:
            for m in re.finditer(rb"GLIBC_2\.(\d+)", f.read()):
                newest = max(newest, int(m.group(1)))
    return newest


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


class Wheel:
    """A wheel being written: files with their modes, and RECORD's lines."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, name, data, executable=False):
        info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
        self.zip.writestr(info, data)
        self.record.append(f"{name},{digest(data)},{len(data)}")

    def close(self, record_name):
        lines = self.record + [f"{record_name},,"]
        info = zipfile.ZipInfo(record_name, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = (0o644 | stat.S_IFREG) << 16
        self.zip.writestr(info, "\n".join(lines) + "\n", zipfile.ZIP_DEFLATED)
        self.zip.close()


def template(name, **values):
    with open(os.path.join(TEMPLATES, name)) as f:
        text = f.read()
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.search(r"@[A-Z_]+@", text)
    if left:
        die(f"scripts/wheel/{name}: {left.group(0)} was left unfilled")
    return text.encode()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", help="an NIIN_HOME laid out by build-niin-home.sh")
    parser.add_argument("--out", default=os.path.join(ROOT, "target", "wheel"))
    parser.add_argument("--no-strip", action="store_true")
    args = parser.parse_args()

    home = args.home
    if home is None:
        home = os.path.join(ROOT, "target", "wheel", "NIIN_HOME")
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "build-niin-home.sh"), home], check=True)
    home = os.path.abspath(home)
    for need in ("bin/niinrun", "include/nvshmem.h", "lib/libnvshmem_host.so", "lib/pkgconfig/nvshmem.pc"):
        if not os.path.exists(os.path.join(home, need)):
            die(f"{home} is no NIIN_HOME: it has no {need} (lay one out with scripts/build-niin-home.sh)")
    niin_version, nvshmem_version = versions()

    # Stripped copies of the two binaries (the NIIN_HOME given is left as it is).
    os.makedirs(args.out, exist_ok=True)
    binaries = {}
    for rel in ("lib/libnvshmem_host.so", "bin/niinrun"):
        src = os.path.join(home, rel)
        if args.no_strip or shutil.which("strip") is None:
            binaries[rel] = src
            continue
        copy = os.path.join(args.out, "stripped-" + os.path.basename(rel))
        shutil.copyfile(src, copy)
        subprocess.run(["strip", copy], check=True)
        binaries[rel] = copy

    arch = platform.machine()
    tag = f"py3-none-manylinux_2_{glibc_minor(binaries.values())}_{arch}"
    dist_info = f"{NAME}-{niin_version}.dist-info"
    path = os.path.join(args.out, f"{NAME}-{niin_version}-{tag}.whl")
    wheel = Wheel(path)

    # The package: Python files from scripts/wheel/, then NIIN_HOME's tree.
    values = {"NIIN_VERSION": niin_version, "NVSHMEM_VERSION": nvshmem_version}
    for py in ("__init__.py", "__main__.py", "_launcher.py"):
        wheel.add(f"{NAME}/{py}", template(py, **values))
    for top in ("bin", "include", "lib"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(home, top)):
            dirnames.sort()
            for file in sorted(filenames):
                full = os.path.join(dirpath, file)
                rel = os.path.relpath(full, home).replace(os.sep, "/")
                if rel == "lib/libnvshmem.so":
                    wheel.add(f"{NAME}/{rel}", b"/* -lnvshmem: niin-rs's libnvshmem_host.so */\nINPUT(libnvshmem_host.so)\n")
                    continue
                if os.path.islink(full):
                    die(f"{full} is a symbolic link, which a wheel cannot hold")
                with open(binaries.get(rel, full), "rb") as f:
                    data = f.read()
                wheel.add(f"{NAME}/{rel}", data, executable=os.access(full, os.X_OK) and top == "bin")

    # Metadata.
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        wheel.add(f"{dist_info}/LICENSE", f.read())
    wheel.add(f"{dist_info}/METADATA", template("METADATA", **values))
    wheel.add(
        f"{dist_info}/WHEEL",
        f"Wheel-Version: 1.0\nGenerator: niin-rs scripts/build-wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    )
    wheel.add(f"{dist_info}/entry_points.txt", b"[console_scripts]\nniinrun = niin_rs._launcher:main\n")
    wheel.add(f"{dist_info}/top_level.txt", f"{NAME}\n".encode())
    wheel.close(f"{dist_info}/RECORD")

    for copy in binaries.values():
        if copy.startswith(os.path.abspath(args.out)):
            os.remove(copy)
    size = os.path.getsize(path)
    print(f"{path} ({size / 2**20:.1f} MiB; niin-rs {niin_version}, NVSHMEM API {nvshmem_version})")
    print(f"install: python3 -m pip install {path}")


if __name__ == "__main__":
    main()
