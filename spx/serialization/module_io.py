"""``load_checkpoint``: fill a module from a checkpoint, reading only the tensors it needs.

The module's own ``state_dict`` names decide what is read, so a pipeline stage whose module
keeps the original parameter names (``layers.3.attn.q.weight``) reads just its own tensors —
and opens just the shards holding them — from a checkpoint of the whole model:

    load_checkpoint(stage_module, "checkpoints/step_1000", partial=True)

Validation and writing are ``Module.load_state_dict``'s: every shape, missing key and
(unless ``partial``) unexpected key is checked before anything is written, so a failed load —
including a truncated or corrupt file — leaves the module unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import numpy as np

from spx.nn.module import Module, _IncompatibleKeys
from spx.serialization.checkpoint import Checkpoint, open_checkpoint


class _HostView(Mapping[str, np.ndarray]):
    """The checkpoint as ``load_state_dict`` sees it: host arrays read on access.

    Host (numpy) arrays, not device arrays: ``load_state_dict`` casts each value to the
    parameter's dtype and puts it on the parameter's current device, so reading straight to
    a device would cost a second transfer. With ``only``, names outside it are hidden, so they
    are neither read nor reported as unexpected.
    """

    def __init__(self, ckpt: Checkpoint, only: set[str] | None) -> None:
        self._ckpt = ckpt
        self._keys = [k for k in ckpt if only is None or k in only]
        self._key_set = set(self._keys)

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._key_set:
            raise KeyError(key)
        return self._ckpt.numpy(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._key_set


def load_checkpoint(
    module: Module,
    path: str | os.PathLike[str],
    strict: bool = True,
    *,
    partial: bool = False,
    assign: bool = False,
) -> _IncompatibleKeys:
    """Load a safetensors checkpoint into ``module``, reading only the tensors it takes.

    A torch ``state_dict`` saved with ``safetensors.torch.save_file`` loads into the spx model
    of the same structure with no key mapping. Lazy (uninitialized) parameters take the
    checkpoint's shape. Values are cast to each parameter's dtype (``assign=True`` keeps the
    checkpoint's) and placed on its device.

    Which keys are errors (as ``Module.load_state_dict``, plus ``partial``):

    ========================  =====================  ==========================================
    call                      missing key            key in the file the module does not take
    ========================  =====================  ==========================================
    default (``strict``)      RuntimeError           RuntimeError
    ``partial=True``          RuntimeError           ignored, not read, not reported
    ``strict=False``          reported               reported (not read)
    ========================  =====================  ==========================================

    ``partial=True`` is the pipeline-stage load: the file may hold the whole model, but every
    tensor of this module must be in it.

    Args:
        module: the module to fill.
        path: a ``.safetensors`` file, an index JSON, or a checkpoint directory (see
            :func:`spx.serialization.load`).
        strict: raise on missing keys and (unless ``partial``) unexpected keys.
        partial: the checkpoint may hold more than this module; extra keys are fine.
        assign: keep the checkpoint's dtypes instead of casting to the module's.

    Returns:
        ``(missing_keys, unexpected_keys)`` like ``torch.nn.Module.load_state_dict``.

    Raises:
        RuntimeError: shape mismatches, and missing/unexpected keys per the table above.
        FileNotFoundError: nothing at ``path``.
        ValueError: a truncated or corrupt checkpoint (the module is left unchanged).

    Example:
        >>> import tempfile, os, jax.numpy as jnp
        >>> from spx import nn
        >>> from spx.serialization import save
        >>> class Stage(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = nn.Parameter(jnp.zeros(3))
        >>> p = os.path.join(tempfile.mkdtemp(), "full.safetensors")
        >>> save({"w": jnp.ones(3), "other_stage.w": jnp.ones(5)}, p)
        >>> load_checkpoint(Stage(), p, partial=True)
        _IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    """
    if not isinstance(module, Module):
        raise TypeError(
            f"load_checkpoint fills an spx.nn.Module, got {type(module).__name__}; to read "
            "arrays into a dict use spx.serialization.load(path)"
        )
    wanted = set(module.state_dict(keep_vars=True))
    with open_checkpoint(path) as ckpt:
        view = _HostView(ckpt, wanted if partial else None)
        return module.load_state_dict(view, strict=strict, assign=assign)
