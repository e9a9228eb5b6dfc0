"""``load`` of files written by PyTorch's ``torch.save``: a checkpoint PyTorch wrote in its zip and in its
legacy format (data/, made by data/make_torch_checkpoint.py) read without PyTorch and checked against NumPy;
damaged copies of it raise; the parity tests save with PyTorch here and compare."""

import collections
import io
import os
import pickle
import shutil
import struct
import zipfile

import numpy as np
import pytest
import sneppx_core as sx

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "torch_checkpoint.pt")
LEGACY = os.path.join(os.path.dirname(__file__), "data", "torch_checkpoint_legacy.pt")


def _expected_w():
    return np.arange(12, dtype=np.float32).reshape(3, 4) / 4


@pytest.mark.parametrize("path", [FIXTURE, LEGACY], ids=["zip", "legacy"])
def test_every_value_of_a_pytorch_checkpoint(path):
    ck = sx.load(path)
    assert isinstance(ck["model"], collections.OrderedDict) and list(ck["model"]) == ["weight", "bias"]
    np.testing.assert_array_equal(ck["model"]["weight"].numpy(), _expected_w()[:2])
    assert ck["model"]["bias"].dtype == sx.float64
    np.testing.assert_array_equal(ck["model"]["bias"].numpy(), np.arange(2) - 0.5)
    assert ck["half"].dtype == sx.float16
    np.testing.assert_array_equal(ck["half"].float().numpy(), np.arange(5) / 2)
    assert ck["bf16"].dtype == sx.bfloat16
    np.testing.assert_array_equal(ck["bf16"].float().numpy(), [1.5, -2.0, 0.25])
    assert ck["long"].dtype == sx.int64
    np.testing.assert_array_equal(ck["long"].numpy(), np.arange(-3, 3, dtype=np.int64) * 1000000007)
    assert ck["int"].dtype == sx.int32 and ck["int"].numpy().tolist() == [-2, -1, 0, 1]
    assert ck["u8"].dtype == sx.uint8 and ck["u8"].numpy().tolist() == list(range(250, 256))
    assert ck["mask"].dtype == sx.bool and ck["mask"].numpy().tolist() == [True, False, True, False, True]
    assert ck["scalar"].shape == () and ck["scalar"].item() == 3.5
    assert ck["empty"].shape == (0, 4)
    assert ck["param"].requires_grad and ck["param"].is_leaf
    assert ck["param"].detach().numpy().tolist() == [0.0, 1.0, 2.0]
    assert (ck["step"], ck["lr"], ck["name"], ck["none"], ck["flag"]) == (7, 0.5, "run", None, True)
    assert ck["data"] == b"\x00\xff" and ck["ids"] == {1, 2}
    assert ck["size"] == (2, 3) and isinstance(ck["size"], sx.Size)
    assert ck["dtype"] == sx.bfloat16 and ck["device"] == sx.device("cpu")
    assert ck["nested"][:2] == [1, (2.5, "x")] and ck["nested"][2]["k"].numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("path", [FIXTURE, LEGACY], ids=["zip", "legacy"])
def test_views_of_one_storage_stay_views(path):
    w, wt, row, cols = sx.load(path)["tied"]
    np.testing.assert_array_equal(wt.numpy(), _expected_w().T)
    np.testing.assert_array_equal(cols.numpy(), _expected_w()[:, ::2])
    w.mul_(2)  # one storage, as when saved: the views see the write
    np.testing.assert_array_equal(wt.numpy(), 2 * _expected_w().T)
    np.testing.assert_array_equal(row.numpy(), 2 * _expected_w()[1])
    np.testing.assert_array_equal(cols.numpy(), 2 * _expected_w()[:, ::2])


class _ReadOnly:
    def __init__(self, data):
        self._f = io.BytesIO(data)

    def read(self, n=-1):
        return self._f.read(n)


