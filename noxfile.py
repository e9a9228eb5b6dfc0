"""Developer and CI sessions. `nox -s tests` is the README's test command.

The core wheel (the only compiled package) is built once and reused by every session: it is cached
under .nox/_wheels keyed by a hash of core's sources, so one run builds it at most once.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import time

import nox
import nox.command

ROOT = pathlib.Path(__file__).parent
CORE = ROOT / "packages" / "sneppx-core"
SIBLINGS = ["sneppx-data", "sneppx-generate", "sneppx-nn", "sneppx-optim", "sneppx-distributed"]
WHEELS = ROOT / ".nox" / "_wheels"
TEST_DEPS = ["pytest>=7", "hypothesis>=6"]
# The optional extras (sneppx-optim[tensorboard], sneppx-alg[plot]), so their tests run too; tensorboard (the
# package SummaryWriter falls back to without tensorboardX) and tabulate (fx's Graph.print_tabular) likewise.
OPTIONAL_DEPS = ["tensorboardX>=2.6", "matplotlib>=3.7", "tensorboard>=2.12", "tabulate>=0.9"]

nox.options.default_venv_backend = "uv|venv"
nox.options.sessions = ["tests"]


def _present(names):
    return [n for n in names if (ROOT / "packages" / n / "pyproject.toml").exists()]


def _core_hash() -> str:
    h = hashlib.sha256()
    for p in sorted(CORE.rglob("*")):
        parts = p.relative_to(CORE).parts
        # Build folders (build/, build-cuda/, ...) and tool caches (.hypothesis/, ...) are not sources.
        if any(part.startswith(("build", ".")) for part in parts):
            continue
        if p.is_file() and p.suffix not in (".so", ".pyc") and "tests" not in parts:
            h.update(str(p.relative_to(CORE)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def core_wheel(session: nox.Session, env: dict | None = None, tag: str = "release") -> pathlib.Path:
    """Builds (once) and returns the sneppx-core wheel for the current sources."""
    out = WHEELS / f"{tag}-{_core_hash()}"
    found = list(out.glob("sneppx_core-*.whl"))
    if found:
        return found[0]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    session.install("pip")
    session.run("python", "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(CORE), env=env or {})
    return next(out.glob("sneppx_core-*.whl"))


def install_all(session: nox.Session, extra=()):
    session.install(str(core_wheel(session)), *[str(ROOT / "packages" / n) for n in _present(SIBLINGS)], *extra)
    if (ROOT / "pyproject.toml").exists():
        session.install("--no-deps", str(ROOT))


def test_paths():
    paths = [str(ROOT / "packages" / n / "tests") for n in ["sneppx-core", *_present(SIBLINGS)]]
    if (ROOT / "tests").exists():
        paths.append(str(ROOT / "tests"))
    return [p for p in paths if pathlib.Path(p).exists()]


def run_suites(session: nox.Session, marker: str):
    """Runs each package's tests in its own pytest process (each has its own conftest helpers).

    Exit code 5 (nothing selected by the marker) counts as success; any other failure fails the
    session after every suite has run. On a CPU with AVX-512 the suites run on core's AVX-512 build;
    core's suite then runs once more on the AVX2 build (``SNEPPX_CPU=avx2``), so both are tested.
    """
    # SNEPPX_BACKEND=c: an extension that fails to import is an error here, not a silent run of
    # the suites on the NumPy fallback (tests that want the fallback ask for it themselves).
    env = {"SNEPPX_BACKEND": "c"}
    paths = test_paths()
    # Core's suite (the largest, with parity tests too) runs last, so the run's closing summary
    # line always reports executed tests even when a later suite has nothing for the marker.
    runs = [(path, env) for path in paths[1:] + paths[:1]]
    cpu = session.run("python", "-c", "import sneppx_core._backend as b; print(b.CPU)", silent=True, env=env)
    if cpu.strip().splitlines()[-1] == "avx512":
        runs.append((paths[0], dict(env, SNEPPX_CPU="avx2")))
    failed = []
    for path, run_env in runs:
        try:
            session.run("pytest", "-q", "-p", "no:cacheprovider", "-m", marker, path, *session.posargs,
                        success_codes=[0, 5], env=run_env)
        except nox.command.CommandFailed:
            failed.append(path + (" (SNEPPX_CPU=avx2)" if "SNEPPX_CPU" in run_env else ""))
    if failed:
        session.error("failing suites: " + ", ".join(failed))


@nox.session
def tests(session: nox.Session):
    """All packages in one venv; the PyTorch parity tests are skipped (see the parity session)."""
    install_all(session, TEST_DEPS + OPTIONAL_DEPS)
    run_suites(session, "not parity")


@nox.session(venv_backend="venv")
def parity(session: nox.Session):
    """The same tests against PyTorch 2.13 (CPU), installed with pip (which finds the CPU build), and
    the pretrained-model loaders against transformers (tiny random models made in the tests)."""
    install_all(session, TEST_DEPS)
    session.run("python", "-m", "pip", "install", "-q", "torch==2.13.0")
    session.run("python", "-m", "pip", "install", "-q", "transformers>=5,<6", "jinja2>=3")
    run_suites(session, "parity")


NUMPY_TINY_MODEL = """
import sys
sys.path.insert(0, sys.argv[2])
import pathlib
from hf_folders import random_gpt2
from sneppx_generate import Tokenizer
folder = pathlib.Path(sys.argv[1])
folder.mkdir(parents=True, exist_ok=True)
Tokenizer(vocab_size=260).save(str(folder / "tokenizer.json"))
random_gpt2(folder, vocab=260)
"""


@nox.session(name="numpy-backend", venv_backend="venv")
def numpy_backend(session: nox.Session):
    """sneppx_core's NumPy backend: inference where the compiled extension cannot be imported.

    1. Both backends in one process (core's test_numpy_backend.py): every forward case of the op
       table gives the same dtypes and shapes and values within float32 tolerance; the training
       entry points raise RuntimeError, ops beyond the surface NotImplementedError.
    2. Under SNEPPX_BACKEND=numpy: the op table's forward tests against NumPy references and all of
       sneppx-generate's tests, the transformers parity ones included.
    3. The subprocess checks: a sneppx_nn Transformer's eval forward, Trainer.fit/backward/optimizer
       errors, and the `sneppx-generate` command on a copy of sneppx_core without the extension.
    4. Last, the compiled extension is deleted from this venv and the installed `sneppx-generate`
       command runs a tiny model on the fallback.
    """
    pkgs = ROOT / "packages"
    session.env["PYTHONPATH"] = ""  # the installed packages, never a source tree on an outer PYTHONPATH
    siblings = [str(pkgs / n) for n in ("sneppx-generate", "sneppx-nn", "sneppx-optim")]
    session.install(str(core_wheel(session)), *siblings, *TEST_DEPS)
    session.run("python", "-m", "pip", "install", "-q", "torch==2.13.0", "transformers>=5,<6", "jinja2>=3")
    pytest = ["pytest", "-q", "-p", "no:cacheprovider"]
    numpy = {"SNEPPX_BACKEND": "numpy"}
    session.run(*pytest, str(CORE / "tests" / "test_numpy_backend.py"))
    forward = "forward_matches_numpy or empty_tensors_match_numpy or nan_propagation"
    session.run(*pytest, "-m", "not parity", "-k", forward, str(CORE / "tests" / "test_ops.py"), env=numpy)
    session.run(*pytest, str(pkgs / "sneppx-generate" / "tests"), env=numpy)
    session.run(*pytest, str(pkgs / "sneppx-nn" / "tests" / "test_nn_numpy_backend.py"))
    session.run(*pytest, str(pkgs / "sneppx-optim" / "tests" / "test_optim_numpy_backend.py"))

    where = session.run("python", "-c", "import os, sneppx_core; print(os.path.dirname(sneppx_core.__file__))",
                        silent=True).strip().splitlines()[-1]
    if not pathlib.Path(where).resolve().is_relative_to(pathlib.Path(session.virtualenv.location).resolve()):
        session.error(f"sneppx_core was imported from {where}, outside this session's venv")
    for ext in [*pathlib.Path(where).glob("_SNEPPX_c*"), *pathlib.Path(where).glob("_avx512/_SNEPPX_c*")]:
        ext.unlink()
    model = pathlib.Path(session.create_tmp()) / "tiny-gpt2"
    session.run("python", "-c", NUMPY_TINY_MODEL, str(model), str(pkgs / "sneppx-generate" / "tests"))
    version = session.run("sneppx-generate", "--version", silent=True)
    if "NumPy (inference only) backend" not in version:
        session.error(f"sneppx-generate --version does not report the NumPy backend: {version!r}")
    text = session.run("sneppx-generate", str(model), "--prompt", "Hello", "--max-new-tokens", "16",
                       "--temperature", "0", silent=True, env={"SNEPPX_BACKEND": ""})
    if not text.startswith("Hello") or len(text.strip()) <= len("Hello"):
        session.error(f"sneppx-generate without the extension printed {text!r}")
    session.log(f"without the extension: {version.strip()}; generated {text.strip()!r}")


@nox.session
def isolated(session: nox.Session):
    """Each sibling with only its declared dependencies, tested on its own."""
    wheel = core_wheel(session)
    for name in _present(SIBLINGS):
        session.install(str(wheel), str(ROOT / "packages" / name), *TEST_DEPS)
        session.run("pytest", "-q", "-m", "not parity", str(ROOT / "packages" / name / "tests"))
        session.run("python", "-m", "pip", "uninstall", "-y", name, silent=True)


@nox.session
def inference(session: nox.Session):
    """The inference install: sneppx-core + sneppx-generate alone."""
    session.install(str(core_wheel(session)), str(ROOT / "packages" / "sneppx-generate"), *TEST_DEPS)
    session.run("python", "-c", "import importlib.util as u; assert u.find_spec('sneppx_nn') is None")
    session.run("pytest", "-q", "-m", "not parity", str(ROOT / "packages" / "sneppx-generate" / "tests"))


@nox.session
def lint(session: nox.Session):
    """ruff over the Python sources."""
    session.install("ruff")
    session.run("ruff", "check", "--select", "E9,F63,F7,F82", str(ROOT))


@nox.session
def bench(session: nox.Session):
    """The benchmark suite side by side with PyTorch; rewrites docs/benchmarks.md and its charts
    (matplotlib). Arguments after `--` go to benchmarks/run.py (`-- --only core,ops --quick`)."""
    # transformers: the pretrained-model rows of the generate group save a GPT-2 with it (without it they are left out)
    install_all(session, ["torch==2.13.0", "matplotlib>=3.7", "transformers>=5,<6"])
    session.run("python", str(ROOT / "benchmarks" / "run.py"), *session.posargs)


# What a sanitizer may write without anything being wrong: huge-allocation tests make malloc fail
# on purpose (allocator_may_return_null=1 turns that into a NULL the core reports as MemoryError).
SANITIZER_EXPECTED = ("WARNING: AddressSanitizer failed to allocate",)


def sanitizer_findings(text: str) -> list[str]:
    """The lines of a sanitizer log that are not expected warnings (any of them fails the session)."""
    return [ln for ln in text.splitlines() if ln.strip() and not any(e in ln for e in SANITIZER_EXPECTED)]


@nox.session
def sanitize(session: nox.Session):
    """Core built with AddressSanitizer and UBSan, running core's tests (not the parity ones).

    The sanitized build has its own CMake folder (build/asan), so it never mixes with the release
    wheel's. python does not link libstdc++, so a preloaded libasan finds no __cxa_throw to
    intercept and the first C++ exception kills the process: libstdc++ is preloaded beside it.
    Huge-allocation tests need malloc to fail with NULL (allocator_may_return_null). Reports of every
    process (the test subprocesses too) go to files under .nox/sanitize-logs, since pytest's capture
    would swallow a dying process's stderr; at the end every log line other than an expected
    allocation warning is printed and fails the session. Arguments after `--` go to pytest.
    """
    t0 = time.monotonic()
    # SNEPPX_SANITIZE compiles at -O1 -g without LTO, whatever the wheel's build type.
    env = {"CMAKE_ARGS": "-DSNEPPX_SANITIZE=ON", "SKBUILD_BUILD_DIR": "build/asan"}
    wheel = core_wheel(session, env=env, tag="asan")
    session.install(str(wheel), *TEST_DEPS)
    built = time.monotonic()
    gcc = lambda name: session.run("gcc", f"-print-file-name={name}", silent=True, external=True).strip()
    preload = f"{gcc('libasan.so')}:{gcc('libstdc++.so.6')}"
    logs = ROOT / ".nox" / "sanitize-logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    common = f"log_path={logs}/report:print_stacktrace=1"
    env = {
        "LD_PRELOAD": preload,
        "ASAN_OPTIONS": f"{common}:detect_leaks=0:allocator_may_return_null=1:handle_segv=1",
        "UBSAN_OPTIONS": f"{common}:halt_on_error=0",
        "PYTHONFAULTHANDLER": "1",
        "PYTHONPATH": "",  # the sanitized wheel just installed, never a source tree on an outer PYTHONPATH
    }
    # The tests must exercise the instrumented extension of this venv, not some other build.
    session.run("python", "-c", SANITIZED_IMPORT_CHECK, session.virtualenv.location, env=env)
    try:
        session.run("pytest", "-q", "--capture=sys", "--durations=15", "-m", "not parity", "-p", "no:cacheprovider",
                    str(CORE / "tests"), *session.posargs, env=env)
    finally:
        bad = 0
        for r in sorted(logs.glob("report*")):
            findings = sanitizer_findings(r.read_text(errors="replace"))
            if findings:
                bad += 1
                session.log(f"==== sanitizer report {r.name}\n" + "\n".join(findings))
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        session.log(f"build and install {built - t0:.0f} s, tests {time.monotonic() - built:.0f} s "
                    f"(load average now {load}); sanitizer logs in {logs}")
    if bad:
        session.error(f"{bad} sanitizer report(s) above")


SANITIZED_IMPORT_CHECK = """
import os, subprocess, sys
import sneppx_core
from sneppx_core import _SNEPPX_c as C
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(C.__file__).startswith(venv + os.sep), f"extension imported from {C.__file__}, not {venv}"
libs = subprocess.run(["ldd", C.__file__], capture_output=True, text=True, check=True, env={}).stdout
assert "libasan" in libs and "libubsan" in libs, f"{C.__file__} is not instrumented:\\n{libs}"
print("sanitized extension:", C.__file__)
"""


@nox.session
def fuzz(session: nox.Session):
    """Property-based fuzzing of ops, indexing and in-place writes (random shapes, strides, dtypes
    and bad values); every batch runs in a subprocess, so a crash fails the test that found it.
    Bounded by SNEPPX_FUZZ_SECONDS per property (default 20; a few minutes in all)."""
    session.install(str(core_wheel(session)), *TEST_DEPS)
    env = {"SNEPPX_FUZZ_SECONDS": os.environ.get("SNEPPX_FUZZ_SECONDS", "20"),
           "PYTHONPATH": ""}  # the wheel just installed, never a source tree on an outer PYTHONPATH
    session.run("pytest", "-q", "-p", "no:cacheprovider", "-m", "fuzz", str(CORE / "tests" / "test_fuzz.py"),
                *session.posargs, env=env)


CUDA_IMPORT_CHECK = """
import subprocess, sneppx_core as sx
from sneppx_core import _SNEPPX_c as C
assert sx._HAS_CUDA is True, "the CUDA build says it has no CUDA"
libs = subprocess.run(["ldd", C.__file__], capture_output=True, text=True, check=True).stdout
cuda_libs = [l.strip() for l in libs.splitlines() if "libcu" in l]
print("\\n".join(cuda_libs))
assert cuda_libs and all("nvidia/cu13/lib" in l for l in cuda_libs), "CUDA libraries not found through the RPATH"
print("cuda.is_available():", sx.cuda.is_available(), " device_count():", sx.cuda.device_count())
if not sx.cuda.is_available():
    try:
        sx.ones(2).to("cuda")
    except RuntimeError as e:
        assert "no CUDA device is visible" in str(e), e
        print("x.to('cuda') raises:", e)
    else:
        raise AssertionError("x.to('cuda') worked without a visible GPU")
"""


@nox.session
def cuda(session: nox.Session):
    """Builds the CUDA-enabled core wheel for real and tests it.

    nvcc and the CUDA libraries come from the NVIDIA wheels (build requirements of a CUDA build);
    the wheel is compiled for the default GPU architectures (80, 86, 89, 90, 100), or for those in
    SNEPPX_CUDA_ARCHS (e.g. "90"). It is installed with the NVIDIA runtime wheels it depends on,
    imported (the CUDA libraries must resolve through its RPATH; without a GPU, `x.to("cuda")` must
    raise "no CUDA device is visible"), and core's test suite runs against it: on a machine without a
    GPU the `cuda`-marked comparisons skip and everything else runs on the CPU. Then the NCCL tests
    (the library from nvidia-nccl-cu13) and the CUDA training comparisons.
    Arguments after `--` go to pytest (e.g. `-- -m cuda` for the GPU comparisons only).
    """
    args = "-DSNEPPX_CUDA=ON"
    if os.environ.get("SNEPPX_CUDA_ARCHS"):
        args += f" -DCMAKE_CUDA_ARCHITECTURES={os.environ['SNEPPX_CUDA_ARCHS']}"
    tag = "cuda-" + os.environ.get("SNEPPX_CUDA_ARCHS", "default").replace(";", "_")
    # Its own CMake build folder, apart from the CPU wheel's.
    wheel = core_wheel(session, env={"CMAKE_ARGS": args, "SKBUILD_BUILD_DIR": f"build/{tag}"}, tag=tag)
    # brings nvidia-cuda-runtime and nvidia-cublas along; the distributed package with NCCL's wheel
    session.install(str(wheel), *[str(ROOT / "packages" / n) for n in _present(SIBLINGS) if n != "sneppx-distributed"],
                    f"{ROOT / 'packages' / 'sneppx-distributed'}[cuda]", *TEST_DEPS)
    installed = {"PYTHONPATH": ""}  # the wheel just installed, never package sources on PYTHONPATH
    session.run("python", "-c", CUDA_IMPORT_CHECK, env=installed)
    session.run("pytest", "-q", "-p", "no:cacheprovider", "-m", "not parity", str(CORE / "tests"),
                *session.posargs, env=installed)
    # NCCL from its wheel (loads and makes ids without a GPU; the GPU tests skip without one) and the
    # training and generation comparisons (skip without a GPU)
    session.run("pytest", "-q", "-p", "no:cacheprovider", "-m", "not parity",
                str(ROOT / "packages" / "sneppx-distributed" / "tests" / "test_nccl.py"),
                str(ROOT / "tests" / "test_cuda_training.py"), env=installed)


DOCS_DEPS = ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"]


@nox.session
def docs(session: nox.Session):
    """Builds the documentation site with MkDocs and the Material theme (API pages from docstrings)."""
    install_all(session, DOCS_DEPS)
    session.run("mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(ROOT / "site"),
                env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session(venv_backend="venv")
def coverage(session: nox.Session):
    """Rewrites docs/pytorch-coverage.md: PyTorch's public API names against SneppX's (needs torch)."""
    install_all(session)
    session.run("python", "-m", "pip", "install", "-q", "torch==2.13.0")
    session.run("python", str(ROOT / "tools" / "api_coverage.py"))


DEMO_PROMPTS = ["Return the ", "If the ", "This module "]


@nox.session
def demo(session: nox.Session):
    """The README's main job: train a small GPT on the default corpus, then print three samples.

    `sneppx train` reports the held-out loss against a unigram baseline and writes the loss plot;
    `sneppx generate` prints about 200 characters for each prompt. Arguments after `--` go to
    `sneppx train` (`nox -s demo -- --steps 200` for a shorter run).
    """
    install_all(session, ["matplotlib>=3.7"])
    out = os.environ.get("SNEPPX_DEMO_DIR", str(ROOT / ".nox" / "demo-run"))
    session.run("sneppx", "train", "--out", out, *session.posargs)
    prompts = [a for p in DEMO_PROMPTS for a in ("--prompt", p)]
    session.run("sneppx", "generate", out, *prompts, "--max-new-tokens", "200")


@nox.session(name="release-check")
def release_check(session: nox.Session):
    """Builds every wheel and sdist and checks their metadata (names, versions, ranges, tags)."""
    session.install("build", "pip")
    out = WHEELS / "release"
    shutil.rmtree(out, ignore_errors=True)
    for pkg in [CORE, *[ROOT / "packages" / n for n in _present(SIBLINGS)], ROOT]:
        session.run("python", "-m", "build", "--sdist", "--outdir", str(out), str(pkg))
        if pkg != CORE:
            session.run("python", "-m", "build", "--wheel", "--outdir", str(out), str(pkg))
    shutil.copy(core_wheel(session), out)
    session.run("python", str(ROOT / "tools" / "check_release.py"), str(out))
