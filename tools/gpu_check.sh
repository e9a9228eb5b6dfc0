#!/usr/bin/env bash
# The GPU check of the CUDA backend, for a machine with an NVIDIA GPU and a driver for CUDA 13.
#
# Builds the CUDA-enabled sneppx-core wheel for this machine's GPU architecture (nvcc and the CUDA
# libraries from the NVIDIA wheels; no system CUDA install needed), installs it with its NVIDIA
# runtime wheels, the other packages and NCCL's wheel in a fresh virtual environment (offline: a
# folder on PYTHONPATH beside the machine's own packages), runs the
# `cuda`-marked tests (every op of the op table and its gradient on the GPU against the CPU, the
# fused nn kernels, attention, optimizer steps, convolutions, half dtypes, pinned copies and events,
# copies, memory statistics, errors; a small GPT trained 50 steps and sampled on GPU and CPU; NCCL
# collectives and DDP on 1 and 2 GPUs), one pytest process per file, and prints the CUDA benchmark
# rows. Output goes to stdout; the exit status is pytest's. On an NVIDIA H200 (16 cores) the build
# takes about 1.5 minutes and the tests under a minute; docs/architecture.md has the results.
#
# On a machine that reaches no package index, run tools/gpu_wheels.sh first where one is reached and
# bring .whl/ along: the script then builds with the machine's own CUDA toolkit and packages.
#
# Usage: tools/gpu_check.sh            (SNEPPX_CUDA_ARCHS=90 to choose the architecture by hand;
#        SNEPPX_GPU_BENCH= for the benchmark rows at full size, =none to leave them out; --quick by default)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v nvidia-smi >/dev/null || { echo "gpu_check: nvidia-smi not found: no NVIDIA driver here" >&2; exit 2; }
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv
ARCHS=${SNEPPX_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')}
VENV=${SNEPPX_GPU_VENV:-/tmp/sneppx-gpu-check}
PY=${PYTHON:-python3}

start=$(date +%s)
mkdir -p "${VENV}-wheels" && rm -f "${VENV}-wheels"/*.whl
if [ -d .whl ]; then
  # Offline (a lent GPU machine reaches no package index): the machine's own python3 and packages
  # (PyTorch for the benchmark columns, pybind11, scikit-build-core, pytest, hypothesis, NVIDIA's CUDA
  # and NCCL wheels) plus the wheels tools/gpu_wheels.sh fetched into .whl/, installed into a folder on
  # PYTHONPATH (a venv made from that python3 would not see its packages when it is itself a venv);
  # the machine's CUDA toolkit builds.
  rm -rf "$VENV"
  export PYTHONPATH="$VENV${PYTHONPATH:+:$PYTHONPATH}"
  RUN=$PY
  PIPX=(--no-index --no-build-isolation --no-deps)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$VENV" .whl/*.whl
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
  TOOLKIT="-DCUDAToolkit_ROOT=$CUDA_ROOT -DCMAKE_CUDA_COMPILER=$CUDA_ROOT/bin/nvcc"
  export LD_LIBRARY_PATH="$CUDA_ROOT/lib64:$CUDA_ROOT/lib:${LD_LIBRARY_PATH:-}"
  INSTALL=("$PY" -m pip install -q "${PIPX[@]}" --no-compile --upgrade --target "$VENV")
else
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  RUN=$VENV/bin/python
  PIPX=(--no-deps)
  TOOLKIT=""
  INSTALL=("$VENV/bin/pip" install -q)
fi
echo "== building the CUDA wheel for sm_$ARCHS"
CMAKE_ARGS="-DSNEPPX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$ARCHS $TOOLKIT" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
  "$RUN" -m pip wheel -q "${PIPX[@]}" -w "${VENV}-wheels" packages/sneppx-core
if [ -d .whl ]; then
  "${INSTALL[@]}" "${VENV}-wheels"/sneppx_core-*.whl packages/sneppx-nn packages/sneppx-optim \
    packages/sneppx-data packages/sneppx-generate packages/sneppx-distributed
else
  "${INSTALL[@]}" "${VENV}-wheels"/sneppx_core-*.whl packages/sneppx-nn packages/sneppx-optim \
    packages/sneppx-data packages/sneppx-generate "packages/sneppx-distributed[cuda]" pytest hypothesis
fi
echo "== build and install: $(( $(date +%s) - start )) s"

"$RUN" - <<'PY'
import sneppx_core as sx
print("sneppx-core", sx.__version__, "_HAS_CUDA", sx._HAS_CUDA, "devices", sx.cuda.device_count())
assert sx.cuda.is_available(), "the CUDA build sees no GPU"
print("device 0:", sx.cuda.get_device_name(0))
PY

echo "== cuda tests"
# launch() starts its ranks with the mpiexec of mpi4py's MPI; Open MPI's refuses to run as root unless told.
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# One pytest process per file, so that a device error that poisons a CUDA context fails one file only.
status=0
# The op-table comparisons (about 4,700 small cases) run in 8 processes where pytest-xdist is installed.
xdist=()
"$RUN" -c "import xdist" 2>/dev/null && xdist=(-n 8)
for f in packages/sneppx-core/tests/test_cuda.py packages/sneppx-core/tests/test_cuda_nn.py \
         tests/test_cuda_training.py packages/sneppx-distributed/tests/test_nccl.py \
         packages/sneppx-data/tests/test_torch_names.py; do
  echo "-- $f: from $(( $(date +%s) - start )) s"
  par=()
  [ "$f" = packages/sneppx-core/tests/test_cuda.py ] && par=("${xdist[@]}")
  "$RUN" -m pytest -q -p no:cacheprovider -m cuda -rfEs --tb=short "${par[@]}" "$f" || status=$?
done

if [ "${SNEPPX_GPU_BENCH-}" != none ]; then
  echo "== CUDA benchmark rows (PyTorch columns need a CUDA build of torch)"
  "$RUN" benchmarks/run.py --only cuda ${SNEPPX_GPU_BENCH---quick} --no-write || status=$?
fi
echo "== total: $(( $(date +%s) - start )) s"
exit $status
