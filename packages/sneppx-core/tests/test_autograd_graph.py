"""``autograd.graph``: ``Node`` matches every ``grad_fn``; ``save_on_cpu`` on a CPU-only run leaves gradients as
they are (checked against NumPy); saved-tensor hooks are refused with a clear error, and
``disable_saved_tensors_hooks``'s message wins inside it."""

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core.autograd import graph


def test_node_isinstance():
    x = sx.ones(3, requires_grad=True)
    y = (x * 2).exp().sum()
    assert isinstance(y.grad_fn, graph.Node)
    assert isinstance(y.grad_fn.next_functions[0][0], graph.Node)
    assert not isinstance(x, graph.Node) and y.grad_fn.name() == "SumBackward"


def test_save_on_cpu_keeps_gradients():
    w = np.array([0.5, -1.0, 2.0], np.float32)
    x = sx.tensor(w, requires_grad=True)
    if sx.cuda.is_available():
        with pytest.raises(NotImplementedError):
            graph.save_on_cpu().__enter__()
        return
    with graph.save_on_cpu(pin_memory=True):
        y = (x * x).sin().sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(w * w) * 2 * w, rtol=1e-6)


def test_saved_tensors_hooks_refused():
    with pytest.raises(NotImplementedError, match="no hooks on saved tensors"):
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
    with graph.disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with pytest.raises(NotImplementedError):  # the block's message is gone after it
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass


@pytest.mark.parity
def test_parity_disable_message_and_node():
    torch = pytest.importorskip("torch")
    tx = torch.ones(2, requires_grad=True)
    assert isinstance((tx * 2).sum().grad_fn, torch.autograd.graph.Node)
    with torch.autograd.graph.disable_saved_tensors_hooks("off"):
        with pytest.raises(RuntimeError, match="off"):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
