"""Ready-made parametrizations: ``weight_norm``, ``spectral_norm`` and ``orthogonal`` (mirrors
``torch.nn.utils.parametrizations``).

Each registers a parametrization module with
:func:`spx.nn.utils.parametrize.register_parametrization`, so the state dict keys are torch's:
``parametrizations.weight.original0``/``original1`` (weight norm's magnitude and direction),
``parametrizations.weight.original`` and the power iteration's
``parametrizations.weight.0._u``/``_v`` buffers (spectral norm), ``parametrizations.weight.0.base``
(orthogonal). The random starts (spectral norm's ``u`` and ``v``, orthogonal's completion of a
non-square matrix) come from spx's generator, not torch's:
load a torch state dict to start from torch's values.
"""

from __future__ import annotations

from typing import Any, TypeVar

from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module
from spx.nn.modules.conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from spx.nn.utils import parametrize
from spx.nn.utils._orthogonal import orthogonal as orthogonal
from spx.nn.utils.weight_norm import norm_except_dim
from spx.ops.linalg import mv, vdot

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

M = TypeVar("M", bound=Module)


def _default_dim(module: Module, dim: int | None) -> int:
    """spectral_norm's output dim: 1 for transposed convolutions (their weight is
    ``(in, out, ...)``), 0 otherwise, unless given."""
    if dim is not None:
        return dim
    return 1 if isinstance(module, ConvTranspose1d | ConvTranspose2d | ConvTranspose3d) else 0


def _tensor_named(module: Module, name: str) -> Tensor:
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    return weight


# -- weight norm -------------------------------------------------------------------------------
class _WeightNorm(Module):
    """``g * v / ||v||``, the norm over every dim but ``dim`` (``-1``: over the whole tensor)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight

    def _adapt_host_state_dict(self, state_dict: Any, prefix: str, tensor_name: str) -> None:
        # torch's compatibility hook: a checkpoint of the old API (weight_g, weight_v) loads
        # into the new one's originals.
        g_key, v_key = f"{prefix}{tensor_name}_g", f"{prefix}{tensor_name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{tensor_name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{tensor_name}.original1"] = state_dict.pop(v_key)


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Reparametrize ``module.<name>`` as a magnitude times a direction (mirrors
    ``torch.nn.utils.parametrizations.weight_norm``).

    ``module.<name>`` reads as ``original0 * original1 / ||original1||`` with
    ``original0`` (``g``, the norms) and ``original1`` (``v``) under
    ``module.parametrizations.<name>``. A state dict of the old API
    (:func:`spx.nn.utils.weight_norm`: ``weight_g``, ``weight_v``) loads too.

    Args:
        module: the module holding the tensor.
        name: the tensor's name.
        dim: the dim the norm is *not* taken over (``0``: one norm per output row); ``None``
            takes one norm of the whole tensor.

    Returns:
        ``module``, parametrized.

    Example:
        >>> from spx import nn
        >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(20, 40))
        >>> m.parametrizations.weight.original0.shape, m.parametrizations.weight.original1.shape
        (spx.Size([40, 1]), spx.Size([40, 20]))
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# -- spectral norm -----------------------------------------------------------------------------
class _SpectralNorm(Module):
    """``W / sigma(W)``, ``sigma`` estimated by power iteration on the buffers ``_u``, ``_v``.

    In training mode every evaluation first runs ``n_power_iterations`` steps that update
    ``_u`` and ``_v`` in place; in eval mode they are used as they are. A 1-D tensor is simply
    normalized (no buffers).
    """

    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                weight_mat = self._reshape_weight_to_matrix(weight)
                h, w = weight_mat.shape
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
                # Start from reasonable singular vectors, as torch does.
                self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # In place (copy_), as torch's out=: aliases of the buffers (a state dict taken
        # earlier) see the new values, and a compiled step writes them back.
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(weight_mat.H, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)  # exact: no approximation needed
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # Copies: a later forward updates the buffers in place, and this forward's sigma must
        # keep the values it was computed with (two forwards, one backward: D(real) + D(fake)).
        u, v = self._u.clone(), self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value  # any tensor is a valid original: forward rescales it


def spectral_norm(
    module: M,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> M:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration (mirrors
    ``torch.nn.utils.parametrizations.spectral_norm``).

    ``module.<name>`` reads as ``W / sigma`` with ``W`` at
    ``module.parametrizations.<name>.original`` and ``sigma = u^T W v`` (``W`` flattened to a
    matrix with ``dim`` first). Each read in training mode runs ``n_power_iterations`` steps
    of the power method, updating the buffers ``parametrizations.<name>.0._u`` and ``_v`` in
    place; in eval mode they stay. The GAN-style alternative is the old API,
    :func:`spx.nn.utils.spectral_norm` (keys ``weight_orig``, ``weight_u``, ``weight_v``).

    Args:
        module: the module holding the tensor.
        name: the tensor's name.
        n_power_iterations: power-method steps per read in training mode.
        eps: lower bound on norms, avoiding division by zero.
        dim: the output dim; default ``0``, or ``1`` for ``ConvTranspose{1,2,3}d``.

    Returns:
        ``module``, parametrized.

    Raises:
        ValueError: no tensor ``name``, or ``n_power_iterations <= 0``.
        IndexError: ``dim`` out of range.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> m = nn.utils.parametrizations.spectral_norm(nn.Linear(20, 40))
        >>> m.parametrizations.weight[0]._u.shape
        spx.Size([40])
        >>> abs(spx.linalg.matrix_norm(m.weight, 2).item() - 1.0) < 0.1
        True
    """
    weight = _tensor_named(module, name)
    parametrization = _SpectralNorm(weight, n_power_iterations, _default_dim(module, dim), eps)
    parametrize.register_parametrization(module, name, parametrization)
    return module
