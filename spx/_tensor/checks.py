"""Checks of values that are not computed yet: torch's errors, raised once the values exist.

torch checks some preconditions on values as an op runs: indices in range, class targets below
the number of classes, probabilities in ``[0, 1]``. spx records operations and computes them
later, in one program per step (:mod:`spx._tensor.graph`). A value that is itself computed
(``targets = batch[:, 1:]``, ``labels.argmax(1)``, ``probs = logits.sigmoid()``) has no data
when the op that needs checking is recorded, and computing it there would split the step's
program in two and wait for the first half. Unchecked, an out-of-range index reads NaN, is
clamped to the last row or is dropped: a silently wrong result.

So such a check is kept, with a reference to the value (or to a small reduction of it), and runs
when a program has computed that value: right after the program if its results are ready, else
after a later one, and at the latest when any value is read on the host (``item()``,
``tolist()``, ``numpy()``), as torch reports a CUDA device-side assert at the next
synchronization. The error is the one torch raises, with a note naming the line where the
operation was recorded. Values known when the op is recorded (numpy data, a DataLoader batch,
``spx.tensor(...)``) are checked at once, as before. Inside a JAX transformation
(``spx.compile``) a value is a tracer and nothing is checked: XLA's result stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from spx._tensor import graph


class _Deferred:
    __slots__ = ("check", "storage", "where")

    def __init__(self, storage: graph.Storage, check: Callable[[np.ndarray], None], where: Any):
        self.storage = storage
        self.check = check
        self.where = where


def when_known(
    x: Any,
    check: Callable[[np.ndarray], None],
    reduce: Callable[[jax.Array], jax.Array] | None = None,
) -> None:
    """Run ``check`` on ``x``'s values now if they are known, else once they are computed.

    Args:
        x: a Tensor, a jax array or numpy data.
        check: raises torch's error for bad values (given a numpy array of them).
        reduce: for a pending ``x``, a module-level function of its array whose (small) result
            ``check`` can judge as well (the min and max of probabilities), so that only that
            result waits for the check and comes to the host; None: ``x`` itself.

    Example:
        >>> import numpy as np
        >>> def in_range(v):
        ...     if (v >= 3).any():
        ...         raise IndexError("index out of range")
        >>> when_known(np.array([0, 2]), in_range)
    """
    if isinstance(x, np.ndarray):
        check(x)
        return
    if isinstance(x, jax.Array):
        if not isinstance(x, jax.core.Tracer):
            check(np.asarray(x))
        return
    if isinstance(x, list | tuple | int | np.generic):
        check(np.asarray(x))
        return
    if not hasattr(x, "_ref"):
        return
    storage = x._cur()
    values = storage.node.values
    if values is not None:
        value = values[storage.idx]
        if not isinstance(value, jax.core.Tracer):
            check(np.asarray(value))
        return
    if graph.depends_on_tracer(storage.node):
        return
    if reduce is not None:
        from spx._tensor.dispatch import apply

        previous = graph.set_grad_enabled_flag(False)
        try:
            storage = apply(reduce, (), (x,))._cur()
        finally:
            graph.set_grad_enabled_flag(previous)
    else:
        # A storage of our own: an in-place write to ``x`` before the value is computed
        # replaces x's storage, not this one, which keeps the value the op read.
        storage = graph.Storage(storage.node, storage.idx)
        graph.note_pending(storage)
    from spx._user_code import from_stack

    graph.STATE.checks.append(_Deferred(storage, check, from_stack()))


def run_ready(block: bool = False) -> None:
    """Run the deferred checks whose values are computed (and ready, unless ``block``).

    Called after every program (:func:`spx._tensor.program.run`) and, with ``block``, before a
    value is handed to the host. Raises the first failing check's error; the other checks of
    the values computed so far are dropped with it (their step failed).
    """
    state = graph.STATE
    if not state.checks:
        return
    keep: list[_Deferred] = []
    ready: list[tuple[_Deferred, Any]] = []
    for deferred in state.checks:
        storage = deferred.storage
        values = storage.node.values
        if values is None:
            keep.append(deferred)
            continue
        value = values[storage.idx]
        if isinstance(value, jax.core.Tracer):
            continue  # computed inside a transformation: never checked
        if block or value.is_ready():
            ready.append((deferred, value))
        else:
            keep.append(deferred)
    state.checks = keep
    for deferred, value in ready:
        try:
            deferred.check(np.asarray(value))
        except Exception as e:
            where = "" if deferred.where is None else f", recorded at:\n{deferred.where}"
            e.add_note(
                "(spx checked these values once a program had computed them: the operation "
                f"that needs them was recorded earlier{where})"
            )
            raise
