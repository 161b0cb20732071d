"""``RemovableHandle``: what registering a hook returns (mirrors ``torch.utils.hooks``).

Example:
    >>> import spx
    >>> layer = spx.nn.Linear(2, 2)
    >>> handle = layer.register_forward_hook(lambda module, args, output: output * 0)
    >>> float(layer(spx.ones(1, 2)).abs().sum())
    0.0
    >>> handle.remove()
    >>> with layer.register_forward_hook(lambda module, args, output: output * 0):
    ...     pass  # removed again when the block ends
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """A handle whose ``remove()`` deletes its hook from ``hooks_dict`` (and ``extra_dict``).

    Args:
        hooks_dict: the hooks by id; the handle's ``id`` is the key it removes. Held weakly,
            as torch does: a handle does not keep its module's hook tables alive.
        extra_dict: a dict or a list of dicts from which the same key is removed too (the
            flags torch keeps per hook: ``with_kwargs``, ``always_call``).

    ``with handle:`` removes the hook when the block ends.
    """

    id: int
    _ids = itertools.count()

    def __init__(self, hooks_dict: dict, *, extra_dict: dict | list[dict] | None = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        extras = [extra_dict] if isinstance(extra_dict, dict) else list(extra_dict or ())
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        """Unregister the hook; removing twice, or after the owner is gone, does nothing."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