def test_file_objects_mmap_and_map_location():
    with open(FIXTURE, "rb") as fh:
        a = sx.load(fh)
    b = sx.load(_ReadOnly(open(FIXTURE, "rb").read()))  # a stream with read() only
    c = sx.load(FIXTURE, mmap=True, map_location={"cpu": "cpu"})
    d = sx.load(FIXTURE, map_location="cpu", weights_only=True)
    for ck in (a, b, c, d):
        np.testing.assert_array_equal(ck["model"]["weight"].numpy(), _expected_w()[:2])
    c["model"]["weight"].add_(1)  # copy-on-write: the file keeps its bytes
    np.testing.assert_array_equal(sx.load(FIXTURE)["model"]["weight"].numpy(), _expected_w()[:2])
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        sx.load(io.BytesIO(open(FIXTURE, "rb").read()), mmap=True)
    with pytest.raises(NotImplementedError, match="callable map_location"):
        sx.load(FIXTURE, map_location=lambda s, loc: s)


def _rewrite(tmp_path, change):
    """A copy of the fixture with its records passed through ``change(name, data) -> data``."""
    out = tmp_path / "changed.pt"
    with zipfile.ZipFile(FIXTURE) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = change(info.filename, src.read(info.filename))
            if data is not None:
                dst.writestr(info.filename, data)
    return out


def test_damaged_files_raise(tmp_path):
    whole = open(FIXTURE, "rb").read()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(zipfile.BadZipFile):
        sx.load(cut)
    short = _rewrite(tmp_path, lambda n, d: d[:4] if n.endswith("data/0") else d)
    with pytest.raises(Exception, match=r"as_strided|storage"):
        sx.load(short)
    gone = _rewrite(tmp_path, lambda n, d: None if n.endswith("data/1") else d)
    with pytest.raises(ValueError, match="storage 1: the record is missing"):
        sx.load(gone)
    pkl = _rewrite(tmp_path, lambda n, d: d[:200] if n.endswith("data.pkl") else d)
    with pytest.raises(pickle.UnpicklingError, match="damaged"):
        sx.load(pkl)
    no_pkl = _rewrite(tmp_path, lambda n, d: None if n.endswith("data.pkl") else d)
    with pytest.raises(ValueError, match="not a torch.save checkpoint"):
        sx.load(no_pkl)
    with pytest.raises(ValueError, match="legacy format"):
        sx.load(LEGACY, mmap=True)


def test_damaged_legacy_files_raise(tmp_path):
    whole = open(LEGACY, "rb").read()
    for cut in (10, len(whole) // 2, len(whole) - 3):
        path = tmp_path / f"cut{cut}.pt"
        path.write_bytes(whole[:cut])
        with pytest.raises((pickle.UnpicklingError, ValueError)):
            sx.load(path)
    rng = np.random.default_rng(1)
    for i in range(150):
        bad = bytearray(whole)
        for at in rng.integers(0, len(bad), 1 + i % 3):
            bad[at] = int(rng.integers(0, 256))
        try:
            sx.load(io.BytesIO(bytes(bad)))
        except Exception:  # any Python error is fine; a crash or a hang is not
            pass


def test_flipped_bytes_raise_python_errors(tmp_path):
    rng = np.random.default_rng(0)
    with zipfile.ZipFile(FIXTURE) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    for i in range(150):
        bad = bytearray(pkl)
        for at in rng.integers(0, len(bad), 1 + i % 3):
            bad[at] = int(rng.integers(0, 256))
        path = _rewrite(tmp_path, lambda n, d: bytes(bad) if n.endswith("data.pkl") else d)
        try:
            sx.load(path)
        except Exception:  # any Python error is fine; a crash or a hang is not
            pass


def _bool_bytes_changed(name, data):
    return bytes([2]) + data[1:] if name.endswith("/data/" + _bool_key()) else data


def _bool_key():
    with zipfile.ZipFile(FIXTURE) as z:
        return next(n.rsplit("/", 1)[1] for n in z.namelist() if "/data/" in n and z.getinfo(n).file_size == 5)


def test_bool_storage_with_other_bytes_raises(tmp_path):
    with pytest.raises(ValueError, match="bool storage holds bytes other than 0 and 1"):
        sx.load(_rewrite(tmp_path, _bool_bytes_changed))


def _pickled_zip(path, obj):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(obj, protocol=2))
        z.writestr("archive/byteorder", "little")
    return path


