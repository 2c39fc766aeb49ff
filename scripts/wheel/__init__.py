"""niin-rs: NVSHMEM's API implemented over NCCL, as an installed NIIN_HOME.

This package's folder is an NIIN_HOME (laid out by niin-rs's scripts/build-niin-home.sh):
include/ (nvshmem.h, nvshmemx.h and the header-only device API), lib/ (libnvshmem_host.so,
the CMake package in lib/cmake/nvshmem, lib/pkgconfig/nvshmem.pc) and bin/niinrun, the
launcher (also on PATH as the `niinrun` console script).

    import niin_rs
    niin_rs.home()           # the NIIN_HOME folder
    niin_rs.cmake_prefix()   # for -DCMAKE_PREFIX_PATH (find_package(nvshmem))
    niin_rs.library()        # libnvshmem_host.so, e.g. for ctypes.CDLL

`python -m niin_rs --help` prints the same paths and compiler flags for shell use.
Built by scripts/build-wheel.py from scripts/wheel/ (niin-rs @NIIN_VERSION@).
"""

import os

__version__ = "@NIIN_VERSION@"
#: The NVSHMEM API version niin-rs implements (its headers report it, as NVSHMEM does).
NVSHMEM_VERSION = "@NVSHMEM_VERSION@"

_HOME = os.path.dirname(os.path.abspath(__file__))


def home():
    """The NIIN_HOME folder: this package's own."""
    return _HOME


def include_dir():
    """Headers: nvshmem.h, nvshmemx.h, niin/ (compile with -I this)."""
    return os.path.join(_HOME, "include")


def lib_dir():
    """libnvshmem_host.so (link with -L this -Wl,-rpath,this -lnvshmem_host)."""
    return os.path.join(_HOME, "lib")


def library():
    """The path of libnvshmem_host.so."""
    return os.path.join(_HOME, "lib", "libnvshmem_host.so")


def niinrun():
    """The path of the niinrun launcher (niinrun -n N ./app)."""
    return os.path.join(_HOME, "bin", "niinrun")


def cmake_prefix():
    """A CMAKE_PREFIX_PATH entry under which find_package(nvshmem) finds the package."""
    return _HOME


def pkgconfig_dir():
    """A PKG_CONFIG_PATH entry holding nvshmem.pc."""
    return os.path.join(_HOME, "lib", "pkgconfig")


def cflags():
    """Compiler flags for the host API (kernels using the device API also need NCCL's
    headers: -isystem <nccl>/include)."""
    return [f"-I{include_dir()}"]


def libs():
    """Linker flags, with an rpath: programs find the library without LD_LIBRARY_PATH
    (nvcc takes `-Xlinker -rpath,DIR` for `-Wl,-rpath,DIR`)."""
    return [f"-L{lib_dir()}", f"-Wl,-rpath,{lib_dir()}", "-lnvshmem_host"]
