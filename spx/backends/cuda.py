"""``spx.backends.cuda``: ``matmul.allow_tf32`` as in torch, on spx's matmul precision.

In torch, ``torch.backends.cuda.matmul.allow_tf32 = True`` is the same switch as
``torch.set_float32_matmul_precision("high")`` (and ``False`` as ``"highest"``, the default).
Here it sets :func:`spx.set_float32_matmul_precision`, which sets JAX's
``jax_default_matmul_precision`` (process-wide).

Example:
    >>> import spx
    >>> spx.backends.cuda.matmul.allow_tf32
    False
    >>> spx.backends.cuda.matmul.allow_tf32 = True
    >>> spx.get_float32_matmul_precision()
    'high'
    >>> spx.backends.cuda.matmul.allow_tf32 = False
"""

from __future__ import annotations

from spx import matmul_precision

__all__ = ["is_built", "matmul"]


class _Matmul:
    """``torch.backends.cuda.matmul``: float32 matmul switches."""

    @property
    def allow_tf32(self) -> bool:
        return matmul_precision.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, allow: bool) -> None:
        if not isinstance(allow, bool):
            raise TypeError(f"matmul.allow_tf32 must be a bool, got {allow!r}")
        matmul_precision.set_float32_matmul_precision("high" if allow else "highest")

    def __setattr__(self, name: str, value: object) -> None:
        if name != "allow_tf32":
            raise AttributeError(
                f"spx.backends.cuda.matmul has no switch {name!r}; spx supports allow_tf32"
            )
        super().__setattr__(name, value)


matmul = _Matmul()


def is_built() -> bool:
    """Whether this jaxlib can use NVIDIA GPUs (a GPU backend is installed and found)."""
    from spx import cuda

    return cuda.is_available()
