"""Shared pytest setup for sneppx-core: the ``parity`` marker and a modest Hypothesis profile."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # lets test modules import the op table

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "sneppx", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    # SNEPPX_HYPOTHESIS_PROFILE=thorough: many more examples, for hunting rare failures by hand
    settings.register_profile(
        "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile(os.environ.get("SNEPPX_HYPOTHESIS_PROFILE", "sneppx"))
except ImportError:  # hypothesis is a test dependency; property tests skip without it
    pass


def pytest_configure(config):
    config.addinivalue_line("markers", "parity: compares sneppx_core with PyTorch (skipped when torch is missing)")
    config.addinivalue_line("markers", "slow: long-running test (memory and fuzz loops)")
    config.addinivalue_line("markers", "fuzz: Hypothesis fuzzing in subprocesses (nox -s fuzz gives it minutes)")
    config.addinivalue_line("markers", "cuda: compares CUDA with the CPU (skipped when no GPU is visible)")


@pytest.fixture
def torch():
    """The torch module, or a skip when it is not installed."""
    return pytest.importorskip("torch")


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """Runs a test at 1 and at 2 threads of the core's pool, restoring the setting afterwards."""
    import sneppx_core as sx

    n0 = sx.get_num_threads()
    sx.set_num_threads(request.param)
    yield request.param
    sx.set_num_threads(n0)
