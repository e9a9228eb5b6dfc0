"""Checks built distributions: names, versions matching the sources, dependency ranges, wheel tags.

Usage: python tools/check_release.py DIST_DIR
"""

from __future__ import annotations

import email.parser
import pathlib
import re
import sys
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = {
    "sneppx-core": ROOT / "packages/sneppx-core/src/sneppx_core/_version.py",
    "sneppx-nn": ROOT / "packages/sneppx-nn/src/sneppx_nn/__init__.py",
    "sneppx-optim": ROOT / "packages/sneppx-optim/src/sneppx_optim/__init__.py",
    "sneppx-data": ROOT / "packages/sneppx-data/src/sneppx_data/__init__.py",
    "sneppx-distributed": ROOT / "packages/sneppx-distributed/src/sneppx_distributed/__init__.py",
    "sneppx-generate": ROOT / "packages/sneppx-generate/src/sneppx_generate/__init__.py",
    "sneppx-alg": ROOT / "src/SneppX_ALG/_version.py",
}


def source_version(path: pathlib.Path) -> str:
    m = re.search(r'^__version__\s*=\s*"([^"]+)"', path.read_text(), re.M)
    if not m:
        raise SystemExit(f"no __version__ in {path}")
    return m.group(1)


def wheel_metadata(path: pathlib.Path):
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        wheel = next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
        return email.parser.Parser().parsestr(z.read(name).decode()), z.read(wheel).decode()


def main(dist_dir: str) -> int:
    d = pathlib.Path(dist_dir)
    errors = []
    for dist, vfile in PACKAGES.items():
        version = source_version(vfile)
        norm = dist.replace("-", "_")
        wheels = list(d.glob(f"{norm}-{version}-*.whl"))
        sdists = list(d.glob(f"{norm}-{version}.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            errors.append(f"{dist} {version}: expected one wheel and one sdist, found {wheels + sdists}")
            continue
        meta, wheel = wheel_metadata(wheels[0])
        if meta["Name"] != dist or meta["Version"] != version:
            errors.append(f"{dist}: metadata says {meta['Name']} {meta['Version']}")
        pure = "Root-Is-Purelib: true" in wheel
        if dist == "sneppx-core" and (pure or "-none-any" in wheels[0].name):
            errors.append("sneppx-core must be a platform wheel")
        if dist != "sneppx-core" and (not pure or not wheels[0].name.endswith("-py3-none-any.whl")):
            errors.append(f"{dist} must be a pure-Python wheel, got {wheels[0].name}")
        for req in meta.get_all("Requires-Dist") or []:
            if req.startswith("sneppx") and not re.search(r">=[\d.]+,\s*<[\d.]+|<[\d.]+,\s*>=[\d.]+", req):
                errors.append(f"{dist}: dependency '{req}' needs a lower and an upper bound")
        with tarfile.open(sdists[0]) as t:
            if not any(n.endswith("pyproject.toml") for n in t.getnames()):
                errors.append(f"{dist}: sdist has no pyproject.toml")
        print(f"ok  {dist} {version}  {wheels[0].name}")
    for e in errors:
        print("ERROR", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