def test_weights_only_refuses_other_globals(tmp_path):
    path = _pickled_zip(tmp_path / "code.pt", {"f": os.getcwd, "n": collections.Counter("aab")})
    with pytest.raises(pickle.UnpicklingError, match=r"needs the global (posix|nt)\.getcwd.*add_safe_globals"):
        sx.load(path)
    with sx.serialization.safe_globals([os.getcwd, collections.Counter]):
        assert sx.load(path)["f"] is os.getcwd
    with pytest.raises(pickle.UnpicklingError):
        sx.load(path, weights_only=True)
    assert sx.load(path, weights_only=False)["n"] == collections.Counter("aab")


def test_sneppx_files_still_load(tmp_path):
    sx.save({"w": sx.ones(2)}, tmp_path / "own.pt")
    assert sx.load(tmp_path / "own.pt")["w"].numpy().tolist() == [1.0, 1.0]
    shutil.copy(FIXTURE, tmp_path / "copy.pt")
    assert sx.load(tmp_path / "copy.pt")["step"] == 7


def test_saved_files_get_the_mode_open_gives(tmp_path):
    # mkstemp makes owner-only files; a saved checkpoint gets 0o666 less the umask, as PyTorch's does
    mask = os.umask(0o027)
    try:
        sx.save({"w": sx.ones(2)}, tmp_path / "a.pt")
    finally:
        os.umask(mask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert set(modes.values()) == {0o640}, modes


def _written(tmp_path):
    w = sx.arange(12.0).reshape(3, 4)
    obj = {"m": collections.OrderedDict(w=w, b=sx.ones(2, dtype=sx.float64)), "views": (w, w.t(), w[1]),
           "h": sx.ones(3, dtype=sx.float16), "bf": sx.tensor([1.5, -2.0], dtype=sx.bfloat16), "i": sx.arange(3),
           "u8": sx.arange(3, dtype=sx.uint8), "mask": sx.tensor([True, False]), "empty": sx.zeros(0, 3),
           "p": sx.ones(2).requires_grad_(), "n": 3, "big": 2 ** 70, "f": 0.1, "s": "h\u00e9", "none": None,
           "raw": b"\x00\xff", "ids": {1, 2}, "dt": sx.bfloat16, "dev": sx.device("cpu"), "size": sx.Size([2, 3]),
           "empty_list": [], "empty_tuple": ()}
    sx.save(obj, tmp_path / "w.pt", format="torch")
    return obj, tmp_path / "w.pt"


def test_format_torch_writes_pytorchs_zip(tmp_path):
    obj, path = _written(tmp_path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert {"archive/data.pkl", "archive/byteorder", "archive/version"} <= set(names)
        with open(path, "rb") as fh:
            data = fh.read()
        for info in z.infolist():  # every record starts on a 64-byte boundary, as PyTorch's do (mmap)
            n, m = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
            assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename
    back = sx.load(path)
    assert list(back) == list(obj)
    w, wt, row = back["views"]
    w.add_(1)
    np.testing.assert_array_equal(wt.numpy(), np.arange(12.0).reshape(3, 4).T + 1)
    np.testing.assert_array_equal(row.numpy(), np.arange(4.0) + 5)
    assert back["bf"].dtype == sx.bfloat16 and back["bf"].float().numpy().tolist() == [1.5, -2.0]
    assert back["p"].requires_grad and back["big"] == 2 ** 70 and back["ids"] == {1, 2}
    with pytest.raises(TypeError, match=r"obj\['a'\] is a numpy.ndarray"):
        sx.save({"a": np.zeros(2)}, tmp_path / "np.pt", format="torch")
    with pytest.raises(ValueError, match="format must be"):
        sx.save({}, tmp_path / "x.pt", format="pickle")


# ---- against PyTorch

@pytest.mark.parity
def test_fixture_is_what_the_generator_writes(tmp_path):
    torch = pytest.importorskip("torch")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_ck", os.path.join(os.path.dirname(FIXTURE),
                                                                          "make_torch_checkpoint.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.save(mod.checkpoint(), tmp_path / "fresh.pt")
    torch.save(mod.checkpoint(), tmp_path / "fresh_legacy.pt", _use_new_zipfile_serialization=False)
    for fresh_path, fixed_path in ((tmp_path / "fresh.pt", FIXTURE), (tmp_path / "fresh_legacy.pt", LEGACY)):
        fresh, fixed = sx.load(fresh_path), sx.load(fixed_path)
        for key in ("half", "long", "u8", "mask", "empty", "scalar"):
            np.testing.assert_array_equal(fresh[key].numpy(), fixed[key].numpy())
        assert fresh["step"] == fixed["step"] and fresh["size"] == fixed["size"]


@pytest.mark.parity
@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
def test_state_dicts_and_optimizer_state_from_pytorch(tmp_path, zipped):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.LayerNorm(7), torch.nn.Linear(7, 3))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        net(torch.randn(4, 5)).square().mean().backward()
        opt.step()
    torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "best": torch.tensor(1.25)},
               tmp_path / "ck.pt", _use_new_zipfile_serialization=zipped)
    ck = sx.load(tmp_path / "ck.pt", map_location="cpu")
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(ck["model"][k].numpy(), v.numpy())
    ref = opt.state_dict()
    for i, state in ref["state"].items():
        for k, v in state.items():
            np.testing.assert_array_equal(ck["optimizer"]["state"][i][k].numpy(), v.numpy())
    assert ck["optimizer"]["param_groups"] == ref["param_groups"]
    assert ck["best"].item() == 1.25


