"""A writable view of a state dict that leaves the caller's mapping untouched.

``Module.load_state_dict`` lets every module adapt the incoming state dict before anything is
checked — torch's ``_load_from_state_dict`` hooks do this to read old checkpoints (BatchNorm
fills in a ``num_batches_tracked`` that checkpoints from before it existed lack). The state dict
may be the caller's own dict, or a lazy mapping over a checkpoint file whose tensors must not
all be read; so adaptations go into this overlay instead of a copy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any


class StateDictOverlay(MutableMapping[str, Any]):
    """``base`` as seen through additions and deletions kept on the side.

    Args:
        base: the caller's state dict (any mapping; never modified, read only on access).

    Example:
        >>> base = {"w": 1}
        >>> view = StateDictOverlay(base)
        >>> view["n"] = 0
        >>> del view["w"]
        >>> dict(view), base
        ({'n': 0}, {'w': 1})
    """

    def __init__(self, base: Mapping[str, Any]) -> None:
        self._base = base
        self._added: dict[str, Any] = {}
        self._removed: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key in self._added:
            return self._added[key]
        if key in self._removed:
            raise KeyError(key)
        return self._base[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._added[key] = value
        self._removed.discard(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._added.pop(key, None)
        self._removed.add(key)

    def __contains__(self, key: object) -> bool:
        if key in self._added:
            return True
        return key not in self._removed and key in self._base

    def __iter__(self) -> Iterator[str]:
        for key in self._base:
            if key not in self._removed and key not in self._added:
                yield key
        yield from self._added

    def __len__(self) -> int:
        return sum(1 for _ in self)
