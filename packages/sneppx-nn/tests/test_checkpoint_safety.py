"""Checkpoints under failure: killed saves, full disks, files that do not match their config."""

import errno
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import safetensors
import sneppx_core as sx

import sneppx_nn as nn
from sneppx_nn import _atomic, checkpoint


def _run(script: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


_KILLED_SAVE = """
    import os, signal, sys
    import sneppx_core as sx
    import sneppx_nn as nn
    from sneppx_nn import checkpoint

    def half_then_killed(arrays, tmp, header):
        with open(tmp, "wb") as fh:
            fh.write(b"half-written")
        os.kill(os.getpid(), signal.SIGKILL)

    checkpoint._write = half_then_killed
    nn.save({"w": sx.zeros(3)}, sys.argv[1])
"""


def test_next_save_removes_temp_files_of_a_killed_save(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    nn.save({"w": sx.ones(3)}, path)
    done = _run(_KILLED_SAVE, path)
    assert done.returncode == -9, done.stderr
    left = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(left) == 1 and left[0].startswith(".ckpt.safetensors.")
    live = tmp_path / f".ckpt.safetensors.{os.getpid()}@{_atomic._HOST}.abcdefgh.tmp"
    live.write_bytes(b"a save in progress in this process")
    other = tmp_path / ".other.safetensors.1@nohost.abcdefgh.tmp"
    other.write_bytes(b"another target")
    nn.save({"w": sx.full((3,), 2.0)}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.safetensors", live.name, other.name])
    np.testing.assert_array_equal(nn.load(path)["w"].numpy(), [2.0, 2.0, 2.0])


_FULL_DISK = """
    import os, resource, signal, sys
    import sneppx_nn as nn

    path = sys.argv[1]
    model = nn.Linear(256, 256)
    model.save_checkpoint(path)  # 257 KiB, before the limit
    before = open(path, "rb").read()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))  # writes past 64 KiB fail
    try:
        model.save_checkpoint(path)
    except OSError as e:
        print(type(e).__name__, e.errno, e.filename == path, "checkpoint" in str(e) and path in str(e))
    print(sorted(os.listdir(os.path.dirname(path))), open(path, "rb").read() == before)
"""


def test_failed_write_raises_oserror_with_the_path_and_leaves_no_temp(tmp_path):
    path = tmp_path / "model.safetensors"
    done = _run(_FULL_DISK, path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [f"OSError {errno.EFBIG} True True", "['model.safetensors'] True"]


def test_safetensors_io_errors_become_oserror(tmp_path, monkeypatch):
    def full(arrays, tmp, header):
        raise safetensors.SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(checkpoint, "_write", full)
    path = tmp_path / "w.safetensors"
    with pytest.raises(OSError, match="No space left on device") as info:
        nn.save({"w": sx.ones(2)}, path)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(path)
    assert os.listdir(tmp_path) == []


def _raw_file(path, header: dict, data: bytes):
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


_BIG_CONFIG = """
    import resource, sys
    import sneppx_nn as nn

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        nn.Linear.from_checkpoint(sys.argv[1])
        print("built")
    except ValueError as e:
        print("ValueError", "(10000, 10000)" in str(e), "weight (2, 2) float32" in str(e))
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
    print(grown_mib < 100, grown_mib)
"""


def test_from_checkpoint_checks_the_file_before_allocating_the_model(tmp_path):
    path = tmp_path / "tiny.safetensors"
    small = nn.Linear(2, 2)
    config = dict(small.get_config(), kwargs=dict(small.get_config()["kwargs"], in_features=10000,
                                                    out_features=10000))
    nn.save(small.state_dict(), path, config=config)
    assert os.path.getsize(path) < 1024
    done = _run(_BIG_CONFIG, path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "ValueError True True" and lines[1].startswith("True"), lines
    again = nn.Linear.from_checkpoint(_saved(tmp_path, nn.Linear(3, 4)))  # a matching file still loads
    assert tuple(again.weight.shape) == (4, 3)


def test_from_checkpoint_rejects_a_config_whose_shapes_the_file_lacks(tmp_path):
    path = tmp_path / "swapped.safetensors"
    small = nn.Linear(4, 1)  # weight (1, 4), bias (1,)
    config = dict(small.get_config(), kwargs=dict(small.get_config()["kwargs"], in_features=1, out_features=4))
    nn.save(small.state_dict(), path, config=config)
    with pytest.raises(ValueError, match=r"creates a parameter of shape \(4, 1\) and dtype float32.*weight \(1, 4\)"):
        nn.Linear.from_checkpoint(path)


def _saved(folder, model):
    path = folder / "ok.safetensors"
    model.save_checkpoint(path)
    return path


@pytest.mark.parametrize("entry, why", [
    ({"dtype": "F32", "shape": [10000, 10000], "data_offsets": [0, 16]}, "needs 400000000 bytes"),
    ({"dtype": "F32", "shape": [4], "data_offsets": [0, 1 << 40]}, "outside"),
    ({"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}, "shape"),
    ({"shape": [4], "data_offsets": [0, 16]}, "no dtype"),
])
def test_header_is_checked_before_any_tensor_is_read(tmp_path, entry, why):
    path = tmp_path / "bad.safetensors"
    _raw_file(path, {"weight": entry}, b"\0" * 16)
    with pytest.raises(ValueError, match=why):
        nn.load(path)
    with pytest.raises(ValueError, match=why):
        nn.Linear.from_checkpoint(path)


def test_saved_files_get_the_mode_open_gives(tmp_path):
    # mkstemp makes owner-only files; a saved checkpoint gets 0o666 less the umask, as PyTorch's does
    mask = os.umask(0o027)
    try:
        nn.save({"w": sx.ones(2)}, tmp_path / "a.safetensors")
    finally:
        os.umask(mask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert set(modes.values()) == {0o640}, modes
