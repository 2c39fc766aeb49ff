#!/usr/bin/env bash
# install-cuda-toolchain.sh -- a compile-only CUDA 13.0 toolchain and NCCL's headers, from
# PyPI wheels, for compiling the device headers (scripts/compile-device-headers.sh) on a
# machine without CUDA or a GPU.
#
# Usage: scripts/install-cuda-toolchain.sh [DIR]
#
#   DIR  where to install; default: .cuda at the top of the repository (git-ignored).
#
# It lays out
#
#   DIR/cuda/            nvcc 13.0 as a CUDA toolkit: bin/ (nvcc, cudafe++, ptxas, nvlink,
#                        fatbinary), nvvm/ (cicc, libdevice), include/ (runtime headers,
#                        crt/, cccl/), lib/ and lib64 -> lib (cudart, cudadevrt, libnvvm)
#   DIR/nccl-<V>/include NCCL <V>'s headers (nccl.h, nccl_device.h, nccl_device/), for
#                        each V in NCCL_VERSIONS below
#   DIR/ready            the CUDA wheels installed; when it matches (and every NCCL
#                        version asked for is there), a rerun does nothing
#
# from the wheels nvidia-cuda-nvcc, nvidia-cuda-runtime, nvidia-cuda-crt, nvidia-cuda-cccl,
# nvidia-nvvm (13.0.x; the CUDA 13 wheels carry no -cu13 suffix) and nvidia-nccl-cu13
# (only include/ is kept). Nothing is pip-installed: `pip download --no-deps` fetches each
# wheel into a temporary folder, the needed files are unpacked, the wheel is deleted. The
# host compiler is the machine's g++ (CUDA 13.0 supports gcc up to 14).
#
# Honours PYTHON (the python3 that runs pip; default python3) and NIIN_NCCL_HEADERS (the
# NCCL header versions to install, space-separated; default: the two CI compiles against.
# scripts/gpu/prepare.sh adds 2.28.3, the GPU machine's own NCCL). Each NCCL version is
# installed once and kept; asking for another one adds it without touching the rest.
set -euo pipefail

# CUDA 13.0 Update 2 components (one release: nvcc, crt and nvvm 13.0.88, cudart 13.0.96,
# CCCL 13.0.85) and the NCCL releases the CI compiles against.
CUDA_WHEELS=(
    nvidia-cuda-nvcc==13.0.88
    nvidia-cuda-crt==13.0.88
    nvidia-nvvm==13.0.88
    nvidia-cuda-runtime==13.0.96
    nvidia-cuda-cccl==13.0.85
)
read -ra NCCL_VERSIONS <<<"${NIIN_NCCL_HEADERS:-2.28.9 2.31.2}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/.cuda}"
python="${PYTHON:-python3}"
stamp="cuda: ${CUDA_WHEELS[*]}"

report() {
    echo "install-cuda-toolchain.sh: $dir"
    echo "  $("$dir/cuda/bin/nvcc" --version | tail -n 2 | head -n 1)"
    echo "  wheels: ${CUDA_WHEELS[*]}"
    for v in "${NCCL_VERSIONS[@]}"; do
        echo "  NCCL $v headers: $dir/nccl-$v/include" \
            "(NCCL_VERSION_CODE $(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' \
                "$dir/nccl-$v/include/nccl.h"))"
    done
    echo "  host compiler: $(command -v g++) ($(g++ -dumpfullversion))"
    echo "  size: $(du -sh "$dir" | cut -f1)"
}

# NCCL versions not installed yet (an installed one has include/nccl.h).
missing_nccl() {
    for v in "${NCCL_VERSIONS[@]}"; do
        [ -f "$dir/nccl-$v/include/nccl.h" ] || echo "$v"
    done
}
cuda_ready=0
if [ -f "$dir/ready" ] && [ "$(cat "$dir/ready")" = "$stamp" ] && [ -x "$dir/cuda/bin/nvcc" ]; then
    cuda_ready=1
    if [ -z "$(missing_nccl)" ]; then
        echo "install-cuda-toolchain.sh: already installed (cached)"
        report
        exit 0
    fi
fi

if ! command -v g++ >/dev/null; then
    echo "install-cuda-toolchain.sh: g++ not found (nvcc needs a host C++ compiler)" >&2
    exit 1
fi

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
download="$dir/.download"
rm -rf "$download"
mkdir -p "$download"
trap 'rm -rf "$download"' EXIT

fetch() { # wheel specs...
    "$python" -m pip download --no-deps --disable-pip-version-check --quiet -d "$download" "$@"
}

# unpack WHEEL PREFIX DEST: the members under PREFIX, written below DEST without it, with
# the permissions the wheel records (executables stay executable).
unpack() {
    "$python" - "$1" "$2" "$3" <<'EOF'
import os, sys, zipfile
wheel, prefix, dest = sys.argv[1:4]
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        rel = info.filename[len(prefix):]
        out = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                dst.write(chunk)
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(out, mode if mode else 0o644)
        n += 1
if n == 0:
    sys.exit(f"{wheel}: nothing under {prefix}")
EOF
}

if [ $cuda_ready -eq 0 ]; then
    rm -rf "$dir/ready" "$dir/cuda"
    echo "install-cuda-toolchain.sh: downloading ${CUDA_WHEELS[*]}"
    fetch "${CUDA_WHEELS[@]}"
    for wheel in "$download"/*.whl; do
        unpack "$wheel" nvidia/cu13/ "$dir/cuda"
        rm -f "$wheel"
    done
    chmod +x "$dir"/cuda/bin/* "$dir"/cuda/nvvm/bin/*
    ln -sfn lib "$dir/cuda/lib64"
fi

for v in $(missing_nccl); do
    rm -rf "$dir/nccl-$v"
    echo "install-cuda-toolchain.sh: downloading nvidia-nccl-cu13==$v (keeping include/)"
    fetch "nvidia-nccl-cu13==$v"
    for wheel in "$download"/*.whl; do
        unpack "$wheel" nvidia/nccl/include/ "$dir/nccl-$v/include"
        rm -f "$wheel"
    done
done

"$dir/cuda/bin/nvcc" --version >/dev/null
echo "$stamp" >"$dir/ready"
report
