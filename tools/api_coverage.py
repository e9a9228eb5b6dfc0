"""Writes docs/pytorch-coverage.md: which of PyTorch's public names SneppX has, and which it lacks.

    python tools/api_coverage.py [--out docs/pytorch-coverage.md]

Needs torch installed beside SneppX (``nox -s coverage`` sets that up). The names are read from
both libraries at run time: ``torch.nn`` modules against ``sneppx_nn``, ``torch.nn.functional``
against ``sneppx_core.functional``, ``torch.Tensor`` methods and properties against ``sneppx_core.Tensor``,
the functions of ``torch`` (its ``__all__``, less backend kernels, quantization and compiler helpers)
and its other public objects (constants, dtypes, layouts, memory formats, flags) against
``sneppx_core``, the callables of ``torch.linalg`` against ``sneppx_core.linalg``, those of
``torch.special`` (its ``__all__``) against ``sneppx_core.special``, the functions and classes of
``torch.autograd`` (and ``torch.autograd.functional``) against ``sneppx_core.autograd``, ``torch.optim``
optimizers and LR schedulers against ``sneppx_optim``, the ``__all__`` of ``torch.distributions``,
``torch.func``, ``torch.profiler`` and ``torch.library`` against ``sneppx_core.distributions``, ``.func``,
``.profiler`` and ``.library``, the
functions of ``torch.testing`` against ``sneppx_core.testing``, and the ``__all__`` of ``torch.fx`` against
``sneppx_nn.fx``.
A name counts as covered when it exists under the same name; whether its behaviour matches is the
parity tests' job.
"""

from __future__ import annotations

import argparse
import inspect
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Helpers that torch.nn.functional happens to expose but that are not part of its documented API.
NOT_API = {"assert_int_or_pair", "boolean_dispatch", "handle_torch_function", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "importlib", "math", "np", "warnings"}
# torch.__all__ functions left out of the Functions section: kernels of one backend, quantization, the
# compiler's and symbolic shapes' helpers, and the *_copy forms of views that graph compilers use.
TORCH_INTERNAL_PREFIXES = ("cudnn_", "miopen_", "mkldnn_", "fbgemm_", "quantize", "quantized_", "q_", "fake_quantize",
                           "sym_", "autocast_", "batch_norm_", "native_", "choose_qparams", "import_ir_module",
                           "parse_", "profiler_", "fused_moving_avg")
TORCH_INTERNAL = {"compile", "cond", "fork", "wait", "vmap", "while_loop", "merge_type_from_type_comment",
                  "unify_type_list", "compiled_with_cxx11_abi", "prepare_multiprocessing_environment", "dequantize",
                  "int_repr", "is_vulkan_available", "classproperty", "typename", "get_file_path",
                  "thread_safe_generator"}
# torch's public non-callable objects that are not API: the import's build switches and torch._C's aggregation
# enum (for its stats counters); quantization's dtypes and schemes are left out as its functions are.
NOT_API_OBJECTS = {"USE_GLOBAL_DEPS", "USE_RTLD_GLOBAL_WITH_LIBTORCH", "PRIVATE_OPS", "AVG", "SUM"}
QUANTIZATION_OBJECTS = ("qint", "quint", "per_tensor_", "per_channel_")


def _public(names) -> set:
    return {n for n in names if not n.startswith("_")}


def torch_objects(torch) -> set:
    """The public objects of ``torch`` that are neither callables nor modules (``pi``, ``newaxis``, dtypes,
    layouts, memory formats, ``has_mkl``), less the names it imports from ``typing`` (``TYPE_CHECKING``), build
    switches and quantization's."""
    import typing

    missing = object()
    out = set()
    for n in _public(dir(torch)):
        obj = getattr(torch, n)
        if (callable(obj) or inspect.ismodule(obj) or n in NOT_API_OBJECTS or n.startswith(QUANTIZATION_OBJECTS)
                or getattr(typing, n, missing) is obj):
            continue
        out.add(n)
    return out


