#!/usr/bin/env bash
# build-niin-home.sh -- lay out an NIIN_HOME: what an NVSHMEM program needs to compile,
# link and run against niin-rs, as NVSHMEM's own install tree offers it.
#
# Usage: scripts/build-niin-home.sh [--lib FILE] [--niinrun FILE] [DIR]
#
#   DIR            where to put it; default: NIIN_HOME at the top of the repository
#                  (git-ignored). Created if missing.
#   --lib FILE     take this libnvshmem_host.so instead of building one
#   --niinrun FILE take this niinrun instead of building one
#                  (with both, cargo does not run at all: the tests hand in the debug build)
#   -h, --help     print this comment and exit
#
# Without --lib it runs `cargo build --release -p niin-ffi`; without --niinrun,
# `cargo build --release -p niin-api --bin niinrun`. Then it makes
#
#   DIR/bin/niinrun                  the launcher (niinrun -n N ./app)
#   DIR/include/                     the headers of device/include (nvshmem.h, nvshmemx.h,
#                                    niin/*.h), copied
#   DIR/lib/libnvshmem_host.so       the library, and libnvshmem.so as a link to it (for
#                                    build systems that link -lnvshmem)
#   DIR/lib/cmake/nvshmem/           CMake package: nvshmem-config.cmake and
#                                    NVSHMEMConfig.cmake (NVSHMEM's name), each with its
#                                    version file (3.4.5, the NVSHMEM API niin-rs implements)
#   DIR/lib/pkgconfig/nvshmem.pc     pkg-config file (NVSHMEM itself ships none)
#
# from the templates in scripts/niin-home/ (versions from device/include/niin/types.h).
# The CMake and pkg-config files find the tree from their own location
# (${CMAKE_CURRENT_LIST_DIR}, ${pcfiledir}): a moved or copied DIR still works.
#
# Use, from the top of the repository (CPU mock shown; on a GPU NIIN_TRANSPORT=nccl, and
# nvcc, which takes no -Wl,: write `-Xlinker -rpath,DIR` instead of `-Wl,-rpath,DIR`):
#
#   NIIN_HOME=$PWD/NIIN_HOME     # an absolute path: the rpaths below are made from it
#   # a plain link line; the rpath lets the program find the library without LD_LIBRARY_PATH
#   cc -std=c11 examples/pkg-config/app.c -I$NIIN_HOME/include -L$NIIN_HOME/lib \
#      -Wl,-rpath,$NIIN_HOME/lib -lnvshmem_host -o app
#   # pkg-config (nvshmem.pc's Libs carry the rpath)
#   PKG_CONFIG_PATH=$NIIN_HOME/lib/pkgconfig examples/pkg-config/build.sh app
#   # CMake: find_package(nvshmem) or find_package(NVSHMEM), optionally with a version
#   # (3.4); targets nvshmem::nvshmem_host (the library), nvshmem::nvshmem_device (the
#   # header-only device API: include folders, with NCCL's from -DNCCL_INCLUDE_DIR=DIR or
#   # -DNCCL_HOME=DIR, or those environment variables) and nvshmem::nvshmem (both)
#   cmake -S examples/cmake -B target/examples/cmake -DCMAKE_PREFIX_PATH=$NIIN_HOME
#   cmake --build target/examples/cmake   # (-Dnvshmem_DIR=$NIIN_HOME/lib/cmake/nvshmem works too)
#   # run, without LD_LIBRARY_PATH
#   NIIN_TRANSPORT=mock $NIIN_HOME/bin/niinrun -n 2 ./app
#
# DIR/bin, DIR/include and DIR/lib are replaced on every run. Honours CARGO (the cargo to
# run) and CARGO_TARGET_DIR (where cargo builds).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
templates="$root/scripts/niin-home"
cargo="${CARGO:-cargo}"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

die() {
    echo "build-niin-home.sh: $*" >&2
    exit 1
}

lib=""
niinrun=""
dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --lib) [ $# -ge 2 ] || die "--lib needs a FILE"; lib="$2"; shift 2 ;;
        --lib=*) lib="${1#--lib=}"; shift ;;
        --niinrun) [ $# -ge 2 ] || die "--niinrun needs a FILE"; niinrun="$2"; shift 2 ;;
        --niinrun=*) niinrun="${1#--niinrun=}"; shift ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        --) shift; break ;;
        -*) die "unknown option $1 (try --help)" ;;
        *) [ -z "$dir" ] || die "one DIR only (got $dir and $1)"; dir="$1"; shift ;;
    esac
