"""Activation checkpointing: ``checkpoint`` and ``checkpoint_sequential`` (torch.utils.checkpoint).

``checkpoint(block, x, use_reentrant=False)`` computes ``block(x)`` but keeps none of the
activations inside ``block`` for the backward pass: they are computed again when the gradient
is needed, trading compute for memory, as torch does. Here the operations the function records
become one operation run under ``jax.checkpoint`` (see :mod:`spx._tensor.region`), inside the
same compiled program as the rest of the step — eagerly and under ``spx.compile`` alike.

Values and gradients are exactly those of calling the function directly. Random operations
inside (dropout) draw the same numbers when recomputed (``preserve_rng_state``); a BatchNorm
inside updates its running statistics once (torch updates them a second time when it
recomputes). If the function computes a value eagerly (``.item()``, printing a tensor), the
operations before that point are computed at once and only the rest is checkpointed; a
warning says so.

Example:
    >>> import spx
    >>> from spx.utils.checkpoint import checkpoint
    >>> block = spx.nn.Sequential(spx.nn.Linear(4, 16), spx.nn.GELU(), spx.nn.Linear(16, 4))
    >>> x = spx.randn(8, 4, requires_grad=True)
    >>> checkpoint(block, x, use_reentrant=False).sum().backward()
    >>> block[0].weight.grad.shape
    spx.Size([16, 4])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax

from spx._tensor import graph, region
from spx._tensor.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]

_USE_REENTRANT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)


def _noop_context_fn() -> tuple:
    return None, None


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], Any] = _noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs: Any,
) -> Any:
    """``function(*args, **kwargs)`` without keeping its activations for backward (torch's).

    Args:
        function: what to run (a Module, or any function of tensors).
        use_reentrant: torch's two variants. Pass it: without it torch warns and uses True.
            Both give the same gradients here; as in torch, the reentrant variant takes no
            keyword arguments, and when none of ``args`` requires grad its output does not
            either (torch warns "None of the inputs have requires_grad=True").
        context_fn: torch's selective-checkpointing hook; only the default is supported.
        determinism_check, debug, early_stop: accepted (torch's debugging and scheduling
            options; recomputation here is deterministic by construction).
        kwargs: keyword arguments of ``function`` (``preserve_rng_state`` is taken out, as
            torch does; the recomputation always draws the same random numbers).

    Returns:
        What ``function`` returns: Tensors computed inside it are the checkpointed ones.
    """
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT, stacklevel=2)
        use_reentrant = True
    kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not _noop_context_fn or debug:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
    elif context_fn is not _noop_context_fn:
        raise NotImplementedError(
            "checkpoint(context_fn=...) (selective activation checkpointing) is not supported "
            "by spx; checkpoint smaller functions instead"
        )
    if not graph.STATE.grad_enabled:
        return function(*args, **kwargs)  # nothing will be differentiated: nothing to keep
    if use_reentrant and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        # torch's reentrant variant runs the function without grad then.
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None",
            stacklevel=2,
        )
        previous = graph.set_grad_enabled_flag(False)
        try:
            return function(*args)
        finally:
            graph.set_grad_enabled_flag(previous)
    with region.Recorder() as recorder:
        out = function(*args, **kwargs)
    if not recorder.complete:
        warnings.warn(
            "checkpoint: the function computed a value while it ran (.item(), printing, a "
            "numpy conversion); its activations are kept, not recomputed. Move that out of the "
            "checkpointed function to save the memory.",
            stacklevel=2,
        )
        return out
    leaves = jax.tree_util.tree_leaves(out, is_leaf=lambda x: isinstance(x, Tensor))
    made = {id(n) for n in recorder.nodes}
    # Outputs computed in the function that carry gradient, each storage once: the same tensor
    # returned twice, or a tensor and its alias, share one.
    outputs: dict[int, Any] = {}
    for t in leaves:
        if isinstance(t, Tensor):
            s = t._cur()
            if id(s.node) in made and s.node.values is None and s.node.requires_grad:
                outputs.setdefault(id(s), s)
    if not outputs:
        return out
    storages = list(outputs.values())
    node = region.collapse([(s.node, s.idx) for s in storages], recorder.nodes)
    if node is not None:
        # The returned objects now hold the checkpointed values: identity, views and
        # retain_grad() registrations stay as the function left them.
        for i, s in enumerate(storages):
            s.node, s.idx = node, i
    return out


def checkpoint_sequential(
    functions: Any,
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``functions`` (a Sequential or a list of modules) in ``segments`` chunks, each but
    the last checkpointed (mirrors torch's ``checkpoint_sequential``)."""
    if use_reentrant is None:
        warnings.warn(_USE_REENTRANT.replace("checkpoint:", "checkpoint_sequential:"), stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from spx.nn.modules.container import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)
    segments = int(segments)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be >= 1, got {segments}")
    size = len(functions) // segments

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(
            run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve
        )
    return run(end + 1, len(functions) - 1)(input)
