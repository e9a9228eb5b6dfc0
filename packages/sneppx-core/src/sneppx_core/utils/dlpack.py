"""``torch.utils.dlpack``: ``from_dlpack`` (a tensor sharing the memory of any DLPack producer, or of a
capsule) and ``to_dlpack`` (a capsule of a SneppX tensor, for consumers that take capsules)."""

from .._C_face import Tensor, from_dlpack


def to_dlpack(tensor: Tensor):
    """A DLPack capsule of ``tensor`` (``tensor.__dlpack__()``): the consumer shares its memory."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"[to_dlpack] expected a Tensor, got {type(tensor).__name__}")
    return tensor.__dlpack__()


__all__ = ["from_dlpack", "to_dlpack"]
