"""``torch.utils.hooks``: :class:`RemovableHandle`, the handle PyTorch's hook registrations return,
over a dict of hooks (libraries make their own with it)."""

import itertools

_ids = itertools.count()


class RemovableHandle:
    """A handle on the entry ``id`` of ``hooks_dict`` (and of each of ``extra_dict``): ``remove()``
    deletes it; usable as a context manager, which removes it on exit."""

    def __init__(self, hooks_dict: dict, *, extra_dict=None):
        self.hooks_dict_ref, self.id = hooks_dict, next(_ids)
        extra = extra_dict if isinstance(extra_dict, (list, tuple)) else [] if extra_dict is None else [extra_dict]
        self.extra_dict_ref = tuple(extra)

    def remove(self) -> None:
        """Deletes the hook (a second call does nothing)."""
        for d in (self.hooks_dict_ref, *self.extra_dict_ref):
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


__all__ = ["RemovableHandle"]
