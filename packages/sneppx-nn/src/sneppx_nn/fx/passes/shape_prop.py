"""``torch.fx.passes.shape_prop``: ``ShapeProp`` records each node's tensor shape and dtype by running the graph."""

from __future__ import annotations

from typing import Any, NamedTuple

import sneppx_core as sx

from ..interpreter import Interpreter
from ..node import Node, map_aggregate


class TensorMetadata(NamedTuple):
    """What ``ShapeProp`` stores in ``node.meta['tensor_meta']`` for a tensor value."""
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract(t: sx.Tensor) -> TensorMetadata:
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, tuple(t.stride()), None, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` on example inputs and sets ``node.meta['tensor_meta']``
    (a ``TensorMetadata``, or a structure of them for tuple/list results) and ``node.meta['type']``."""

    def run_node(self, n: Node) -> Any:
        """Runs the node and records the metadata of its value."""
        result = super().run_node(n)
        found = []

        def meta(x):
            if isinstance(x, sx.Tensor):
                found.append(True)
                return _extract(x)
            return x
        m = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = m
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        """Runs the module on ``args`` (example inputs), recording shapes; returns the output."""
        return self.run(*args)