@pytest.mark.parity
def test_numpy_values_need_the_allow_list_as_in_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"a": np.arange(3.0), "x": torch.ones(1)}, tmp_path / "np.pt")
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        torch.load(tmp_path / "np.pt")
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        sx.load(tmp_path / "np.pt")
    np.testing.assert_array_equal(sx.load(tmp_path / "np.pt", weights_only=False)["a"], np.arange(3.0))


@pytest.mark.parity
def test_pytorch_reads_format_torch(tmp_path):
    torch = pytest.importorskip("torch")
    obj, path = _written(tmp_path)
    for mmap in (False, True):
        got = torch.load(path, mmap=mmap)  # weights_only=True, PyTorch's default
        assert list(got) == list(obj)
        np.testing.assert_array_equal(got["m"]["w"].numpy(), np.arange(12.0).reshape(3, 4))
        w, wt, row = got["views"]
        assert w.untyped_storage().data_ptr() == wt.untyped_storage().data_ptr() == row.untyped_storage().data_ptr()
        assert wt.stride() == (1, 4) and row.storage_offset() == 4
        assert got["bf"].dtype == torch.bfloat16 and got["bf"].tolist() == [1.5, -2.0]
        assert got["h"].dtype == torch.float16 and got["u8"].dtype == torch.uint8
        assert got["mask"].tolist() == [True, False]
        assert got["empty"].shape == (0, 3) and got["p"].requires_grad
        assert (got["n"], got["big"], got["f"], got["s"], got["none"]) == (3, 2 ** 70, 0.1, "h\u00e9", None)
        assert got["raw"] == b"\x00\xff" and got["ids"] == {1, 2} and got["size"] == torch.Size([2, 3])
        assert got["dt"] == torch.bfloat16 and got["dev"] == torch.device("cpu")
        assert got["empty_list"] == [] and got["empty_tuple"] == ()


@pytest.mark.parity
def test_dtypes_sneppx_lacks_are_named(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"q": torch.zeros(3, dtype=torch.uint16)}, tmp_path / "u16.pt")
    with pytest.raises(TypeError, match="uint16"):
        sx.load(tmp_path / "u16.pt")
    torch.save({"q": torch.arange(-3, 3, dtype=torch.int8)}, tmp_path / "i8.pt")  # a dtype SneppX has
    assert sx.load(tmp_path / "i8.pt")["q"].tolist() == [-3, -2, -1, 0, 1, 2]
