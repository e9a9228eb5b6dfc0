"""sneppx_nn.init: distributions checked by their moments and bounds, seeding, errors."""

import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from sneppx_nn import init
from conftest import to_np


def _phi(x):
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _cdf(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1.0 and init.calculate_gain("sigmoid") == 1.0
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    with pytest.raises(ValueError):
        init.calculate_gain("swishy")


def test_uniform_and_normal_moments():
    t = sx.empty(200, 500)
    init.uniform_(t, -2.0, 4.0)
    a = to_np(t)
    assert a.min() >= -2.0 and a.max() <= 4.0
    assert abs(a.mean() - 1.0) < 0.03 and abs(a.std() - 6 / math.sqrt(12)) < 0.03
    init.normal_(t, 3.0, 0.5)
    a = to_np(t)
    assert abs(a.mean() - 3.0) < 0.01 and abs(a.std() - 0.5) < 0.01
    with pytest.raises(ValueError):
        init.uniform_(t, 1.0, 0.0)


def test_seeded_by_manual_seed():
    t = sx.empty(5, 5)
    sx.manual_seed(11)
    a = to_np(init.kaiming_normal_(t))
    sx.manual_seed(11)
    b = to_np(init.kaiming_normal_(sx.empty(5, 5)))
    np.testing.assert_array_equal(a, b)
    g = sx.Generator(seed=4)
    c = to_np(init.uniform_(sx.empty(3), generator=g))
    g.manual_seed(4)
    np.testing.assert_array_equal(c, to_np(init.uniform_(sx.empty(3), generator=g)))


def test_xavier():
    t = sx.empty(300, 200)
    bound = 2.0 * math.sqrt(6 / 500)
    a = to_np(init.xavier_uniform_(t, gain=2.0))
    assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.01 * bound
    a = to_np(init.xavier_normal_(t))
    assert abs(a.std() - math.sqrt(2 / 500)) < 0.01 * math.sqrt(2 / 500)


def test_kaiming_modes():
    t = sx.empty(100, 400, 2)  # fan_in = 800, fan_out = 200
    a = to_np(init.kaiming_uniform_(t, a=0.0, nonlinearity="relu"))
    bound = math.sqrt(2) * math.sqrt(3 / 800)
    assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.01 * bound
    a = to_np(init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"))
    assert abs(a.std() - math.sqrt(2 / 200)) < 0.01 * math.sqrt(2 / 200)
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_normal_(t, mode="fan_avg")
    with pytest.raises(ValueError, match="2 or more"):
        init.xavier_uniform_(sx.empty(4))


def test_trunc_normal_bounds_and_moments():
    mean, std, a, b = 1.0, 2.0, -1.0, 2.0
    t = init.trunc_normal_(sx.empty(400, 500), mean, std, a, b)
    x = to_np(t)
    assert x.min() >= a and x.max() <= b
    al, be = (a - mean) / std, (b - mean) / std
    z = _cdf(be) - _cdf(al)
    exp_mean = mean + std * (_phi(al) - _phi(be)) / z
    exp_var = std ** 2 * (1 + (al * _phi(al) - be * _phi(be)) / z - ((_phi(al) - _phi(be)) / z) ** 2)
    assert abs(x.mean() - exp_mean) < 0.01 and abs(x.var() - exp_var) < 0.01


def test_constant_ones_zeros_on_parameter():
    p = nn.Parameter(sx.empty(3, 2))
    assert init.constant_(p, 0.25) is p
    assert np.all(to_np(p) == 0.25) and p.requires_grad and p.is_leaf
    assert np.all(to_np(init.ones_(p)) == 1) and np.all(to_np(init.zeros_(p)) == 0)
