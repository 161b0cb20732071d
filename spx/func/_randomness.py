"""torch.func's ``randomness=`` flag: what a random draw inside ``vmap`` may do.

torch refuses random operations under ``vmap`` by default (``"error"``), because it cannot know
whether each sample should draw its own numbers (``"different"``) or all share one draw
(``"same"``). spx's draws advance the rank's generator; under a mapping transform that key is
not batched, so a draw is naturally ``"same"``. ``"error"`` is enforced by watching the
generator: if the mapped function advanced it, the key is put back and torch's error raised.
``"different"`` is handled by :func:`spx.func.vmap` itself (it maps over per-sample keys).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from spx import _context

RANDOMNESS = ("error", "different", "same")

MSG_RANDOM = (
    "vmap: called random operation while in randomness error mode. Please either use the "
    "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
    "of vmap"
)


def check_randomness(randomness: str) -> None:
    """Raise torch's error for a ``randomness`` value that is not one of :data:`RANDOMNESS`."""
    if randomness not in RANDOMNESS:
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. "
            f"Got {randomness}"
        )


@contextlib.contextmanager
def randomness_guard(randomness: str) -> Iterator[None]:
    """Refuse random draws in the block when ``randomness == "error"``.

    Args:
        randomness: the transform's flag; only ``"error"`` is enforced here (``jacfwd``
            reports as ``vmap``, as torch's does: it maps over the tangents).

    Raises:
        RuntimeError: torch's message, after restoring the generator, if the block drew.

    Example:
        >>> with randomness_guard("same"):
        ...     pass
    """
    ctx = _context.current()
    before = ctx.key
    try:
        yield
    finally:
        drew = ctx.key is not before
        if drew and randomness == "error":
            ctx.key = before  # the draw never happened, as far as later code can tell
    if drew and randomness == "error":
        raise RuntimeError(MSG_RANDOM)
