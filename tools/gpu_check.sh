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
# Usage: tools/gpu_check.sh            (SNEPPX_CUDA_ARCHS=90 to choose the architecture by hand)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v nvidia-smi >/dev/null || { echo "gpu_check: nvidia-smi not found: no NVIDIA driver here" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv
ARCHS=${SNEPPX_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')}
VENV=${SNEPPX_GPU_VENV:-/tmp/sneppx-gpu-check}
PY=${PYTHON:-python3}

start=$(date +%s)
rm -rf "$VENV" && "$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
mkdir -p "$VENV/wheels"
echo "== building the CUDA wheel for sm_$ARCHS"
CMAKE_ARGS="-DSNEPPX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$ARCHS" \
  "$VENV/bin/pip" wheel -q --no-deps -w "$VENV/wheels" packages/sneppx-core
"$VENV/bin/pip" install -q "$VENV"/wheels/sneppx_core-*.whl packages/sneppx-nn packages/sneppx-optim \
  packages/sneppx-data packages/sneppx-generate "packages/sneppx-distributed[cuda]" pytest hypothesis
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

echo "== CUDA benchmark rows (PyTorch columns need a CUDA build of torch in $VENV)"
"$VENV/bin/python" benchmarks/run.py --only cuda --quick --no-write || status=$?
echo "== total: $(( $(date +%s) - start )) s"
exit $status
