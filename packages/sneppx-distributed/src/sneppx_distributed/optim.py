"""``torch.distributed.optim``: ``ZeroRedundancyOptimizer`` (ZeRO stage 1). Each rank keeps the optimizer state
of only its share of the parameters and updates only those; the updated parameters are then broadcast from
their owners, so every rank ends a step with the same parameters as one optimizer over all of them, with about
1/world_size of the state."""

from __future__ import annotations

import sneppx_core as sx

from .collectives import broadcast
from .group import default_group
from .objects import gather_object

__all__ = ["ZeroRedundancyOptimizer"]


def _hyperparameters(group: dict) -> dict:
    """A param group less its ``params``."""
    return {k: v for k, v in group.items() if k != "params"}


class ZeroRedundancyOptimizer:
    """Wraps ``optimizer_class`` (an optimizer class such as ``sneppx_optim.AdamW``, taking ``**defaults``) so that
    its state is sharded over the ranks of ``process_group``. Parameters are given to ranks largest first, each to
    the rank holding the fewest elements so far (as PyTorch does); gradients must already be the same on every
    rank (averaged by DDP or ``all_reduce``). ``param_groups`` are the global groups: hyperparameters changed
    there (a scheduler's ``lr``) apply at the next ``step``. ``state_dict()`` needs ``consolidate_state_dict(to)``
    first and works on rank ``to``. ``parameters_as_bucket_view`` is accepted and changes nothing;
    ``overlap_with_ddp=True`` raises NotImplementedError."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults) -> None:
        if overlap_with_ddp:
            raise NotImplementedError("[ZeroRedundancyOptimizer] overlap_with_ddp=True (DDP communication hooks) "
                                      "is not supported")
        g = default_group("ZeroRedundancyOptimizer", process_group)
        self.process_group, self.rank, self.world_size = process_group, g.rank, g.world_size
        self.optimizer_class, self.defaults = optimizer_class, dict(defaults)
        self.parameters_as_bucket_view = parameters_as_bucket_view
        params = list(params)
        if not params:
            raise ValueError("[ZeroRedundancyOptimizer] got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups: list = []
        self.owner: dict = {}  # id(param) -> rank
        self._sizes = [0] * self.world_size
        self.optim = None
        for group in groups:
            self.add_param_group(group)
        self._consolidated = None

    # ----- ownership ---------------------------------------------------------------------------
    def _assign(self, params: list) -> None:
        for p in sorted(params, key=lambda t: t.numel(), reverse=True):
            if id(p) in self.owner:
                raise ValueError("[ZeroRedundancyOptimizer] a parameter appears in two param groups")
            rank = min(range(self.world_size), key=lambda r: self._sizes[r])
            self.owner[id(p)] = rank
            self._sizes[rank] += p.numel()

    def _local(self, group: dict) -> dict:
        return {**group, "params": [p for p in group["params"] if self.owner[id(p)] == self.rank]}

    def add_param_group(self, param_group: dict) -> None:
        """Adds a group (a dict with ``"params"`` and hyperparameters), sharing its parameters out too."""
        group = dict(param_group)
        group["params"] = [group["params"]] if isinstance(group["params"], sx.Tensor) else list(group["params"])
        self._assign(group["params"])
        if self.optim is None:
            self.optim = self.optimizer_class([self._local(group)], **self.defaults)
        else:
            self.optim.add_param_group(self._local(group))
        local = self.optim.param_groups[-1]
        self.param_groups.append({**_hyperparameters(local), "params": group["params"]})

    @property
    def state(self) -> dict:
        """The optimizer state this rank keeps (its own parameters' only)."""
        return self.optim.state

    # ----- stepping ------------------------------------------------------------------------------
    def _sync_hyperparameters(self) -> None:
        for glob, local in zip(self.param_groups, self.optim.param_groups):
            local.update(_hyperparameters(glob))

    def step(self, closure=None):
        """Updates this rank's parameters with the wrapped optimizer, then broadcasts every parameter from its
        owner; returns the closure's loss, if any."""
        self._sync_hyperparameters()
        loss = self.optim.step(closure) if closure is not None else self.optim.step()
        with sx.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    broadcast(p.detach(), src=self.owner[id(p)], group=self.process_group)
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the gradients of all parameters (not only this rank's): None, or zeros."""
        for p in (p for g in self.param_groups for p in g["params"] if p.grad is not None):
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    # ----- state ---------------------------------------------------------------------------------
    def _global_index(self) -> dict:
        """id(param) -> its index over all groups (the numbering of state_dict's ``params``)."""
        return {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}

    def _local_to_global(self) -> dict:
        index = self._global_index()
        local = [p for g in self.optim.param_groups for p in g["params"]]
        return {i: index[id(p)] for i, p in enumerate(local)}

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collects every rank's share of the state on rank ``to`` (all ranks must call it)."""
        self._sync_hyperparameters()
        mine = self.optim.state_dict()["state"]
        mapping = self._local_to_global()
        shard = {mapping[k]: v for k, v in mine.items()}
        shards = [None] * self.world_size
        gather_object(shard, shards if self.rank == to else None, dst=to, group=self.process_group)
        self._consolidated = {k: v for s in shards for k, v in s.items()} if self.rank == to else None

    def state_dict(self) -> dict:
        """The whole optimizer's state dict (PyTorch's layout), on the rank ``consolidate_state_dict`` named."""
        if self._consolidated is None:
            raise RuntimeError(f"[ZeroRedundancyOptimizer.state_dict] rank {self.rank} has no consolidated state: "
                               "call consolidate_state_dict(to=<this rank>) on every rank first")
        index = self._global_index()
        groups = [{**_hyperparameters(g), "params": [index[id(p)] for p in g["params"]]} for g in self.param_groups]
        return {"state": dict(sorted(self._consolidated.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads a whole optimizer's state dict (every rank passes the same): each rank keeps its parameters'
        state, and the groups' hyperparameters are set."""
        if len(state_dict["param_groups"]) != len(self.param_groups):
            raise ValueError(f"[ZeroRedundancyOptimizer.load_state_dict] {len(state_dict['param_groups'])} param "
                             f"groups for {len(self.param_groups)}")
        for glob, saved in zip(self.param_groups, state_dict["param_groups"]):
            glob.update(_hyperparameters(saved))
        index = self._global_index()
        to_local = {g: i for i, g in self._local_to_global().items()}
        state = {to_local[int(k)]: v for k, v in state_dict["state"].items() if int(k) in to_local}
        groups = [{**_hyperparameters(glob), "params": [to_local[index[id(p)]] for p in local["params"]]}
                  for glob, local in zip(self.param_groups, self.optim.param_groups)]
        self.optim.load_state_dict({"state": state, "param_groups": groups})

    def __repr__(self) -> str:
        return f"ZeroRedundancyOptimizer(rank={self.rank}, world_size={self.world_size}, {self.optim!r})"

