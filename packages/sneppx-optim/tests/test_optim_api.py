"""Optimizer construction, validation messages, param groups and the package surface."""

import pathlib
import re

import pytest
import sneppx_core as sx

import sneppx_optim as so


def _p(*shape):
    return sx.zeros(shape or (2,), requires_grad=True)


@pytest.mark.parametrize("make, message", [
    (lambda: so.AdamW([_p()], lr=-1), "AdamW: lr must be >= 0, got -1"),
    (lambda: so.Adam([_p()], eps=-1e-8), "Adam: eps must be >= 0, got -1e-08"),
    (lambda: so.Adam([_p()], betas=(0.9, 1.0)), "Adam: betas[1] must be in [0, 1), got 1.0"),
    (lambda: so.Adam([_p()], betas=(0.9,)), "Adam: betas must be a pair"),
    (lambda: so.SGD([_p()], lr=0.1, momentum=-0.5), "SGD: momentum must be >= 0, got -0.5"),
    (lambda: so.SGD([_p()], lr=0.1, nesterov=True), "SGD: nesterov needs momentum > 0 and dampening == 0"),
    (lambda: so.SGD([_p()], lr=float("nan")), "SGD: lr must be >= 0, got nan"),
    (lambda: so.Lion([_p()], weight_decay=-0.1), "Lion: weight_decay must be >= 0, got -0.1"),
    (lambda: so.LAMB([_p()], betas=(-0.1, 0.9)), "LAMB: betas[0] must be in [0, 1), got -0.1"),
    (lambda: so.SGD([], lr=0.1), "SGD: got an empty parameter list"),
    (lambda: so.SGD([{"params": [_p()]}, {"params": [_p()], "lr": -2}], lr=0.1),
     "SGD: lr must be >= 0, got -2"),
])
def test_hyperparameters_are_validated(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_type_errors():
    with pytest.raises(TypeError, match="single Tensor"):
        so.SGD(_p(), lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        so.SGD([1.0], lr=0.1)
    with pytest.raises(TypeError, match="lr must be a real number"):
        so.Adam([_p()], lr="0.1")
    with pytest.raises(ValueError, match="non-leaf"):
        so.SGD([_p() * 2], lr=0.1)


def test_add_param_group_defaults_and_duplicates():
    a, b = _p(), _p()
    opt = so.Adam([a], lr=0.01, weight_decay=0.1)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["weight_decay"] == 0.1
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    with pytest.raises(ValueError, match="more than once"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="more than once"):
        so.SGD([a, a], lr=0.1)
    with pytest.raises(TypeError, match="ordered collection"):
        so.SGD([{"params": {a}}], lr=0.1)


def test_state_dict_layout_and_mismatch():
    a, b, c = _p(), _p(3), _p(4)
    opt = so.SGD([{"params": [a, b]}, {"params": [c], "lr": 0.2}], lr=0.1)
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]] and sd["state"] == {}
    assert sd["param_groups"][1]["lr"] == 0.2
    other = so.SGD([a, b, c], lr=0.1)
    with pytest.raises(ValueError, match="2 parameter groups"):
        other.load_state_dict(sd)


def test_adamw_defaults_match_pytorch_docs():
    g = so.AdamW([_p()]).param_groups[0]
    assert (g["lr"], g["betas"], g["eps"], g["weight_decay"], g["amsgrad"]) == (1e-3, (0.9, 0.999), 1e-8, 1e-2, False)
    assert so.Adam([_p()]).param_groups[0]["weight_decay"] == 0.0
    assert so.Lion([_p()]).param_groups[0]["betas"] == (0.9, 0.99)


def test_public_names_documented_and_exported():
    for name in so.__all__:
        obj = getattr(so, name)
        if name != "__version__":
            assert obj.__doc__ and obj.__doc__.strip(), name
    assert so.__version__ == "0.1.0"


def test_sources_import_only_core():
    src = pathlib.Path(so.__file__).parent
    for path in src.glob("*.py"):
        text = path.read_text()
        found = re.findall(r"^\s*(?:from|import)\s+(sneppx_\w+)", text, flags=re.M)
        assert set(found) <= {"sneppx_core", "sneppx_optim"}, (path.name, found)
        assert not re.search(r"sneppx_core\.\_", text), path.name


def test_sparse_adam_raises_not_implemented():
    with pytest.raises(NotImplementedError, match=r"\[SparseAdam\] sparse gradients are not supported.*Adam"):
        so.SparseAdam([_p()], lr=1e-3)
    assert "SparseAdam" not in so.__all__  # not listed among the optimizers that exist


@pytest.mark.parametrize("make", [lambda ps: so.AdamW(ps, lr=0.1), lambda ps: so.LAMB(ps, lr=0.1),
                                  lambda ps: so.RAdam(ps, lr=0.1)])
def test_state_dict_step_is_a_float32_tensor(make):
    # PyTorch's form of state["step"]; Adam and LAMB keep an int inside (their fused steps group by it)
    p = sx.ones(3).requires_grad_(True)
    opt = make([p])
    for _ in range(3):
        p.grad = sx.ones(3)
        opt.step()
    step = opt.state_dict()["state"][0]["step"]
    assert isinstance(step, sx.Tensor) and step.shape == () and step.dtype == sx.float32 and step.item() == 3.0
    other = make([p])
    other.load_state_dict(opt.state_dict())
    inner = other.state[p]["step"]
    assert (inner == 3) if isinstance(inner, int) else inner.item() == 3.0
    assert isinstance(inner, int) == opt._int_step
    p.grad = sx.ones(3)
    other.step()
    assert other.state_dict()["state"][0]["step"].item() == 4.0
