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
``tolist()``, ``numpy()``, printing, ``if tensor:``), as torch reports a CUDA device-side assert
at the next synchronization. The error is the one torch raises, with a note naming the line
where the operation was recorded. Values known when the op is recorded (numpy data, a DataLoader
batch, ``spx.tensor(...)``) are checked at once, as before. Inside a JAX transformation
(``spx.compile``) a value is a tracer and nothing is checked: XLA's result stands.

A deferred check costs ~2 us when recorded; an index check brings the index to the host once
computed (a reduction would lose the position torch's messages name).
"""

from __future__ import annotations

import linecache
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.core import trace_state_clean

from spx import _user_code
from spx._tensor import graph


class _Deferred:
    """One check waiting for its value: first the storage that will hold it, then (computed
    but not ready yet) the array alone, so that the recorded graph behind it can go."""

    __slots__ = ("check", "storage", "value", "where")

    def __init__(self, storage: graph.Storage, check: Callable[[np.ndarray], None], where: Any):
        self.storage: graph.Storage | None = storage
        self.value: Any = None
        self.check = check
        self.where = where  # (filename, lineno, function) of the user's line, or None

    def computed(self) -> Any:
        """The value if a program has computed it, else None."""
        if self.storage is not None:
            values = self.storage.node.values
            if values is None:
                return None
            self.value, self.storage = values[self.storage.idx], None
        return self.value


def _user_line() -> tuple[str, int, str] | None:
    """Where the user's code recorded the op: kept raw, formatted only if the check fails."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if not _user_code.is_library(code.co_filename):
            return code.co_filename, frame.f_lineno, code.co_name
        frame = frame.f_back
    return None


def _may_be_traced(storage: graph.Storage) -> bool:
    # Walking the pending graph is only needed while something traces (spx.compile, spx.func,
    # a JAX transformation): outside one, a value that leaked from an ended trace fails to
    # compute, and settle() drops its check.
    state = graph.STATE
    if not (state.binding or state.func_modes or not trace_state_clean()):
        return False
    return graph.depends_on_tracer(storage.node)


def known_value(x: Any) -> np.ndarray | None:
    """``x``'s values on the host if they are known without computing anything, else None.

    For the checks torch makes on values (class indices in range) as an op runs: numpy data,
    a computed ``jax.Array``, or a Tensor whose value is already computed (a batch from a
    DataLoader, ``spx.tensor(...)``). A Tensor still pending, a tracer or any other object
    gives None: checking it would cost a computation (or is impossible under a
    transformation); :func:`when_known` checks a pending Tensor once it is computed.

    Example:
        >>> known_value(np.array([1, 2]))
        array([1, 2])
    """
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "_ref"):  # an spx.Tensor: look at its storage without computing it
        storage = x._cur()
        values = storage.node.values
        if values is None:
            return None
        x = values[storage.idx]
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        return np.asarray(x)
    return None


def value_range(x: jax.Array) -> jax.Array:
    """``[min, max]`` of ``x`` (NaN if it holds one; ``[0, 0]`` if it is empty): the
    ``reduce`` of :func:`when_known` for checks of a range (probabilities, variances)."""
    if not x.size:
        return jnp.zeros(2, x.dtype)
    return jnp.stack([jnp.min(x), jnp.max(x)])


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
    if isinstance(x, list | tuple | int | np.generic):
        check(np.asarray(x))
        return
    host = known_value(x)
    if host is not None:
        check(host)
        return
    if not hasattr(x, "_ref"):
        return  # a tracer
    storage = x._cur()
    if storage.node.values is not None or _may_be_traced(storage):
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
    graph.STATE.checks.append(_Deferred(storage, check, _user_line()))


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
        value = deferred.computed()
        if value is None:
            keep.append(deferred)
        elif isinstance(value, jax.core.Tracer):
            continue  # computed inside a transformation: never checked
        elif block or value.is_ready():
            ready.append((deferred, value))
        else:
            keep.append(deferred)
    state.checks = keep
    for deferred, value in ready:
        try:
            deferred.check(np.asarray(value))
        except Exception as e:
            e.add_note(
                "(spx checked these values once a program had computed them: the operation "
                f"that needs them was recorded earlier{_format(deferred.where)})"
            )
            raise


def settle() -> None:
    """Compute, one by one, the checked values a combined program left out.

    :func:`spx._tensor.program.run` falls back to computing only the values it was asked for
    when the others cannot join one program (values on several devices, a value recorded in
    a trace that has ended). A checked value is never asked for by anyone else: compute it on
    its own here, and drop its check if it cannot be computed at all.
    """
    from spx._tensor.program import run

    state = graph.STATE
    left_out = [d for d in state.checks if d.computed() is None]
    if not left_out:
        return
    # Set the list aside while computing: a failure here is the value's, not a check's.
    kept, state.checks = state.checks, []
    try:
        for deferred in left_out:
            try:
                run([deferred.storage], with_pending=False)
            except Exception:
                kept = [d for d in kept if d is not deferred]
    finally:
        state.checks = kept + state.checks
    run_ready()


def _format(where: tuple[str, int, str] | None) -> str:
    if where is None:
        return ""
    filename, lineno, function = where
    line = linecache.getline(filename, lineno).strip()
    text = f'File "{filename}", line {lineno}, in {function}'
    return f", recorded at:\n{text}\n    {line}" if line else f", recorded at:\n{text}"
