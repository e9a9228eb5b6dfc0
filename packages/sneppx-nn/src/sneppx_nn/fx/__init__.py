"""``torch.fx``'s place in SneppX: symbolic tracing of Modules into graphs that can be read, rewritten and run.

``symbolic_trace(model)`` runs ``model.forward`` on Proxies and records what it does as a ``Graph`` of ``Node``
s; ``GraphModule`` runs the Python code generated from a graph (``gm.code``). ``Tracer`` subclasses change what
is traced into, ``Interpreter``/``Transformer`` run or rebuild a graph node by node, ``replace_pattern`` rewrites
subgraphs and ``passes.shape_prop.ShapeProp`` records shapes::

    import SneppX_ALG as torch
    from SneppX_ALG.fx import symbolic_trace

    gm = symbolic_trace(model)
    for node in gm.graph.nodes:
        print(node.op, node.name, node.target)

Importing this module makes the library's functions take Proxies (see ``_patch``): they record a node when given
a traced value, as PyTorch's do through ``__torch_function__``.
"""

from . import graph, graph_module, interpreter, node, passes, proxy, subgraph_rewriter  # noqa: F401
from ._patch import patch_library as _patch_library
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Proxy", "PythonCode", "Tracer", "Transformer",
           "has_side_effect", "map_arg", "replace_pattern", "symbolic_trace", "wrap"]

_patch_library()
