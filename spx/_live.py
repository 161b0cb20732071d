"""Per-thread registries of live objects (the Modules and Optimizers a thread created).

``spx.compile`` checks, after tracing a step, that no Module or Optimizer it did not bind was
changed or read as a constant (:mod:`spx._compile.unbound`). It must look only at the objects of
its own thread: with thread ranks (``spx-run --threads``) another rank's trace legitimately
holds placeholders in that rank's model at the same time. (Other threads' objects are still
checked for being read as constants: a model built on the main thread and used by a step
compiled on a worker thread.)
"""

from __future__ import annotations

import threading
import weakref
from typing import Any


class Registry:
    """Weak references to the objects each thread registered.

    Example:
        >>> class Thing: ...
        >>> things = Registry()
        >>> a = Thing()
        >>> things.add(a)
        >>> things.mine() == [a]
        True
    """

    def __init__(self) -> None:
        self._by_thread: dict[int, weakref.WeakSet[Any]] = {}

    def add(self, obj: Any) -> None:
        """Register ``obj`` as created by the calling thread (kept only while it is alive)."""
        ident = threading.get_ident()
        live = self._by_thread.get(ident)
        if live is None:
            live = self._by_thread.setdefault(ident, weakref.WeakSet())
        live.add(obj)

    def mine(self) -> list[Any]:
        """The live objects the calling thread registered (a snapshot)."""
        live = self._by_thread.get(threading.get_ident())
        return [] if live is None else list(live)

    def others(self) -> list[Any]:
        """The live objects other threads registered (a snapshot)."""
        me = threading.get_ident()
        return [obj for t, live in list(self._by_thread.items()) if t != me for obj in list(live)]
