#!/usr/bin/env bash
# The GPU check of the CUDA backend, for a machine with an NVIDIA GPU and a driver for CUDA 13.
#
# Builds the CUDA-enabled sneppx-core wheel for this machine's GPU architecture (nvcc and the CUDA
# libraries from the NVIDIA wheels; no system CUDA install needed), installs it with its NVIDIA
# runtime wheels, the other packages and NCCL's wheel in a fresh virtual environment, runs the
# `cuda`-marked tests (every op of the op table and its gradient on the GPU against the CPU, the
# fused nn kernels, attention, optimizer steps, convolutions, half dtypes, pinned copies and events,
# copies, memory statistics, errors; a small GPT trained 50 steps and sampled on GPU and CPU; NCCL
# collectives and DDP on 1 and 2 GPUs) and prints the CUDA benchmark rows. Output goes to stdout;
# the exit status is pytest's.
#
# This script has not been run yet: the machines it was written on have no GPU. The CUDA code it
# builds has been compiled there, never executed.
#
# On a machine that reaches no package index, run tools/gpu_wheels.sh first where one is reached and
# bring .whl/ along: the script then builds with the machine's own CUDA toolkit and packages.
#
# Usage: tools/gpu_check.sh            (SNEPPX_CUDA_ARCHS=90 to choose the architecture by hand)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v nvidia-smi >/dev/null || { echo "gpu_check: nvidia-smi not found: no NVIDIA driver here" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv
ARCHS=${SNEPPX_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')}
VENV=${SNEPPX_GPU_VENV:-/tmp/sneppx-gpu-check}
PY=${PYTHON:-python3}

start=$(date +%s)
rm -rf "$VENV"
if [ -d .whl ]; then
  # Offline (a lent GPU machine reaches no package index): the machine's own packages (PyTorch for the
  # benchmark columns, pybind11, scikit-build-core, pytest, mpi4py, NVIDIA's CUDA and NCCL wheels) plus
  # the wheels tools/gpu_wheels.sh fetched into .whl/; the machine's CUDA toolkit builds.
  "$PY" -m venv --system-site-packages "$VENV"
  "$VENV/bin/pip" install -q --no-index --no-deps .whl/*.whl
  PIPX=(--no-index --no-build-isolation --no-deps)
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
  TOOLKIT="-DCUDAToolkit_ROOT=$CUDA_ROOT -DCMAKE_CUDA_COMPILER=$CUDA_ROOT/bin/nvcc"
  export LD_LIBRARY_PATH="$CUDA_ROOT/lib64:$CUDA_ROOT/lib:${LD_LIBRARY_PATH:-}"
else
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  PIPX=(--no-deps)
  TOOLKIT=""
fi
mkdir -p "$VENV/wheels"
echo "== building the CUDA wheel for sm_$ARCHS"
CMAKE_ARGS="-DSNEPPX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$ARCHS $TOOLKIT" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
  "$VENV/bin/pip" wheel -q "${PIPX[@]}" -w "$VENV/wheels" packages/sneppx-core
if [ -d .whl ]; then
  "$VENV/bin/pip" install -q "${PIPX[@]}" "$VENV"/wheels/sneppx_core-*.whl packages/sneppx-nn packages/sneppx-optim \
    packages/sneppx-data packages/sneppx-generate packages/sneppx-distributed
else
  "$VENV/bin/pip" install -q "$VENV"/wheels/sneppx_core-*.whl packages/sneppx-nn packages/sneppx-optim \
    packages/sneppx-data packages/sneppx-generate "packages/sneppx-distributed[cuda]" pytest hypothesis
fi
echo "== build and install: $(( $(date +%s) - start )) s"

"$VENV/bin/python" - <<'PY'
import sneppx_core as sx
print("sneppx-core", sx.__version__, "_HAS_CUDA", sx._HAS_CUDA, "devices", sx.cuda.device_count())
assert sx.cuda.is_available(), "the CUDA build sees no GPU"
print("device 0:", sx.cuda.get_device_name(0))
PY

echo "== cuda tests"
status=0
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -m cuda -rs packages/sneppx-core/tests \
  tests/test_cuda_training.py packages/sneppx-distributed/tests/test_nccl.py || status=$?
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -m cuda -rs packages/sneppx-data/tests/test_torch_names.py \
  || status=$?

echo "== CUDA benchmark rows (PyTorch columns need a CUDA build of torch in $VENV)"
"$VENV/bin/python" benchmarks/run.py --only cuda --quick --no-write || status=$?
echo "== total: $(( $(date +%s) - start )) s"
exit $status
