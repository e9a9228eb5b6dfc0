"""The default training corpus: docstrings of the Python standard library, gathered at run time.

Nothing is downloaded and no outside text is stored in the repository: the text comes from the
modules of the Python interpreter that runs the command.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

# Pure-Python standard-library modules with rich docstrings; missing ones are skipped.
MODULES = [
    "abc", "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "cmd", "codecs", "collections",
    "colorsys", "concurrent.futures", "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime",
    "decimal", "difflib", "email", "enum", "fileinput", "fnmatch", "fractions", "ftplib", "functools",
    "getopt", "gettext", "glob", "gzip", "hashlib", "heapq", "hmac", "html", "http.client", "http.server",
    "imaplib", "inspect", "io", "ipaddress", "json", "locale", "logging", "lzma", "mailbox", "mimetypes",
    "numbers", "operator", "optparse", "os", "pathlib", "pickle", "pkgutil", "platform", "plistlib",
    "poplib", "pprint", "queue", "random", "re", "sched", "secrets", "selectors", "shelve", "shlex",
    "shutil", "smtplib", "socket", "socketserver", "statistics", "string", "struct", "subprocess",
    "tarfile", "tempfile", "textwrap", "threading", "timeit", "tokenize", "traceback", "types", "typing",
    "unittest", "urllib.parse", "urllib.request", "uuid", "warnings", "wave", "weakref", "xml.dom.minidom",
    "zipfile", "zoneinfo",
]


def _docs_of(module) -> list[str]:
    docs, seen = [], set()
    for obj in [module, *[v for _, v in sorted(vars(module).items())]]:
        if not (inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if getattr(obj, "__module__", module.__name__) != module.__name__ and obj is not module:
            continue
        for o in [obj, *([m for _, m in sorted(vars(obj).items()) if inspect.isfunction(m)] if inspect.isclass(obj) else [])]:
            doc = inspect.getdoc(o)
            if doc and len(doc) > 40 and id(o) not in seen:
                seen.add(id(o))
                docs.append(doc.strip())
    return docs


def default_corpus(max_chars: int = 2_000_000) -> str:
    """Returns up to ``max_chars`` characters of standard-library docstrings, in a fixed order."""
    parts, total = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in MODULES:
            try:
                mod = importlib.import_module(name)
            except Exception:  # a module missing from this interpreter is simply skipped
                continue
            for doc in _docs_of(mod):
                parts.append(doc)
                total += len(doc) + 2
                if total >= max_chars:
                    return "\n\n".join(parts)[:max_chars]
    return "\n\n".join(parts)