def torch_sections() -> list:
    """[(title, PyTorch place, torch names, SneppX place, sneppx names)] for each compared API."""
    import torch
    import torch.nn.functional as TF

    import sneppx_core as sx
    import sneppx_core.functional as SF
    import sneppx_core.linalg as SLA
    import sneppx_core.special as SSP
    import sneppx_nn
    import sneppx_optim

    modules = {n for n in torch.nn.modules.__all__ if n != "Container"  # Container: deprecated
               and inspect.isclass(getattr(torch.nn, n, None)) and issubclass(getattr(torch.nn, n), torch.nn.Module)}
    functional = ({n for n in _public(dir(TF)) if inspect.isfunction(getattr(TF, n))
                   and getattr(getattr(TF, n), "__module__", "").startswith("torch")}
                  | {n for n in _public(dir(TF)) if type(getattr(TF, n)).__name__ == "builtin_function_or_method"})
    functional -= NOT_API
    tensor = _public(dir(torch.Tensor))  # methods and properties (is_xpu, layout, grad_fn, ...)
    functions = {n for n in _public(torch.__all__) if callable(getattr(torch, n, None))
                 and not inspect.isclass(getattr(torch, n)) and n not in TORCH_INTERNAL
                 and not n.startswith(TORCH_INTERNAL_PREFIXES) and not n.endswith("_copy")}
    linalg = {n for n in _public(dir(torch.linalg)) if callable(getattr(torch.linalg, n))}
    special = {n for n in _public(torch.special.__all__) if callable(getattr(torch.special, n, None))}
    ag = torch.autograd
    autograd = ({n for n in _public(dir(ag)) if not inspect.ismodule(getattr(ag, n))
                 and getattr(getattr(ag, n), "__module__", "").startswith("torch.autograd")}
                | {f"functional.{n}" for n in ag.functional.__all__})
    optimizers = {n for n in torch.optim.__all__ if inspect.isclass(getattr(torch.optim, n, None))
                  and issubclass(getattr(torch.optim, n), torch.optim.Optimizer) and n != "Optimizer"}
    sched_mod = torch.optim.lr_scheduler
    schedulers = {n for n in getattr(sched_mod, "__all__", dir(sched_mod))
                  if inspect.isclass(getattr(sched_mod, n, None))
                  and n.endswith(("LR", "Plateau"))} - {"LRScheduler", "_LRScheduler"}
    import sneppx_core.distributions as SD
    import sneppx_core.func as SFN

    import torch.fx
    import torch.testing

    import torch.library
    import torch.profiler

    import sneppx_core.library as SLI
    import sneppx_core.profiler as SPR
    import sneppx_core.testing as STE
    import sneppx_nn.fx as SFX

    distributions = set(torch.distributions.__all__)
    func = set(torch.func.__all__)
    return [
        ("Modules", "torch.nn", modules, "sneppx_nn", set(sneppx_nn.__all__)),
        ("Functional ops", "torch.nn.functional", functional, "sneppx_core.functional",
         _public(dir(SF)) | _public(sx.__all__)),
        ("Tensor methods and properties", "torch.Tensor", tensor, "sneppx_core.Tensor", _public(dir(sx.Tensor))),
        ("Functions", "torch", functions, "sneppx_core", _public(dir(sx))),
        ("Constants and objects", "torch", torch_objects(torch), "sneppx_core", _public(dir(sx))),
        ("Linear algebra", "torch.linalg", linalg, "sneppx_core.linalg", set(SLA.__all__)),
        ("Special functions", "torch.special", special, "sneppx_core.special", set(SSP.__all__)),
        ("Fourier transforms", "torch.fft", set(torch.fft.__all__) - {"Tensor"}, "sneppx_core.fft",
         set(sx.fft.__all__)),
        ("Autograd", "torch.autograd", autograd, "sneppx_core.autograd", _autograd_names(sx.autograd)),
        ("Optimizers", "torch.optim", optimizers, "sneppx_optim", set(sneppx_optim.__all__)),
        ("LR schedulers", "torch.optim.lr_scheduler", schedulers, "sneppx_optim", set(sneppx_optim.__all__)),
        ("Distributions", "torch.distributions", distributions, "sneppx_core.distributions", set(SD.__all__)),
        ("Function transforms", "torch.func", func, "sneppx_core.func", set(SFN.__all__)),
        ("FX graphs", "torch.fx", set(torch.fx.__all__), "sneppx_nn.fx", set(SFX.__all__)),
        ("Profiler", "torch.profiler", set(torch.profiler.__all__), "sneppx_core.profiler", set(SPR.__all__)),
        ("Custom operators", "torch.library", set(torch.library.__all__), "sneppx_core.library", set(SLI.__all__)),
        ("Testing", "torch.testing", {n for n in _public(dir(torch.testing)) if callable(getattr(torch.testing, n))},
         "sneppx_core.testing", set(STE.__all__)),
    ]


