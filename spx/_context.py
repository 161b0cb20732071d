"""Per-thread runtime context: the rank a thread plays, its device, and its RNG key.

spx can run several pipeline ranks as threads of one process (``spx.distributed.spawn``), so
nothing that differs between ranks may live in a module-level global: each thread sees its own
:class:`RankContext`. A thread that never joined a process group gets a fresh default context.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import jax

# torch's default CPU generator seed, so an unseeded program is still deterministic.
DEFAULT_SEED = 67280421310721


@dataclass
class RankContext:
    """Everything that is per rank.

    Attributes:
        seed: the seed the RNG key was (or will be) derived from.
        key: the current ``jax.random`` key, created lazily (creating it starts the backend).
        device: the device ``spx.device("cpu")`` resolves to for this rank, or None for the
            process default.
        group: the default process group this thread belongs to (set by
            ``spx.distributed.init_process_group``), or None.
        extras: per-rank storage for other subsystems, keyed by a name they own.
    """

    seed: int = DEFAULT_SEED
    key: Any = None
    device: jax.Device | None = None
    group: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


class _ThreadContexts(threading.local):
    def __init__(self) -> None:
        self.ctx = RankContext()


_LOCAL = _ThreadContexts()


def current() -> RankContext:
    """The calling thread's context."""
    return _LOCAL.ctx


def set_current(ctx: RankContext) -> RankContext:
    """Install ``ctx`` as the calling thread's context and return the previous one."""
    previous = _LOCAL.ctx
    _LOCAL.ctx = ctx
    return previous
