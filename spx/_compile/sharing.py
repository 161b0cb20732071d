"""Arrays shared between state dicts travel through a compiled program once.

An optimizer whose parameters always step together keeps one ``step`` array for the whole
group: every parameter's state dict (torch's layout, ``opt.state[p]["step"]``) holds the same
object. Passed to ``jax.jit`` as it is, that array would be an input once per parameter —
donated several times, which XLA rejects — and the program would return one copy per parameter,
each a separate kernel and output buffer. Instead a program takes and returns every shared entry
once: :func:`find_shared` records which dict entries repeat an earlier one, :func:`strip` drops
the repeats before a call, and :func:`restore` puts them back (inside the trace for the inputs,
after the call for the outputs).

A pattern is a tuple of ``(position, key, source position, source key)``: ``values[position]``
is a dict whose entry ``key`` is the same array as ``values[source position][source key]``.
"""

from __future__ import annotations

from typing import Any

import jax

Pattern = tuple[tuple[int, str, int, str], ...]


def find_shared(values: list[Any]) -> Pattern:
    """The dict entries of ``values`` that are the same array as an earlier dict entry.

    Only arrays and tracers count (Python numbers may share identity by interning).

    Example:
        >>> import jax.numpy as jnp
        >>> step = jnp.zeros(())
        >>> find_shared([{"step": step, "m": jnp.ones(2)}, {"step": step, "m": jnp.ones(2)}])
        ((1, 'step', 0, 'step'),)
    """
    first: dict[int, tuple[int, str]] = {}
    shared = []
    for pos, value in enumerate(values):
        if type(value) is not dict:
            continue
        for key, x in value.items():
            if not isinstance(x, jax.Array | jax.core.Tracer):
                continue
            source = first.setdefault(id(x), (pos, key))
            if source != (pos, key):
                shared.append((pos, key, *source))
    return tuple(shared)


def slot_aliases(values: list[Any]) -> tuple[tuple[int, int], ...]:
    """``(slot, earlier slot)`` for each slot holding an array an earlier slot holds too (two
    parameters given one array, e.g. by ``p.data = q.data``).

    Example:
        >>> import jax.numpy as jnp
        >>> w = jnp.ones(2)
        >>> slot_aliases([w, jnp.zeros(2), w])
        ((2, 0),)
    """
    first: dict[int, int] = {}
    pairs = []
    for i, value in enumerate(values):
        for x in arrays_of(value):
            j = first.setdefault(id(x), i)
            if j != i:
                pairs.append((i, j))
    return tuple(pairs)


def arrays_of(value: Any) -> list[Any]:
    """The arrays a state slot holds directly: itself, or a dict's entries."""
    if type(value) is dict:
        return [x for x in value.values() if isinstance(x, jax.Array | jax.core.Tracer)]
    return [value] if isinstance(value, jax.Array | jax.core.Tracer) else []


def holds(values: list[Any], pattern: Pattern) -> bool:
    """Whether every entry the pattern names still is its source's array."""
    try:
        return all(values[p][k] is values[s][sk] for p, k, s, sk in pattern)
    except (KeyError, TypeError):
        return False


def strip(values: list[Any], pattern: Pattern) -> list[Any]:
    """A copy of ``values`` without the repeated entries (their dicts are copied, not changed)."""
    if not pattern:
        return values
    out = list(values)
    for pos, key, _, _ in pattern:
        if out[pos] is values[pos]:
            out[pos] = dict(values[pos])
        del out[pos][key]
    return out


def restore(values: list[Any], pattern: Pattern) -> None:
    """Put the repeated entries back, in place (``values``' dicts must be the caller's own)."""
    for pos, key, source, source_key in pattern:
        values[pos][key] = values[source][source_key]
