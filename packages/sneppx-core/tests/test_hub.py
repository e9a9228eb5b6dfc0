"""``hub`` (downloads into PyTorch's hub cache, through file:// URLs here; a local hubconf.py) and the small
``utils`` modules: ``model_zoo``, ``hooks``, ``dlpack``."""

import hashlib
import os
import pathlib

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core import hub
from sneppx_core.utils import dlpack, hooks, model_zoo


@pytest.fixture
def hub_dir(tmp_path):
    before = hub._hub_dir[0]
    hub.set_dir(tmp_path / "hub")
    yield tmp_path / "hub"
    hub._hub_dir[0] = before


def _checkpoint(folder: pathlib.Path, name="weights.pt"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    sx.save({"w": sx.arange(6.0).reshape(2, 3)}, path, format="torch")
    return path


def test_get_dir_follows_torch_home(monkeypatch, tmp_path):
    before = hub._hub_dir[0]
    hub._hub_dir[0] = None
    try:
        monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
        assert hub.get_dir() == str(tmp_path / "th" / "hub")
        monkeypatch.delenv("TORCH_HOME")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    finally:
        hub._hub_dir[0] = before


def test_load_state_dict_from_url_downloads_once(hub_dir, tmp_path):
    src = _checkpoint(tmp_path / "server")
    sd = hub.load_state_dict_from_url(src.as_uri(), progress=False)
    np.testing.assert_array_equal(sd["w"].numpy(), np.arange(6.0).reshape(2, 3))
    cached = hub_dir / "checkpoints" / "weights.pt"
    assert cached.read_bytes() == src.read_bytes()
    src.unlink()  # the cache answers now
    assert model_zoo.load_url(src.as_uri(), progress=False)["w"].shape == (2, 3)
    assert sorted(os.listdir(hub_dir / "checkpoints")) == ["weights.pt"]


def test_check_hash(hub_dir, tmp_path):
    src = _checkpoint(tmp_path / "server")
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    good = src.rename(src.with_name(f"weights-{digest[:8]}.pt"))
    assert hub.load_state_dict_from_url(good.as_uri(), check_hash=True, progress=False)["w"].shape == (2, 3)
    bad = good.rename(good.with_name("other-00000000.pt"))
    with pytest.raises(RuntimeError, match="invalid hash"):
        hub.load_state_dict_from_url(bad.as_uri(), check_hash=True, progress=False)
    assert sorted(os.listdir(hub_dir / "checkpoints")) == [good.name]  # nothing left of the bad download
    with pytest.raises(ValueError, match="check_hash needs a file name"):
        hub.load_state_dict_from_url(_checkpoint(tmp_path / "s2", "plain.pt").as_uri(), check_hash=True)


def test_local_hubconf(tmp_path):
    (tmp_path / "hubconf.py").write_text(
        "import sneppx_core as sx\n"
        "def ones(n, scale=1.0):\n"
        "    '''n ones times scale'''\n"
        "    return sx.ones(n) * scale\n"
        "def _private():\n"
        "    pass\n")
    assert hub.list(tmp_path, source="local") == ["ones"]
    assert hub.help(tmp_path, "ones", source="local") == "n ones times scale"
    assert hub.load(tmp_path, "ones", 3, scale=2.0, source="local").numpy().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="no callable entry point '_private'"):
        hub.load(tmp_path, "_private", source="local")
    with pytest.raises(NotImplementedError, match="written for PyTorch"):
        hub.load("pytorch/vision", "resnet18")


def test_removable_handle():
    hooks_dict, extra = {}, {}
    h = hooks.RemovableHandle(hooks_dict, extra_dict=extra)
    hooks_dict[h.id], extra[h.id] = "hook", "flag"
    with h:
        assert h.id in hooks_dict
    assert hooks_dict == {} and extra == {}
    h.remove()  # a second remove does nothing


def test_dlpack_round_trip():
    t = sx.arange(4.0)
    u = dlpack.from_dlpack(dlpack.to_dlpack(t))
    u.add_(1)  # shares t's memory
    assert t.numpy().tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(TypeError, match="expected a Tensor"):
        dlpack.to_dlpack([1, 2])
