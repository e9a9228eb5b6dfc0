"""``torch.fx.graph_module``: ``GraphModule``, a Module whose ``forward`` is the code generated from a graph."""

from __future__ import annotations

import copy
import itertools
import linecache

import sneppx_core as sx

from ..module import Module
from ..parameter import Parameter
from .graph import Graph, PythonCode

_COUNTER = itertools.count()


def _copy_attr(src: Module, dst: Module, target: str) -> None:
    """Puts ``src``'s object at the dotted path ``target`` at the same path in ``dst`` (empty Modules are made
    for the missing parents); a tensor that is not a parameter becomes a buffer, as in PyTorch."""
    *prefix, field = target.split(".")
    for part in prefix:
        s = getattr(src, part)
        d = getattr(dst, part, None)
        if d is None:
            d = Module()
            setattr(dst, part, d)
        src, dst = s, d
    obj = getattr(src, field)
    if isinstance(obj, sx.Tensor) and not isinstance(obj, Parameter):
        persistent = not (isinstance(src, Module) and field in src._non_persistent_buffers)
        dst.register_buffer(field, obj, persistent)
    else:
        setattr(dst, field, obj)


class GraphModule(Module):
    """A Module made from a ``root`` Module (or a dict of name -> object) and a ``graph``: it holds the
    submodules, parameters and buffers the graph's ``call_module``/``get_attr`` nodes name (copied from
    ``root`` by reference), and its ``forward`` runs the graph's generated code (``code``). After changing the
    graph, call ``recompile()``."""

    def __new__(cls, *args, **kwargs):
        # each instance gets its own class, so that its forward is a method of that class
        base = next(c for c in cls.__mro__ if c.__name__ != "GraphModuleImpl")
        impl = type("GraphModuleImpl", (base,), {})
        return super().__new__(impl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"[GraphModule] node {node.name} targets {node.target!r}, which the dict "
                                           "root does not have")
                    *prefix, field = node.target.split(".")
                    dst = self
                    for part in prefix:
                        if getattr(dst, part, None) is None:
                            setattr(dst, part, Module())
                        dst = getattr(dst, part)
                    setattr(dst, field, root[node.target])
        else:
            raise TypeError(f"[GraphModule] root must be a Module or a dict, got {type(root).__name__}")
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The graph; assigning one takes ownership of it and recompiles."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"[GraphModule.graph] expected an fx.Graph, got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``."""
        return self.__dict__["_code"]

    def recompile(self) -> PythonCode:
        """Generates ``forward`` again from the graph (after the graph was changed)."""
        pc = self.graph.python_code("self")
        self.__dict__["_code"] = pc.src
        key = f"<eval_with_key>.{next(_COUNTER)}"
        linecache.cache[key] = (len(pc.src), None, pc.src.splitlines(True), key)  # tracebacks show the line
        scope = dict(pc.globals)
        exec(compile(pc.src, key, "exec"), scope)
        type(self).forward = scope["forward"]
        return pc

    def print_readable(self, print_output: bool = True, **kwargs) -> str:
        """The module's code as a class definition (printed unless ``print_output`` is False)."""
        name = type(self).__name__
        body = "".join(f"    {line}\n" if line.strip() else "\n" for line in self.code.strip("\n ").splitlines())
        text = f"class {name}(sneppx_nn.Module):\n{body}"
        if print_output:
            print(text)
        return text

    def __deepcopy__(self, memo):
        holder = Module()
        holder.__dict__.update(copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")},
                                             memo))
        graph = Graph()
        graph.output(graph.graph_copy(self.graph, {}))
        res = GraphModule(holder, graph, type(self).__name__)
        res.__dict__.update({k: v for k, v in holder.__dict__.items() if k not in res.__dict__})
        memo[id(self)] = res
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, type(self).__name__)
        res.__dict__.update({k: v for k, v in self.__dict__.items() if k not in res.__dict__})
        return res

    def __str__(self) -> str:
        return super().__str__() + "\n\n" + self.code.strip("\n ") + "\n"

    def __reduce__(self):
        raise TypeError("[GraphModule] cannot be pickled: save its state_dict() and trace the model again")
