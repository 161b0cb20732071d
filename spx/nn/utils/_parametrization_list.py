"""``ParametrizationList``: the parametrizations of one tensor and the original tensor(s)
they apply to (mirrors ``torch.nn.utils.parametrize.ParametrizationList``; see
:mod:`spx.nn.utils.parametrize`)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.nn.module import Module
from spx.nn.modules.container import ModuleList
from spx.nn.parameter import Parameter


def _set(dest: Tensor, src: Tensor) -> None:
    """``dest`` takes ``src``'s value, keeping its identity (torch's ``dest.set_(src)``): an
    optimizer built before holds ``dest`` and goes on training it."""
    if src is not dest:
        dest.data = src.detach()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _as_tensor(value: Any) -> Any:
    # spx takes jax and numpy arrays wherever torch takes tensors; anything else goes to
    # right_inverse as it is (and torch's errors follow when it returns no tensor).
    if isinstance(value, jax.Array | np.ndarray) and not isinstance(value, Tensor):
        return Tensor._of(jax.numpy.asarray(value))
    return value


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and the original tensor(s) they are applied to
    (mirrors ``torch.nn.utils.parametrize.ParametrizationList``).

    It is ``module.parametrizations[name]``: a ModuleList of the parametrizations (``"0"``,
    ``"1"``, ... applied in that order) holding ``original`` (a Parameter or buffer), or
    ``original0``, ``original1``, ... when the first parametrization's ``right_inverse``
    returns a sequence of tensors. Built by :func:`register_parametrization`, not by hand.

    Args:
        modules: the parametrizations (at least one).
        original: the tensor being parametrized; ``right_inverse`` of the parametrizations
            (last to first) turns it into the stored original(s).
        unsafe: skip the checks that the parametrization keeps shape and dtype.

    Raises:
        ValueError: no modules; ``right_inverse`` returns something other than a tensor or a
            sequence of tensors, or one tensor of another dtype; the parametrization changes
            the shape or dtype (without ``unsafe``).

    Example:
        >>> from spx import nn
        >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
        >>> plist = m.parametrizations.weight
        >>> type(plist).__name__, len(plist), plist.original1.shape
        ('ParametrizationList', 1, spx.Size([2, 3]))
    """

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        # The first parametrization is special (it takes the originals), so one is required.
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(list(self)):
                # torch: a missing or not implemented right_inverse is the identity.
                if hasattr(module, "right_inverse"):
                    with contextlib.suppress(NotImplementedError):
                        new = module.right_inverse(new)
        if not isinstance(new, Tensor | Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != original.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}"
                )
            # The original object stays (an optimizer may hold it) and takes the new value.
            with no_grad():
                _set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(value).__name__}."
                    )
                # New tensors: as in torch, the user adds them to the optimizer afterwards.
                if isinstance(original, Parameter):
                    value = Parameter(value.detach(), original.requires_grad)
                else:
                    value = value.detach().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", value)
        if not self.unsafe:
            # forward(right_inverse(original)) must live where original lives.
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\n"
                    f"parametrized dtype: {Z.dtype}"
                )
            if tuple(Z.shape) != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original_shape}\n"
                    f"parametrized shape: {tuple(Z.shape)}"
                )

    def right_inverse(self, value: Any) -> None:
        """Store ``value`` as the parametrized tensor: the parametrizations' ``right_inverse``
        (last to first) give the new original(s), written into the existing ones in place.

        This is what ``module.weight = value`` runs.

        Args:
            value: the new value of the parametrized tensor.

        Raises:
            RuntimeError: a parametrization has no ``right_inverse``.
            ValueError: ``right_inverse`` returned something of another kind, length or dtype
                than the originals.
        """
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(
                        f"`right_inverse` should return a tensor. Got {type(value).__name__}"
                    )
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}"
                    )
                _set(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError(
                    "'right_inverse' must return a sequence of tensors. "
                    f"Got {type(value).__name__}."
                )
            if len(value) != self.ntensors:
                raise ValueError(
                    "'right_inverse' must return a sequence of tensors of length "
                    f"{self.ntensors}. Got a sequence of length {len(value)}."
                )
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors. Got element "
                        f"{i} of type {type(tensor).__name__}."
                    )
                if tensor.dtype != original_i.dtype:
                    raise ValueError(
                        f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                        f"while `original{i}` has dtype {original_i.dtype}"
                    )
                _set(original_i, tensor)

    def forward(self) -> Tensor:
        """The parametrized tensor: the parametrizations applied, in order, to the originals."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for i in range(1, len(self)):
            x = self[i](x)
        return x
