"""``spectral_norm`` / ``remove_spectral_norm``: the old spectral-norm API (mirrors
``torch.nn.utils.spectral_norm``), as GAN discriminators use it.

``weight`` is replaced by the parameter ``weight_orig`` and the buffers ``weight_u`` and
``weight_v`` (torch's state dict keys). Before every forward in training mode a forward
pre-hook runs ``n_power_iterations`` steps of the power method, updating ``weight_u`` and
``weight_v`` in place; in eval mode they stay. ``module.weight`` is
``weight_orig / (u^T W v)``, computed when read, like :func:`spx.nn.utils.weight_norm`'s
weight (the ``_computed`` attribute of the Module), so gradients reach ``weight_orig`` eagerly
and inside ``spx.compile``. torch stores it with the pre-hook instead: read between an
optimizer step and the next forward, torch's is the value before the step and spx's the value
after it. torch also converts checkpoints written before its version 1 of this format (with a
``weight`` entry and no ``weight_v``); spx loads version-1 state dicts only.
"""

from __future__ import annotations

from typing import Any, TypeVar

from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.nn import _structure
from spx.nn import functional as F
from spx.nn.module import Module
from spx.nn.parameter import Parameter, UninitializedParameter
from spx.nn.utils.parametrizations import _default_dim
from spx.ops.creation import randn
from spx.ops.linalg import dot, mv

M = TypeVar("M", bound=Module)


class SpectralNorm:
    """The forward pre-hook of :func:`spectral_norm` on one tensor, and the computation of
    that tensor.

    Args:
        name: the tensor's name.
        n_power_iterations: power-method steps per training forward.
        dim: the output dim (flattened first).
        eps: lower bound on norms.

    Raises:
        ValueError: ``n_power_iterations <= 0``.
    """

    _version: int = 1  # torch's state dict format: W_orig, u and v saved, W computed

    def __init__(
        self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as a matrix: ``dim`` first, the other dims flattened."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def power_iteration(self, module: Module) -> None:
        """``n_power_iterations`` steps of the power method on ``<name>_u``/``<name>_v``, in
        place (a compiled step writes them back; earlier aliases see them)."""
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        with no_grad():
            weight_mat = self.reshape_weight_to_matrix(getattr(module, self.name + "_orig"))
            for _ in range(self.n_power_iterations):
                v.copy_(F.normalize(mv(weight_mat.t(), u), dim=0, eps=self.eps))
                u.copy_(F.normalize(mv(weight_mat, v), dim=0, eps=self.eps))

    def compute_weight(self, module: Module, do_power_iteration: bool = False) -> Tensor:
        """``W_orig / sigma``, ``sigma = u^T W_orig v`` (after a power iteration if asked)."""
        if do_power_iteration:
            self.power_iteration(module)
        weight = getattr(module, self.name + "_orig")
        # Copies: a later training forward updates the buffers in place, and this value's
        # gradient must keep the u, v it was computed with (GAN: D(real) + D(fake)).
        u = getattr(module, self.name + "_u").clone()
        v = getattr(module, self.name + "_v").clone()
        sigma = dot(u, mv(self.reshape_weight_to_matrix(weight), v))
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        if module.training:
            self.power_iteration(module)

    def remove(self, module: Module) -> None:
        """Put back ``<name>`` as one Parameter holding the current normalized value."""
        with no_grad():
            weight = self.compute_weight(module)
        computed = module.__dict__.get("_computed", ())
        module.__dict__["_computed"] = tuple(c for c in computed if not _is_ours(c, self))
        for suffix in ("_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))
        _structure.bump()

    @staticmethod
    def apply(
        module: Module, name: str, n_power_iterations: int, dim: int, eps: float
    ) -> SpectralNorm:
        """Register spectral norm on ``module.<name>``; see :func:`spectral_norm`."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        if name not in module._parameters:
            raise KeyError(
                f"{type(module).__name__} has no parameter {name!r} to apply spectral_norm to; "
                f"it has {', '.join(module._parameters) or 'none'}"
            )
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `SpectralNorm` can't have uninitialized parameters. "
                "Make sure to run the dummy forward before applying spectral normalization"
            )
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            # Random starts, from spx's generator (load a state dict for torch's).
            u = F.normalize(randn(h, dtype=weight.dtype), dim=0, eps=fn.eps)
            v = F.normalize(randn(w, dtype=weight.dtype), dim=0, eps=fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        computed = module.__dict__.get("_computed", ())
        module.__dict__["_computed"] = (*computed, (name, fn.compute_weight))
        module.register_forward_pre_hook(fn)
        _structure.bump()
        return fn


def _is_ours(entry: tuple[str, Any], fn: SpectralNorm) -> bool:
    return entry[0] == fn.name and getattr(entry[1], "__self__", None) is fn


def spectral_norm(
    module: M,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> M:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration before
    every training forward (mirrors ``torch.nn.utils.spectral_norm``).

    The parameter becomes ``<name>_orig``, with buffers ``<name>_u`` and ``<name>_v`` (the
    singular vector estimates, from a random start): torch's state dict keys, so a torch
    checkpoint loads as it is. ``module.<name>`` reads as ``<name>_orig / sigma``.

    Args:
        module: the module holding the parameter.
        name: the parameter's name.
        n_power_iterations: power-method steps per training forward.
        eps: lower bound on norms, avoiding division by zero.
        dim: the output dim; default ``0``, or ``1`` for ``ConvTranspose{1,2,3}d``.

    Returns:
        ``module``.

    Raises:
        RuntimeError: spectral norm is already registered on ``name``.
        KeyError: no parameter ``name``.
        ValueError: the parameter is None or uninitialized (lazy), or
            ``n_power_iterations <= 0``.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> m = nn.utils.spectral_norm(nn.Linear(20, 40))
        >>> list(m.state_dict())
        ['bias', 'weight_orig', 'weight_u', 'weight_v']
        >>> _ = m(spx.randn(2, 20))  # one power iteration, in training mode
        >>> m.weight_u.shape
        spx.Size([40])
    """
    SpectralNorm.apply(module, name, n_power_iterations, _default_dim(module, dim), eps)
    return module


def remove_spectral_norm(module: M, name: str = "weight") -> M:
    """Undo :func:`spectral_norm`: ``name`` is one Parameter again, holding the normalized
    value (mirrors ``torch.nn.utils.remove_spectral_norm``).

    Args:
        module: the module :func:`spectral_norm` was applied to.
        name: the parameter's name.

    Returns:
        ``module``.

    Raises:
        ValueError: no spectral norm on ``name``.

    Example:
        >>> from spx import nn
        >>> m = nn.utils.remove_spectral_norm(nn.utils.spectral_norm(nn.Linear(4, 2)))
        >>> list(m.state_dict())
        ['bias', 'weight']
    """
    hooks = module._forward_pre_hooks
    for key, hook in list(hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