def _autograd_names(mod) -> set:
    """sneppx_core.autograd's public names, with ``functional.<name>`` for its functional submodule."""
    names = _public(dir(mod))
    fn = getattr(mod, "functional", None)
    return names | ({f"functional.{n}" for n in fn.__all__} if fn is not None else set())


def sneppx_extras() -> dict:
    """SneppX's own modules and optimizers (classes of its Module / Optimizer with no PyTorch namesake)."""
    import sneppx_nn
    import sneppx_optim

    def classes(mod, base):
        return {n for n in mod.__all__ if inspect.isclass(getattr(mod, n)) and issubclass(getattr(mod, n), base)
                and getattr(mod, n) is not base}

    return {"Modules": classes(sneppx_nn, sneppx_nn.Module),
            "Optimizers": classes(sneppx_optim, sneppx_optim.Optimizer),
            "LR schedulers": classes(sneppx_optim, sneppx_optim.LRScheduler)}


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names, key=lambda n: (n.lower(), n))) or "none"


def render(sections: list, torch_version: str, extras: dict | None = None) -> str:
    """The Markdown page for ``sections`` (see :func:`torch_sections`); ``extras``: SneppX-only names per title."""
    extras = extras or {}
    lines = ["# PyTorch API coverage", "",
             f"Which public names of PyTorch {torch_version} exist in SneppX under the same name. This page is "
             "generated from both libraries by `tools/api_coverage.py` (`nox -s coverage`); do not edit it by "
             "hand. A covered name exists; whether it behaves the same is checked by the parity tests "
             "(`nox -s parity`). Functional ops count as covered when `sneppx_core.functional` or "
             "`sneppx_core` has them. Functions are `torch.__all__`'s, less the kernels of one backend (cuDNN, "
             "MIOpen, oneDNN, FBGEMM), quantization, the compiler's and symbolic shapes' helpers and the `*_copy` "
             "forms of views. Constants and objects are torch's other public attributes that are neither functions "
             "nor modules (constants, dtypes, layouts, memory formats, build flags), less quantization's. One name "
             "means something else on purpose: SneppX's `Transformer` is a decoder-only language model, not "
             "PyTorch's encoder-decoder.", "",
             "| API | PyTorch | SneppX | covered | of | share |", "| --- | --- | --- | ---: | ---: | ---: |"]
    for title, tplace, tnames, splace, snames in sections:
        have = tnames & snames
        lines.append(f"| [{title}](#{title.lower().replace(' ', '-')}) | `{tplace}` | `{splace}` | {len(have)} | "
                     f"{len(tnames)} | {100 * len(have) / max(1, len(tnames)):.0f}% |")
    for title, tplace, tnames, splace, snames in sections:
        have, missing = tnames & snames, tnames - snames
        lines += ["", f"## {title}", "", f"`{tplace}` against `{splace}`.", "",
                  f"**Covered ({len(have)}):** {_names(have)}", "", f"**Missing ({len(missing)}):** {_names(missing)}"]
        extra = extras.get(title, set()) - tnames
        if extra:
            lines += ["", f"**SneppX only:** {_names(extra)}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> pathlib.Path:
    """Writes the page and returns its path."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "pytorch-coverage.md"))
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        raise SystemExit("api_coverage: needs torch (pip install torch==2.13.0, or run `nox -s coverage`)")
    out = pathlib.Path(args.out)
    out.write_text(render(torch_sections(), torch.__version__.split("+")[0], sneppx_extras()), encoding="utf-8")
    print(out)
    return out


if __name__ == "__main__":
    main()
