#!/usr/bin/env bash
# build-niin-home.sh -- lay out an NIIN_HOME: what an NVSHMEM program needs to compile
# and link against niin-rs.
#
# Usage: scripts/build-niin-home.sh [DIR]
#
#   DIR  where to put it; default: NIIN_HOME at the top of the repository (git-ignored).
#
# It runs `cargo build --release -p niin-ffi`, then makes
#
#   DIR/include/   the headers of device/include (nvshmem.h, nvshmemx.h, niin/*.h), copied
#   DIR/lib/       libnvshmem_host.so, and libnvshmem.so as a link to it (for build
#                  systems that link -lnvshmem)
#
# and prints the flags to use, e.g. (CPU mock; a GPU build uses nvcc with the same flags):
#
#   NIIN_HOME=$PWD/NIIN_HOME
#   cc -std=c11 app.c -I$NIIN_HOME/include -L$NIIN_HOME/lib -lnvshmem_host
#   LD_LIBRARY_PATH=$NIIN_HOME/lib NIIN_TRANSPORT=mock niinrun -n 4 ./a.out
#
# DIR/include and DIR/lib are replaced on every run. Honours CARGO (the cargo to run) and
# CARGO_TARGET_DIR (where cargo builds).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/NIIN_HOME}"
cargo="${CARGO:-cargo}"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

"$cargo" build --release -p niin-ffi --manifest-path "$root/Cargo.toml"

lib="$target/release/libnvshmem_host.so"
if [ ! -f "$lib" ]; then
    echo "build-niin-home.sh: $lib was not built" >&2
    exit 1
fi

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
rm -rf "$dir/include" "$dir/lib"
mkdir -p "$dir/lib"
cp -R "$root/device/include" "$dir/include"
cp "$lib" "$dir/lib/libnvshmem_host.so"
ln -s libnvshmem_host.so "$dir/lib/libnvshmem.so"

echo "NIIN_HOME=$dir"
echo "-I$dir/include -L$dir/lib -lnvshmem_host"
