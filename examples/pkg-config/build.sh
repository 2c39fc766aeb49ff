#!/bin/sh
# build.sh -- build app.c, an NVSHMEM host program, with pkg-config's nvshmem.pc from an
# NIIN_HOME (scripts/build-niin-home.sh):
#
#   PKG_CONFIG_PATH=$NIIN_HOME/lib/pkgconfig examples/pkg-config/build.sh [OUT]
#   NIIN_TRANSPORT=mock $NIIN_HOME/bin/niinrun -n 2 ./app
#
# OUT: the program to write (default: ./app). Honours CC (default cc), CFLAGS, PKG_CONFIG
# (default pkg-config) and PKG_CONFIG_PATH, which must be absolute (nvshmem.pc makes the
# program's rpath from it: the program runs without LD_LIBRARY_PATH).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-app}
pkg_config=${PKG_CONFIG:-pkg-config}

flags=$("$pkg_config" --cflags --libs nvshmem)
set -x
# shellcheck disable=SC2086 # CFLAGS and the flags are split into words on purpose
${CC:-cc} -std=c11 -Wall -Wextra ${CFLAGS:-} "$here/app.c" $flags -o "$out"
