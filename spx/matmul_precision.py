"""``spx.set_float32_matmul_precision``: torch's float32 matmul precision, on JAX's setting.

torch computes float32 matrix products in full float32 unless told otherwise
(``torch.get_float32_matmul_precision() == "highest"``; TF32 is off for matmuls by default).
JAX's default on NVIDIA GPUs is faster and less exact: float32 dots may run as TF32 (about
3e-4 relative error on a 512 x 512 product, measured on an H100, against torch's 5e-7). A
ported script would train to other numbers than it did under torch, silently. So ``import spx``
sets JAX's ``jax_default_matmul_precision`` to ``"float32"`` — torch's ``"highest"`` — unless
the user already chose a value (``JAX_DEFAULT_MATMUL_PRECISION`` or ``jax.config.update``).

JAX's setting is process-wide, as torch's is, and also applies to JAX code the process runs
outside spx. On CPU every precision computes in float32; the setting changes nothing there.

=========================  ==========================  =====================================
torch                      JAX (``jax_default_...``)   float32 matmuls run as
=========================  ==========================  =====================================
``"highest"`` (default)    ``"float32"``               float32
``"high"``                 ``"tensorfloat32"``         TF32 (or 3 x bfloat16), faster
``"medium"``               ``"bfloat16"``              bfloat16, fastest
=========================  ==========================  =====================================
"""

from __future__ import annotations

import jax

__all__ = ["get_float32_matmul_precision", "set_float32_matmul_precision"]

_TO_JAX = {"highest": "float32", "high": "tensorfloat32", "medium": "bfloat16"}
# JAX also accepts its lax.Precision names; read them back in torch's words.
_FROM_JAX = {
    "float32": "highest",
    "highest": "highest",
    "tensorfloat32": "high",
    "high": "high",
    "bfloat16": "medium",
    "default": "medium",
    "fastest": "medium",
}


def set_float32_matmul_precision(precision: str) -> None:
    """Set how float32 matrix products are computed, in torch's words (process-wide).

    Args:
        precision: ``"highest"`` (float32, torch's and spx's default), ``"high"`` (TF32) or
            ``"medium"`` (bfloat16).

    Raises:
        ValueError: another value (torch warns and ignores it; a typo should not go unseen).

    Example:
        >>> import spx
        >>> spx.set_float32_matmul_precision("high")
        >>> spx.get_float32_matmul_precision()
        'high'
        >>> spx.set_float32_matmul_precision("highest")
    """
    if precision not in _TO_JAX:
        raise ValueError(
            f"set_float32_matmul_precision({precision!r}): expected one of 'highest', 'high' "
            "or 'medium' (torch's names)"
        )
    jax.config.update("jax_default_matmul_precision", _TO_JAX[precision])


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision in torch's words (``"highest"`` by default).

    Example:
        >>> import spx
        >>> spx.get_float32_matmul_precision()
        'highest'
    """
    value = jax.config.jax_default_matmul_precision
    if value is None:  # JAX's own default: fastest on GPU, float32 on CPU
        return "medium" if jax.default_backend() == "gpu" else "highest"
    return _FROM_JAX.get(str(value).lower(), "highest")


def use_torchs_default() -> None:
    """Called by ``import spx``: torch's ``"highest"`` unless the user chose a JAX precision."""
    if jax.config.jax_default_matmul_precision is None:
        jax.config.update("jax_default_matmul_precision", _TO_JAX["highest"])
