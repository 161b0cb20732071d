"""``spx.amp.GradScaler``: loss scaling for float16 training (mirrors ``torch.amp.GradScaler``).

Small float16 gradients underflow to zero. The scaler multiplies the loss by a large factor
before ``backward()`` (``scaler.scale(loss).backward()``), divides the gradients by it before the
optimizer uses them (``scaler.step(opt)``, or ``scaler.unscale_(opt)`` first to clip), skips
the step when a gradient is inf or NaN, and adapts the factor (``scaler.update()``): halved after
a skipped step, doubled after ``growth_interval`` good ones. torch's algorithm and numbers
(``_amp_foreach_non_finite_check_and_unscale_``, ``_amp_update_scale_``).

Deciding to skip a step reads one flag on the host, as torch's ``step`` does; the scaler is for
the eager loop (inside ``spx.compile`` that read raises, naming the line).

Example:
    >>> import spx
    >>> model = spx.nn.Linear(3, 1)
    >>> opt = spx.optim.SGD(model.parameters(), lr=0.1)
    >>> scaler = spx.amp.GradScaler("cpu")
    >>> loss = model(spx.ones(2, 3)).pow(2).mean()
    >>> scaler.scale(loss).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
    >>> scaler.get_scale()
    65536.0
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from spx import _transforms, _validate

__all__ = ["GradScaler"]


class _Stage(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh() -> dict[str, Any]:
    return {"stage": _Stage.READY, "found_inf": None}


_IN_COMPILED_STEP = (
    "GradScaler.{method}() inside a step spx.compile traces: the scaler decides on the host, "
    "from each step's gradients, whether to skip the update and how to change the scale, and "
    "a compiled step's Python runs only once, while it is traced. Run the scaled step without "
    "spx.compile (its forward and backward still run as compiled programs), or use "
    "spx.autocast(..., dtype=spx.bfloat16), which needs no scaler."
)


def _refuse_in_compiled_step(method: str) -> None:
    if _transforms.in_compiled_step():
        raise RuntimeError(_IN_COMPILED_STEP.format(method=method))


class GradScaler:
    """Dynamic loss scaling (``torch.amp.GradScaler``).

    Args:
        device: ``"cuda"`` (default) or ``"cpu"``; with ``"cuda"`` and no GPU the scaler
            disables itself with a warning, as torch's does.
        init_scale: the first scale factor.
        growth_factor: multiplies the scale after ``growth_interval`` steps without inf/NaN
            (> 1).
        backoff_factor: multiplies the scale after a step with inf/NaN (< 1).
        growth_interval: good steps between growths.
        enabled: False makes every method a pass-through (``step`` just steps).
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = bool(enabled)
        if device == "cuda" and self._enabled:
            from spx import cuda

            if not cuda.is_available():
                warnings.warn(
                    "GradScaler is enabled for 'cuda', but there is no GPU. Disabling "
                    "(use GradScaler('cpu') to scale on the CPU).",
                    UserWarning,
                    stacklevel=2,
                )
                self._enabled = False
        if self._enabled:
            # AssertionError, the kind torch raises for these.
            if growth_factor <= 1.0:
                raise AssertionError(f"The growth factor must be > 1.0, got {growth_factor}.")
            if backoff_factor >= 1.0:
                raise AssertionError(f"The backoff factor must be < 1.0, got {backoff_factor}.")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = _validate.as_int(
            growth_interval, "growth_interval", "GradScaler", minimum=1
        )
        self._scale: float | None = None  # set by the first scale(), as torch's lazy init
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    # -- scaling -------------------------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a Tensor, or lists/tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = self._init_scale
        factor = np.float32(self._scale)
        if hasattr(outputs, "_ref"):
            return outputs * factor
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale (once per step, e.g. before clipping)."""
        if not self._enabled:
            return
        _refuse_in_compiled_step("unscale_")
        self._check_scaled("unscale_")
        state = self._state(optimizer)
        if state["stage"] is _Stage.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # torch takes the reciprocal in float64, then rounds it to float32.
        inv = np.float32(1.0 / np.float64(np.float32(self._scale)))
        from spx._tensor.grad_mode import no_grad

        finite = []
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if np.dtype(g.dtype) == np.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    g.mul_(inv)
                    finite.append(g.isfinite().all())  # recorded: one program for all checks
        if finite:
            import spx

            state["found_inf"] = spx.stack(finite).all().logical_not()
        else:
            state["found_inf"] = None
        state["stage"] = _Stage.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (if not done yet) and step ``optimizer`` unless a gradient is inf/NaN.

        Returns:
            What ``optimizer.step`` returned, or None when the step was skipped.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        _refuse_in_compiled_step("step")
        self._check_scaled("step")
        state = self._state(optimizer)
        if state["stage"] is _Stage.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _Stage.READY:
            self.unscale_(optimizer)
        found = state["found_inf"]
        if found is None:
            raise AssertionError(
                "No inf checks were recorded for this optimizer: none of its parameters has a "
                ".grad (did backward() reach them?)"
            )
        result = None
        if not bool(found):
            result = optimizer.step(*args, **kwargs)
        state["stage"] = _Stage.STEPPED
        return result

    def update(self, new_scale: float | Any = None) -> None:
        """Adapt the scale from this step's inf/NaN checks (or set ``new_scale``)."""
        if not self._enabled:
            return
        self._check_scaled("update")
        if new_scale is not None:
            if hasattr(new_scale, "_ref"):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise ValueError(
                        "new_scale should be a float or a 1-element tensor without grad"
                    )
                new_scale = new_scale.item()
            self._scale = float(new_scale)
        else:
            checks = [s["found_inf"] for s in self._per_optimizer.values()]
            checks = [c for c in checks if c is not None]
            if not checks:
                raise RuntimeError("No inf checks were recorded prior to update.")
            found_inf = any(bool(c) for c in checks)
            # torch's _amp_update_scale_, in float32 as torch keeps the scale.
            scale = np.float32(self._scale)
            if found_inf:
                scale = np.float32(scale * np.float32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    grown = np.float32(scale * np.float32(self._growth_factor))
                    if np.isfinite(grown):
                        scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
            self._scale = float(scale)
        self._per_optimizer = {}

    # -- inspection and state ------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = _validate.as_int(
            new_interval, "new_interval", "GradScaler.set_growth_interval", minimum=1
        )

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """torch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        scale = state_dict["scale"]
        self._init_scale = float(scale.item() if hasattr(scale, "item") else scale)
        if self._scale is not None:
            self._scale = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    # -- helpers -------------------------------------------------------------------------------
    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(id(optimizer), _fresh())

    def _check_scaled(self, name: str) -> None:
        if self._scale is None:
            raise RuntimeError(
                f"Attempted {name} but _scale is None. This may indicate your script did not "
                "use scaler.scale(loss or outputs) earlier in the iteration."
            )
