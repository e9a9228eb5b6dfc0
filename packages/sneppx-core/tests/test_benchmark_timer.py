"""``utils.benchmark``: Timer's blocks and thread count, Measurement's statistics against the statistics module,
Compare's table."""

import statistics
import time

import pytest
import sneppx_core as sx
from sneppx_core.utils import benchmark


def test_measurement_statistics():
    m = benchmark.Measurement(10, [1.0, 2.0, 3.0, 4.0, 10.0], benchmark.TaskSpec("f()", "pass", label="L"))
    assert m.times == [0.1, 0.2, 0.3, 0.4, 1.0]
    assert m.median == statistics.median(m.times) and m.mean == pytest.approx(0.4)
    q = statistics.quantiles(m.times, n=4, method="inclusive")
    assert m.iqr == pytest.approx(q[2] - q[0]) and m.has_warnings
    assert m.title == "L" and m.stmt == "f()" and m.num_threads == 1
    text = repr(m)
    assert "Median: 300 ms" in text and "5 measurements, 10 runs per measurement, 1 thread" in text
    merged = benchmark.Measurement.merge([m, benchmark.Measurement(5, [1.0], m.task_spec)])
    assert len(merged) == 1 and merged[0].times == pytest.approx(m.times + [0.2])


def test_timer_runs_the_statement_with_its_threads():
    seen = []
    probe = benchmark.Timer("seen.append(sx.get_num_threads())", globals={"seen": seen, "sx": sx}, num_threads=1)
    before = sx.get_num_threads()
    m = probe.timeit(50)
    assert m.number_per_run == 50 and len(m.raw_times) == 1 and set(seen) == {1}
    assert sx.get_num_threads() == before  # put back afterwards
    sleepy = benchmark.Timer("time.sleep(0.002)", globals={"time": time})
    m = sleepy.blocked_autorange(min_run_time=0.05)
    assert sum(m.raw_times) >= 0.05 and 0.0019 < m.median < 0.02
    m = sleepy.adaptive_autorange(threshold=0.5, min_run_time=0.02, max_run_time=1.0)
    assert len(m.times) >= 3 and 0.0019 < m.median < 0.02
    number, seconds = benchmark.Timer("pass").autorange()
    assert number >= 1 and seconds >= 0.2
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        sleepy.repeat()
    with pytest.raises(NotImplementedError, match="only Python statements"):
        benchmark.Timer("x", language=benchmark.Language.CPP)
    with pytest.raises(ValueError, match="num_threads"):
        benchmark.Timer("x", num_threads=0)


def test_compare_table():
    spec = benchmark.TaskSpec
    rows = [benchmark.Measurement(1, [t], spec("s", "pass", label="add", sub_label=r, description=d))
            for t, r, d in ((1e-5, "small", "sx"), (2e-5, "small", "np"), (3e-4, "large", "sx"))]
    table = str(benchmark.Compare(rows))
    lines = table.splitlines()
    assert lines[0] == "[ add ]" and lines[1].split() == ["sx", "np"]
    assert lines[2].split() == ["small", "10.0", "20.0"] and lines[3].split() == ["large", "300.0"]
    assert "microseconds" in table
