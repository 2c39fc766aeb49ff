"""The `niinrun` console script: replaces itself with the package's niinrun binary, so the
launcher's signals, exit status and environment are the binary's own."""

import os
import sys

import niin_rs


def main():
    path = niin_rs.niinrun()
    try:
        os.execv(path, [path] + sys.argv[1:])
    except OSError as e:
        sys.exit(f"niinrun: cannot run {path}: {e}")
