"""``LBFGS``: torch's limited-memory BFGS, with its optional strong-Wolfe line search.

A port of ``torch/optim/lbfgs.py``: each ``step(closure)`` runs up to ``max_iter`` quasi-Newton
iterations, re-evaluating the loss through the closure. The algorithm branches on computed
values (curvature ``y . s > 1e-10``, the Wolfe conditions, the tolerances), so it runs eagerly
on concrete arrays, one small jax op at a time, and cannot be traced into ``spx.compile``. The
parameters are handled as one flat vector, as in torch. All the state lives in
``self.state[first parameter]`` under torch's keys (``func_evals``, ``n_iter``, ``d``, ``t``,
``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``, ``al``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor.grad_mode import enable_grad
from spx._tensor.tensor import Tensor
from spx.optim.optimizer import Optimizer, _copy_array

MSG_COMPILE = """LBFGS.step(closure) cannot run inside spx.compile: it re-evaluates the closure a
data-dependent number of times and branches on the loss and gradient values (line search,
curvature and tolerance checks), which a traced program cannot do. Call it eagerly:

    @spx.compile
    def train_step(x, y):          # wrong: LBFGS inside the compiled function
        opt.step(closure)

    def closure():                 # right: compile the loss/backward, step eagerly
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss

    opt.step(closure)
"""


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimizer of the cubic through two points with values and slopes (torch's port)."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = jnp.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search for a step satisfying the strong Wolfe conditions (torch's port)."""
    d_norm = jnp.max(jnp.abs(d))
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = jnp.dot(g_new, d)

    # Bracket an interval containing a point satisfying the Wolfe criteria.
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = jnp.dot(g_new, d)
        ls_iter += 1

    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # Zoom: refine the bracket until a point satisfies the criteria.
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # A trial point too close to the bracket's boundary (twice, or on it) moves to 0.1 of
        # the bracket's length from the nearest end.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = jnp.dot(g_new, d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Armijo condition not satisfied, or not lower than the lowest point.
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                # The old high becomes the new low.
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _scalar(value: Any) -> Any:
    """A python number for a 0-d array (torch keeps ``t`` a python number too)."""
    return float(value) if isinstance(value, jax.Array | np.ndarray) else value


