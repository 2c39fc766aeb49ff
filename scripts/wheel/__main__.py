"""python -m niin_rs: where the installed NIIN_HOME is, for shells and build scripts."""

import argparse
import sys

import niin_rs


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m niin_rs",
        description="Paths and flags of the NIIN_HOME this package installs "
        f"(niin-rs {niin_rs.__version__}, NVSHMEM API {niin_rs.NVSHMEM_VERSION}).",
    )
    choice = parser.add_mutually_exclusive_group()
    for flag, what in [
        ("--home", "the NIIN_HOME folder"),
        ("--include", "the include folder"),
        ("--lib", "the lib folder"),
        ("--niinrun", "the niinrun launcher"),
        ("--cmake-prefix", "a CMAKE_PREFIX_PATH entry for find_package(nvshmem)"),
        ("--pkg-config-path", "a PKG_CONFIG_PATH entry holding nvshmem.pc"),
        ("--cflags", "compiler flags"),
        ("--libs", "linker flags, with an rpath"),
        ("--version", "niin-rs's version"),
    ]:
        choice.add_argument(flag, action="store_true", help=f"print {what}")
    args = parser.parse_args(argv)
    answers = {
        "home": niin_rs.home,
        "include": niin_rs.include_dir,
        "lib": niin_rs.lib_dir,
        "niinrun": niin_rs.niinrun,
        "cmake_prefix": niin_rs.cmake_prefix,
        "pkg_config_path": niin_rs.pkgconfig_dir,
        "cflags": lambda: " ".join(niin_rs.cflags()),
        "libs": lambda: " ".join(niin_rs.libs()),
        "version": lambda: niin_rs.__version__,
    }
    for key, answer in answers.items():
        if getattr(args, key):
            print(answer())
            return 0
    print(f"NIIN_HOME={niin_rs.home()} (NVSHMEM API {niin_rs.NVSHMEM_VERSION}, niin-rs {niin_rs.__version__})")
    print(f"cc:         {' '.join(niin_rs.cflags() + niin_rs.libs())}")
    print(f"pkg-config: PKG_CONFIG_PATH={niin_rs.pkgconfig_dir()} pkg-config --cflags --libs nvshmem")
    print(f"CMake:      -DCMAKE_PREFIX_PATH={niin_rs.cmake_prefix()}; find_package(nvshmem); nvshmem::nvshmem_host")
    print("run:        niinrun -n 2 ./app")
    return 0


if __name__ == "__main__":
    sys.exit(main())
