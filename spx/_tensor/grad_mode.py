"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

As in torch, these switch whether operations record autograd history, per thread; each works
as a context manager and as a function decorator. Under ``no_grad`` results of operations on
tensors that require grad do not require grad, and in-place updates of leaves (optimizer steps,
``nn.init``) are allowed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from spx._tensor import graph


class _GradMode:
    """Base: a context manager that sets grad mode, usable as a decorator."""

    mode: bool = True
    _args: tuple = ()

    def __enter__(self) -> None:
        self._prev = graph.set_grad_enabled_flag(self.mode)

    def __exit__(self, *exc: Any) -> None:
        graph.set_grad_enabled_flag(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        """Use as a decorator: each call of ``fn`` runs in a fresh instance's mode."""
        cls, args = type(self), self._args

        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> Any:
            with cls(*args):
                return fn(*a, **k)

        return wrapper


class no_grad(_GradMode):
    """Operations inside record no autograd history (mirrors ``torch.no_grad``).

    Example:
        >>> import spx
        >>> w = spx.ones(3, requires_grad=True)
        >>> with spx.no_grad():
        ...     y = w * 2
        >>> y.requires_grad
        False
    """

    mode = False


class enable_grad(_GradMode):
    """Re-enable recording inside ``no_grad`` (mirrors ``torch.enable_grad``)."""

    mode = True


class set_grad_enabled(_GradMode):
    """Set grad mode now, or for a ``with`` block (mirrors ``torch.set_grad_enabled``).

    Example:
        >>> import spx
        >>> with spx.set_grad_enabled(False):
        ...     spx.is_grad_enabled()
        False
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(mode) expects a bool, got {mode!r}")
        self.mode = mode
        self._args = (mode,)
        # torch sets the mode at construction: set_grad_enabled(False) works as a plain call.
        self._prev = graph.set_grad_enabled_flag(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        graph.set_grad_enabled_flag(self._prev)

    def __call__(self, fn: Callable) -> Callable:
        graph.set_grad_enabled_flag(self._prev)  # as a decorator it must not stay switched
        return super().__call__(fn)


class inference_mode(_GradMode):
    """Like ``no_grad`` (mirrors ``torch.inference_mode``; ``mode=False`` does nothing).

    Example:
        >>> import spx
        >>> with spx.inference_mode():
        ...     spx.is_inference_mode_enabled()
        True
    """

    def __init__(self, mode: bool = True) -> None:
        self.mode = not mode
        self.inference = mode
        self._args = (mode,)

    def __enter__(self) -> None:
        self._prev = graph.set_grad_enabled_flag(self.mode and graph.grad_enabled())
        self._prev_inference = graph.STATE.inference
        graph.STATE.inference = self.inference

    def __exit__(self, *exc: Any) -> None:
        graph.set_grad_enabled_flag(self._prev)
        graph.STATE.inference = self._prev_inference


def is_grad_enabled() -> bool:
    """Whether grad mode is on in this thread (mirrors ``torch.is_grad_enabled``)."""
    return graph.grad_enabled()


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode`` block is active in this thread."""
    return graph.STATE.inference