done
if [ $# -gt 0 ]; then
    [ -z "$dir" ] && [ $# -eq 1 ] || die "one DIR only"
    dir="$1"
fi
dir="${dir:-$root/NIIN_HOME}"

if [ -z "$lib" ]; then
    "$cargo" build --release -p niin-ffi --manifest-path "$root/Cargo.toml"
    lib="$target/release/libnvshmem_host.so"
fi
if [ -z "$niinrun" ]; then
    "$cargo" build --release -p niin-api --bin niinrun --manifest-path "$root/Cargo.toml"
    niinrun="$target/release/niinrun"
fi
[ -f "$lib" ] || die "$lib: no such library (was it built?)"
[ -x "$niinrun" ] || die "$niinrun: no such program (was it built?)"

# Versions: the NVSHMEM API (vendor version) and niin-rs's own, from the headers.
types="$root/device/include/niin/types.h"
define() {
    sed -n "s/^#define $1 \\([0-9][0-9]*\\)\$/\\1/p" "$types"
}
nv_major="$(define NVSHMEM_VENDOR_MAJOR_VERSION)"
nv_minor="$(define NVSHMEM_VENDOR_MINOR_VERSION)"
nv_patch="$(define NVSHMEM_VENDOR_PATCH_VERSION)"
[ -n "$nv_major" ] && [ -n "$nv_minor" ] && [ -n "$nv_patch" ] ||
    die "no NVSHMEM_VENDOR_{MAJOR,MINOR,PATCH}_VERSION in $types"
nvshmem_version="$nv_major.$nv_minor.$nv_patch"
niin_version="$(sed -n 's/^#define NIIN_VERSION_STRING "\(.*\)"$/\1/p' "$types")"
[ -n "$niin_version" ] || die "no NIIN_VERSION_STRING in $types"

# fill TEMPLATE OUT: the template with its @VARIABLES@ replaced.
fill() {
    sed -e "s/@NVSHMEM_VERSION@/$nvshmem_version/g" \
        -e "s/@NIIN_VERSION@/$niin_version/g" "$1" >"$2"
    if grep -q '@[A-Z_]*@' "$2"; then
        die "$1: a @VARIABLE@ was left unfilled in $2"
    fi
}

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
[ "$dir" != / ] || die "DIR may not be / (its bin, include and lib are replaced)"
rm -rf "${dir:?}/bin" "${dir:?}/include" "${dir:?}/lib"
mkdir -p "$dir/bin" "$dir/lib/cmake/nvshmem" "$dir/lib/pkgconfig"
cp -R "$root/device/include" "$dir/include"
cp "$lib" "$dir/lib/libnvshmem_host.so"
ln -s libnvshmem_host.so "$dir/lib/libnvshmem.so"
cp "$niinrun" "$dir/bin/niinrun"
chmod 755 "$dir/bin/niinrun"

cmake_dir="$dir/lib/cmake/nvshmem"
# find_package(nvshmem) reads nvshmem-config.cmake; find_package(NVSHMEM) NVSHMEMConfig.cmake
# (the name NVSHMEM installs) or nvshmem-config.cmake. Same content under both names.
fill "$templates/nvshmem-config.cmake.in" "$cmake_dir/nvshmem-config.cmake"
fill "$templates/nvshmem-config-version.cmake.in" "$cmake_dir/nvshmem-config-version.cmake"
cp "$cmake_dir/nvshmem-config.cmake" "$cmake_dir/NVSHMEMConfig.cmake"
cp "$cmake_dir/nvshmem-config-version.cmake" "$cmake_dir/NVSHMEMConfigVersion.cmake"
fill "$templates/nvshmem.pc.in" "$dir/lib/pkgconfig/nvshmem.pc"

echo "NIIN_HOME=$dir (NVSHMEM API $nvshmem_version, niin-rs $niin_version)"
echo "cc:         -I$dir/include -L$dir/lib -Wl,-rpath,$dir/lib -lnvshmem_host"
echo "pkg-config: PKG_CONFIG_PATH=$dir/lib/pkgconfig pkg-config --cflags --libs nvshmem"
echo "CMake:      -DCMAKE_PREFIX_PATH=$dir; find_package(nvshmem); nvshmem::nvshmem_host"
echo "run:        $dir/bin/niinrun -n 2 ./app"
