#!/usr/bin/env bash
# Fetches, on a machine that reaches the package index, the wheels that tools/gpu_check.sh needs on a
# GPU machine that reaches none (the lent NVIDIA H200 machines: Python 3.12, with PyTorch, pybind11,
# scikit-build-core, pytest, mpi4py and NVIDIA's CUDA and NCCL wheels, but no hatchling or OpenBLAS),
# into .whl/ (ignored by git through .git/info/exclude). About 21 MB.
#
# Usage: tools/gpu_wheels.sh            (PYVER=3.12 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER=${PYVER:-3.12}
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
  "${platforms[@]}" -d .whl hatchling pathspec trove-classifiers scipy-openblas32 mpich tqdm
ls -l .whl
