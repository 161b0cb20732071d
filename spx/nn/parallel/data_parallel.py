"""``DataParallel``: torch's single-process wrapper, run on the module's one device.

torch's ``nn.DataParallel`` splits each batch over the visible GPUs of one process, runs a
replica on each and gathers the outputs; with one device (or none: CPU) it simply calls the
module. spx always does the latter: results are the same (a batch's loss and gradients do not
depend on how it was split), only without the multi-GPU speed-up, so a script that wraps its
model "when several GPUs are there" keeps working. Use
:class:`~spx.nn.parallel.DistributedDataParallel` under ``spx-run`` for data parallelism.

As torch's wrapper: the module is ``.module``, and state-dict keys carry the ``module.``
prefix.

Example:
    >>> import spx
    >>> from spx import nn
    >>> model = nn.DataParallel(nn.Linear(4, 2))
    >>> model(spx.ones(3, 4)).shape, list(model.state_dict())
    (spx.Size([3, 2]), ['module.weight', 'module.bias'])
"""

from __future__ import annotations

import warnings
from typing import Any

from spx.nn.module import Module

__all__ = ["DataParallel"]

_ONE_DEVICE = (
    "DataParallel(device_ids={ids}): spx runs DataParallel on one device (results are the "
    "same as torch's split over {n}); for data parallelism over several devices use "
    "DistributedDataParallel under spx-run"
)


class DataParallel(Module):
    """Calls ``module`` on its device (mirrors ``torch.nn.DataParallel``; see the module
    docstring).

    Args:
        module: the module to wrap.
        device_ids: accepted; more than one warns once that spx uses one device.
        output_device: accepted (outputs stay where the module puts them).
        dim: torch's scatter dimension; accepted.
    """

    def __init__(
        self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel wraps an spx.nn.Module, got {type(module).__name__}")
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim
        if len(self.device_ids) > 1:
            warnings.warn(
                _ONE_DEVICE.format(ids=self.device_ids, n=len(self.device_ids)),
                UserWarning,
                stacklevel=2,
            )

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