class LBFGS(Optimizer):
    """L-BFGS (mirrors ``torch.optim.LBFGS``).

    Only one parameter group is supported, as in torch. ``step(closure)`` needs a closure that
    zeroes the gradients, recomputes the loss, calls ``backward()`` and returns the loss; it
    returns the loss of the closure's first evaluation. It runs eagerly (not inside
    ``spx.compile``) and keeps ``param_bytes * (history_size + 1)`` bytes of history.

    Args:
        params: leaf Tensors (Parameters) of one group.
        lr: learning rate (the step length without a line search, its first guess with one).
        max_iter: maximal number of iterations per ``step``.
        max_eval: maximal number of closure evaluations per ``step``
            (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when the largest absolute gradient entry is at most this.
        tolerance_change: stop when the loss or the parameters change less than this.
        history_size: number of curvature pairs kept.
        line_search_fn: ``None`` (fixed step ``lr``) or ``"strong_wolfe"``.

    Example:
        >>> import spx
        >>> w = spx.nn.Parameter(spx.tensor([1.0, -2.0]))
        >>> opt = spx.optim.LBFGS([w], line_search_fn="strong_wolfe")  # torch.optim.LBFGS
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 3.0) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> _ = opt.step(closure)
        >>> [round(v, 4) for v in w.tolist()]
        [3.0, 3.0]
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float | jax.Array = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        self._check_group(defaults)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError(
                "LBFGS doesn't support per-parameter options (parameter groups): pass one "
                f"list of parameters, not {len(self.param_groups)} groups"
            )
        self._params = self.param_groups[0]["params"]

    def _check_group(self, group: dict[str, Any]) -> None:
        lr, line_search_fn = group["lr"], group["line_search_fn"]
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (lr must be >= 0, e.g. lr=1)")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(
                f"only 'strong_wolfe' is supported as line_search_fn, got {line_search_fn!r}; "
                "pass line_search_fn='strong_wolfe' or None"
            )

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError(
                "LBFGS doesn't support per-parameter options (parameter groups): it already "
                "has its one group; create the optimizer over all the parameters instead"
            )
        super().add_param_group(param_group)

    # -- the flat view of the parameters -----------------------------------------------------
    def _gather_flat_grad(self) -> jax.Array:
        views = [
            jnp.zeros(p._data.size, p._data.dtype) if p._grad is None else p._grad._data.ravel()
            for p in self._params
        ]
        return jnp.concatenate(views)

    def _add_grad(self, step_size: Any, update: jax.Array) -> None:
        offset = 0
        for p in self._params:
            numel = p._data.size
            chunk = update[offset : offset + numel].reshape(p._data.shape)
            p._data = (p._data + step_size * chunk).astype(p._data.dtype)
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, data in zip(self._params, x, strict=True):
            p._data = data
        return loss, flat_grad

    # -- the step ----------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Up to ``max_iter`` L-BFGS iterations; returns the closure's first loss.

        Args:
            closure: zeroes the gradients, recomputes the loss, calls ``backward()`` and
                returns the loss.
        """
        if closure is None:
            raise TypeError(
                "LBFGS.step() needs a closure that re-evaluates the loss and calls backward(), "
                "e.g. opt.step(closure) with closure() doing zero_grad, loss, backward, return"
            )
        if any(isinstance(p._data, jax.core.Tracer) for p in self._params):
            raise RuntimeError(MSG_COMPILE)

        def evaluate() -> Any:
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr = _scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        # LBFGS has only global state; torch registers it under the first parameter.
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        if any(
            isinstance(p._grad._data, jax.core.Tracer) for p in self._params if p._grad is not None
        ):
            raise RuntimeError(MSG_COMPILE)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        opt_cond = jnp.max(jnp.abs(flat_grad)) <= tolerance_grad
        if opt_cond:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # The descent direction.
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = jnp.dot(y, s)
                if ys > 1e-10:
                    # Update the memory (drop the oldest pair when it is full).
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    # Scale of the initial Hessian approximation.
                    h_diag = ys / jnp.dot(y, y)

                # Two-loop recursion: the inverse Hessian approximation times the gradient.
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = jnp.dot(old_stps[i], q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                r = q * h_diag
                for i in range(num_old):
                    be_i = jnp.dot(old_dirs[i], r) * ro[i]
                    r = r + (al[i] - be_i) * old_stps[i]
                d = r

            prev_flat_grad = flat_grad
            prev_loss = loss

            # The step length: a first guess scaled by the gradient, then lr.
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(jnp.sum(jnp.abs(flat_grad)))) * lr
            else:
                t = lr

            gtd = jnp.dot(flat_grad, d)
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = [p._data for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(evaluate, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                t = _scalar(t)
                self._add_grad(t, d)
                opt_cond = jnp.max(jnp.abs(flat_grad)) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # Re-evaluate only if another iteration follows (in a stochastic setting
                    # the last evaluation would be wasted).
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = jnp.max(jnp.abs(flat_grad)) <= tolerance_grad
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if jnp.max(jnp.abs(d * t)) <= tolerance_change:  # lack of progress
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = d
        state["t"] = t
        state["old_dirs"] = old_dirs
        state["old_stps"] = old_stps
        state["ro"] = ro
        state["H_diag"] = h_diag
        state["prev_flat_grad"] = prev_flat_grad
        state["prev_loss"] = prev_loss
        return orig_loss

    # -- serialization -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """torch's layout: ``state[0]`` holds the history; lists hold Tensors."""
        out = super().state_dict()
        for entries in out["state"].values():
            for key, value in entries.items():
                if isinstance(value, list):
                    entries[key] = [None if v is None else _copy_array(v) for v in value]
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` output (torch's or spx's; arrays numpy or jax)."""
        if not isinstance(state_dict, dict) or {"state", "param_groups"} - set(state_dict):
            raise ValueError(
                "optimizer state_dict must be a dict with 'state' and 'param_groups' keys, got "
                f"{type(state_dict).__name__}"
            )
        # The base class checks and loads the groups; the history is not per-parameter arrays.
        super().load_state_dict({"state": {}, "param_groups": state_dict["param_groups"]})
        params = self._params
        for key, entries in state_dict["state"].items():
            index = int(key)
            if not 0 <= index < len(params):
                raise ValueError(
                    f"optimizer state_dict has state for unknown parameter {key}; this LBFGS "
                    f"has {len(params)} parameters"
                )
            self.state[params[index]] = {k: _load_value(v) for k, v in entries.items()}


def _load_value(value: Any) -> Any:
    """A saved history entry as LBFGS keeps it: arrays as jax arrays, numbers as numbers."""
    if isinstance(value, list):
        return [_load_value(v) for v in value]
    if value is None or isinstance(value, int | float):
        return value
    if isinstance(value, Tensor):
        value = value._data
    return jnp.array(np.asarray(value), copy=True)
