"""``profiler`` (``torch.profiler``) and ``autograd.profiler``: which calls are recorded and how they nest, the
times' arithmetic (self time = total less children), shapes and memory against NumPy's sizes, the table's
layout, Chrome traces, schedules and steps, and that profiling changes no result and leaves the library as it was.
The parity tests compare schedules and the table's columns with PyTorch's."""

import json

import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core import profiler
from sneppx_core.profiler import profile, record_function, schedule


def _program(x, w):
    with record_function("block"):
        h = F.gelu(x @ w)
        return (h + 1.0).sum()


def test_records_calls_nesting_and_times():
    x, w = sx.randn(8, 16), sx.randn(16, 4)
    with profile() as prof:
        out = _program(x, w)
    names = [e.name for e in prof.events()]
    assert names == ["block", "sneppx::matmul", "sneppx::gelu", "sneppx::add", "sneppx::sum"]
    block = prof.events()[0]
    assert block.cpu_parent is None and all(e.cpu_parent is block for e in prof.events()[1:])
    assert block.self_cpu_time_total == pytest.approx(
        block.cpu_time_total - sum(e.cpu_time_total for e in prof.events()[1:]))
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        assert block.time_range[0] <= e.time_range[0] <= e.time_range[1] <= block.time_range[1]
    assert prof.events().self_cpu_time_total == pytest.approx(block.cpu_time_total)
    assert out.item() == _program(x, w).item()  # profiling changes nothing


def test_library_is_restored_and_profiles_do_not_nest():
    add, method = sx.add, sx.Tensor.__dict__["__add__"]
    with profile():
        assert sx.add is not add
        with pytest.raises(RuntimeError, match="already recording"):
            profile().start()
    assert sx.add is add and sx.Tensor.__dict__["__add__"] is method
    a, b = sx.ones(2), sx.ones(3)
    with profile() as prof:  # an op that raises is recorded and the profile stays consistent
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            a @ b
        sx.relu(a)
    assert [e.name for e in prof.events()] == ["sneppx::matmul", "sneppx::relu"]
    assert prof.events()[1].cpu_parent is None


def test_key_averages_shapes_and_memory():
    a = sx.ones(4, 5)
    with profile(record_shapes=True, profile_memory=True) as prof:
        for _ in range(3):
            sx.relu(a)
        b = a.reshape(20) * 2.0
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["sneppx::relu"].count == 3
    assert avg["sneppx::relu"].cpu_time_total == pytest.approx(
        sum(e.cpu_time_total for e in prof.events() if e.name == "sneppx::relu"))
    relu = next(e for e in prof.events() if e.name == "sneppx::relu")
    assert relu.input_shapes == [[4, 5]] and relu.cpu_memory_usage == np.ones((4, 5), np.float32).nbytes
    mul = next(e for e in prof.events() if e.name == "sneppx::mul")
    assert mul.input_shapes == [[20], []] and mul.cpu_memory_usage == b.numel() * 4
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert {e.key for e in by_shape} == {"sneppx::relu", "sneppx::reshape", "sneppx::mul"}


def test_table_layout():
    a = sx.ones(3)
    with profile(profile_memory=True) as prof:
        sx.relu(a)
        sx.exp(a)
    text = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=1)
    lines = text.splitlines()
    assert lines[0] == lines[2] == lines[4] and set(lines[0]) == {"-", " "}
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total",
                                "CPU", "time", "avg", "CPU", "Mem", "Self", "CPU", "Mem", "#", "of", "Calls"]
    assert len(lines) == 6 and lines[5].startswith("Self CPU time total: ")
    top = max(prof.key_averages(), key=lambda e: e.self_cpu_time_total)
    assert lines[3].split()[0] == top.key and lines[3].split()[-1] == "1"


def test_chrome_trace(tmp_path):
    x, w = sx.ones(2, 3), sx.ones(3, 2)
    with profile() as prof:
        _program(x, w)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    assert [t["name"] for t in trace] == [e.name for e in prof.events()]
    assert trace[0]["cat"] == "user_annotation" and trace[1]["cat"] == "cpu_op"
    assert all(t["ph"] == "X" and t["dur"] >= 0 for t in trace)


def test_schedule_steps_and_trace_handler(tmp_path):
    seen = []
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    with profile(schedule=sched, on_trace_ready=lambda p: seen.append([e.name for e in p.events()])) as prof:
        for step in range(6):
            sx.full((1,), float(step)).exp()
            prof.step()
    assert len(seen) == 1
    steps = [n for n in seen[0] if n.startswith("ProfilerStep#")]
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"] and seen[0].count("sneppx::exp") == 2
    handler = profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w")
    with profile(schedule=schedule(wait=0, warmup=0, active=1, repeat=2), on_trace_ready=handler) as prof:
        for _ in range(3):
            sx.ones(2).relu()
            prof.step()
    files = sorted(tmp_path.iterdir())
    assert len(files) == 2 and all(f.name.startswith("w.") and f.name.endswith(".pt.trace.json") for f in files)


def test_autograd_profiler_and_record_function_decorator():
    @record_function("scaled")
    def scaled(t):
        return t * 3

    x = sx.ones(2, requires_grad=True)
    with sx.autograd.profiler.profile() as prof:
        y = scaled(x).sum()
        y.backward()
    assert [e.name for e in prof.function_events] == ["scaled", "sneppx::mul", "sneppx::sum", "sneppx::backward"]
    assert str(prof).splitlines()[3].split()[0] == "scaled"
    with sx.autograd.profiler.profile(enabled=False) as off:
        x.exp()
    assert len(off.function_events) == 0
    assert sx.autograd.profiler.record_function is record_function


def test_ops_namespace():
    assert sx.ops.aten.add(sx.ones(2), sx.ones(2)).tolist() == [2.0, 2.0]
    assert sx.ops.aten.add.Tensor is sx.ops.aten.add.default is sx.ops.aten.add
    with pytest.raises(AttributeError, match="no operator namespace"):
        sx.ops.torchvision
    one = sx.ones(1)
    with profile() as prof:
        h = sx.ops.profiler._record_function_enter("range")
        one.neg()
        sx.ops.profiler._record_function_exit(h)
    assert [e.name for e in prof.events()] == ["range", "sneppx::neg"]


@pytest.mark.parity
def test_parity_schedule_actions():
    torch = pytest.importorskip("torch")
    for kw in [dict(wait=1, warmup=1, active=2, repeat=1), dict(wait=2, warmup=0, active=3, repeat=0, skip_first=3),
               dict(wait=0, warmup=2, active=1, repeat=2, skip_first=1)]:
        ours = [schedule(**kw)(i).name for i in range(25)]
        theirs = [torch.profiler.schedule(**kw)(i).name for i in range(25)]
        assert ours == theirs, kw


@pytest.mark.parity
def test_parity_table_columns():
    torch = pytest.importorskip("torch")
    for kw in [{}, {"profile_memory": True}]:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **kw) as tp:
            torch.relu(torch.ones(3))
        with profile(**kw) as sp:
            sx.relu(sx.ones(3))
        theirs = tp.key_averages().table(row_limit=1).splitlines()[1].split()
        ours = sp.key_averages().table(row_limit=1).splitlines()[1].split()
        assert ours == theirs
