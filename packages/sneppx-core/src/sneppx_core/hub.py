"""``torch.hub``'s counterpart: downloading checkpoints (``load_state_dict_from_url``,
``download_url_to_file``) into PyTorch's hub cache, and the entry points of a local ``hubconf.py``.

The cache is PyTorch's own folder (``$TORCH_HOME/hub``, by default ``~/.cache/torch/hub``; ``set_dir``
changes it), so checkpoints PyTorch downloaded before are found there and not fetched again. The files
are read by :func:`sneppx_core.load`, which reads PyTorch's formats. ``load``, ``list`` and ``help`` take
a local folder (``source="local"``); a GitHub repository's ``hubconf.py`` is written for PyTorch, so
fetching one (``source="github"``, PyTorch's default) raises NotImplementedError.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import urllib.parse
import urllib.request

from ._serialization import atomic_write, load as _load

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # the hash prefix in a file name: resnet18-f37072fd.pth
_hub_dir = [None]


def get_dir() -> str:
    """The hub folder: the one ``set_dir`` gave, else ``$TORCH_HOME/hub``, ``$XDG_CACHE_HOME/torch/hub`` or
    ``~/.cache/torch/hub``."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.join(os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch"))), "hub")


def set_dir(d) -> None:
    """Makes ``d`` the hub folder for this process."""
    _hub_dir[0] = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Downloads ``url`` to the file ``dst``: into a temporary file beside it, renamed into place once
    complete. With ``hash_prefix``, the file's SHA-256 must start with it, else RuntimeError (and no
    file is left). ``progress`` prints the bytes received to stderr."""
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    sha = hashlib.sha256()

    def fetch(out):
        with urllib.request.urlopen(urllib.request.Request(url)) as src:
            total, got = src.headers.get("Content-Length"), 0
            while True:
                block = src.read(1 << 20)
                if not block:
                    break
                out.write(block)
                sha.update(block)
                got += len(block)
                if progress:
                    print(f"\r[hub] {url}: {got} of {total or '?'} bytes", end="", file=sys.stderr)
        if progress:
            print(file=sys.stderr)
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f"[hub] invalid hash of {url}: expected a SHA-256 starting with {hash_prefix}, "
                               f"got {sha.hexdigest()}")

    atomic_write(dst, fetch)


def load_state_dict_from_url(url: str, model_dir=None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = False):
    """Loads the checkpoint at ``url``, downloading it first unless it is in ``model_dir`` (default
    ``get_dir()/checkpoints``) already.

    Args:
        url: where the file is (``https://``, ``http://`` or ``file://``).
        model_dir: the cache folder.
        map_location: as :func:`sneppx_core.load`'s.
        progress: print the download's progress to stderr.
        check_hash: the file name holds the start of the file's SHA-256 (``name-<hex>.ext``, PyTorch's
            convention), which a download must match.
        file_name: the name in the cache (default: the URL's last part).
        weights_only: as :func:`sneppx_core.load`'s (False by default here, as in PyTorch).
    """
    folder = os.path.expanduser(os.fspath(model_dir)) if model_dir is not None else os.path.join(get_dir(),
                                                                                                  "checkpoints")
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    if not name:
        raise ValueError(f"[load_state_dict_from_url] cannot name a file after {url!r}; pass file_name")
    cached = os.path.join(folder, name)
    if not os.path.exists(cached):
        found = HASH_REGEX.search(name) if check_hash else None
        if check_hash and found is None:
            raise ValueError(f"[load_state_dict_from_url] check_hash needs a file name like name-<sha256 prefix>.pth, "
                             f"got {name!r}")
        download_url_to_file(url, cached, found.group(1) if found else None, progress=progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)


def _hubconf(repo_or_dir, source: str, fn: str):
    if source != "local":
        raise NotImplementedError(f"[hub.{fn}] source={source!r}: a repository's hubconf.py is written for PyTorch "
                                  "(it imports torch); clone it, change its imports, and pass its folder with "
                                  "source='local'")
    path = os.path.join(os.fspath(repo_or_dir), "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"[hub.{fn}] no hubconf.py in {repo_or_dir}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return module


def _entry(module, model: str, fn: str):
    entry = getattr(module, model, None)
    if not callable(entry) or model.startswith("_"):
        raise RuntimeError(f"[hub.{fn}] hubconf.py has no callable entry point {model!r}")
    return entry


def list(repo_or_dir, force_reload: bool = False, skip_validation: bool = False, trust_repo=None,  # noqa: A001
         verbose: bool = True, source: str = "github"):
    """The entry points (public callables) of the folder's ``hubconf.py``."""
    module = _hubconf(repo_or_dir, source, "list")
    return [n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")]


def help(repo_or_dir, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo=None, source: str = "github") -> str:
    """The docstring of entry point ``model``."""
    return _entry(_hubconf(repo_or_dir, source, "help"), model, "help").__doc__ or ""


def load(repo_or_dir, model: str, *args, source: str = "github", trust_repo=None, force_reload: bool = False,
         verbose: bool = True, skip_validation: bool = False, **kwargs):
    """Calls entry point ``model`` of the folder's ``hubconf.py`` with ``args`` and ``kwargs``."""
    return _entry(_hubconf(repo_or_dir, source, "load"), model, "load")(*args, **kwargs)


__all__ = ["get_dir", "set_dir", "download_url_to_file", "load_state_dict_from_url", "list", "help", "load"]
