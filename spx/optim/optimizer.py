"""``Optimizer``: torch's optimizer contract over pure, compiled update rules.

The object keeps torch's shape — ``param_groups`` (a list of dicts holding ``params`` and the
hyperparameters), ``state`` (a dict keyed by parameter tensor, torch's state names), ``zero_grad``,
``step``, ``state_dict`` / ``load_state_dict`` in torch's layout — while the arithmetic is a pure
function of arrays that a subclass provides (:meth:`Optimizer._update`). ``step()`` runs that
function as one ``jax.jit`` program per param group, with numeric hyperparameters passed as
traced values so an lr scheduler never triggers a recompilation; inside ``spx.compile`` the same
function is traced into the fused training step.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import _transforms
from spx._compile import sharing
from spx._host import device_array
from spx._live import Registry
from spx._tensor.tensor import Tensor
from spx.nn import _structure
from spx.optim import _state_check


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def _is_number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)) or isinstance(
        value, jax.Array | np.ndarray
    )


def _is_dynamic(value: Any) -> bool:
    """Numeric hyperparameters are traced; bools, strings, None and other tuples stay static.

    A tuple or list of numbers (Adam's ``betas``) is traced too: OneCycleLR rewrites
    ``betas[0]`` every step, and a static tuple would recompile the update each time.
    """
    if isinstance(value, tuple | list):
        return bool(value) and all(_is_number(v) for v in value)
    return _is_number(value)


def _hashable(value: Any) -> Any:
    """Static hyperparameters key the compiled update: lists become tuples (recursively)."""
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


_STEP_AFTER_SCHEDULER = (
    "optimizer.step() ran after {sched}.step() in a step spx.compile traces. A scheduler's "
    "step() there runs after each call of the compiled program, so this update would use the "
    "learning rate torch would have replaced. Call optimizer.step() first, then "
    "scheduler.step(), the order torch expects too."
)


# Every Optimizer alive, per thread: spx.compile checks that a step it traced neither changed
# nor read as constants those it did not bind (:mod:`spx._compile.unbound`).
_LIVE = Registry()


def live_optimizers() -> list[Optimizer]:
    """The Optimizers the calling thread created that are alive now."""
    return _LIVE.mine()


class Optimizer:
    """Base class of spx optimizers (mirrors ``torch.optim.Optimizer``).

    Subclasses pass their ``defaults`` and implement :meth:`_init_state` and :meth:`_update`.

    Args:
        params: an iterable of leaf Tensors (Parameters, or tensors made with
            ``requires_grad=True``), or of dicts ``{"params": [...], **overrides}``. A tensor
            computed from others (not a leaf) is rejected with ``ValueError``, as in torch.
        defaults: default hyperparameters of every group.

    Example:
        >>> import spx
        >>> model = spx.nn.Linear(3, 1)
        >>> opt = spx.optim.SGD(model.parameters(), lr=0.1)
        >>> len(opt.param_groups[0]["params"])
        2
    """

    # torch's order of a parameter's state entries (state_dict() lists them in this order).
    _state_keys: tuple[str, ...] = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Optimizer:
        # (Here, not in __init__: copy.deepcopy and pickle create objects through __new__.)
        obj = super().__new__(cls)
        _LIVE.add(obj)
        return obj

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        # torch's state is a defaultdict(dict): torch-style step() code reads self.state[p]
        # for a parameter that has no state yet and fills the empty dict it gets.
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor | jax.Array | np.ndarray):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Parameters or "
                f"dicts, but got {type(params).__name__}; pass model.parameters() or [param]"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)
        self._compiled: dict[Any, tuple[Callable, dict]] = {}
        # Last switches computed from concrete hyperparameters, per group (see _switches).
        self._switch_cache: dict[int, tuple] = {}

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # -- groups ------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (mirrors torch)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group.get("params")
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Use a list instead."
            )
        params = list(params or [])
        # torch 2.6+: model.named_parameters() gives (name, Parameter) pairs; the names are
        # kept as the group's "param_names" and used in error messages.
        names = [p[0] for p in params if isinstance(p, tuple) and len(p) == 2]
        if names:
            if len(names) != len(params) or not all(isinstance(n, str) for n in names):
                raise ValueError(
                    "all optimizer params should be with/without names: pass "
                    "model.named_parameters() or model.parameters(), not a mix; got "
                    f"{len(names)} (name, Parameter) pairs among {len(params)} entries"
                )
            params = [p[1] for p in params]
            group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}; wrap arrays with spx.nn.Parameter(x) and keep the "
                    f"Parameter to read the updated value"
                )
            # A lazy parameter (nn.LazyLinear) has no value to ask about yet; it is a leaf.
            if not getattr(p, "is_uninitialized", False) and not p.is_leaf:
                raise ValueError(
                    "can't optimize a non-leaf Tensor: optimize the leaf it was computed from, "
                    "or detach it: p = t.detach().requires_grad_()"
                )
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            group.setdefault(name, default)
        for other in self.param_groups:
            if ("param_names" in other) != ("param_names" in group):
                raise ValueError(
                    "all optimizer param groups should be with/without names: this group is "
                    f"{'with' if 'param_names' in group else 'without'} names, an earlier one "
                    "is not; pass named_parameters() (or parameters()) to every group"
                )
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self._check_group(group)
        self.param_groups.append(group)
        _structure.bump()

    def _check_group(self, group: dict[str, Any]) -> None:
        """Subclasses validate hyperparameters here (torch's 'Invalid learning rate' ...)."""
        lr = group.get("lr")
        if _is_dynamic(lr) and not isinstance(lr, jax.Array) and lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")

    def _all_params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    # -- gradients ---------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the ``.grad`` of every parameter to None (or to zeros, in place)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None:
                    if set_to_none:
                        p._grad = None
                    else:
                        p._grad.detach_().zero_()

    # -- the update --------------------------------------------------------------------------
    def _init_state(self, param: jax.Array, group: dict[str, Any]) -> dict[str, jax.Array]:
        """The state of one parameter before its first step, in torch's names."""
        raise NotImplementedError

    def _update(
        self,
        params: list[jax.Array],
        grads: list[jax.Array],
        states: list[dict[str, jax.Array]],
        hparams: dict[str, Any],
    ) -> tuple[list[jax.Array], list[dict[str, jax.Array]]]:
        """Pure update of one group: new values and states (``hparams`` may be traced)."""
        raise NotImplementedError

    @staticmethod
    def _next_steps(states: list[dict[str, Any]], hparams: dict[str, Any]) -> list[Any]:
        """Each parameter's ``step + 1``: one shared array when the group steps in lockstep.

        Sharing it (rather than adding 1 per parameter) makes one scalar kernel, and
        ``spx.compile`` passes the shared array through the program once.
        """
        if hparams.get("_lockstep"):
            return [states[0]["step"] + 1] * len(states)
        return [s["step"] + 1 for s in states]

    def _static_switches(self, group: dict[str, Any]) -> dict[str, bool]:
        """Python switches a subclass derives from numeric hyperparameters.

        torch branches on values such as ``momentum != 0`` to choose which state a parameter
        keeps. Numeric hyperparameters are traced, so such a test can't run inside
        :meth:`_update`; a subclass computes it here (keys start with ``_``) and reads it from
        ``hparams``. The switches are part of the compiled function's static key.
        """
        return {}

    def _switches(self, group: dict[str, Any]) -> tuple:
        try:
            switches = tuple(sorted(self._static_switches(group).items()))
        except jax.errors.ConcretizationTypeError:
            # Inside spx.compile the group holds tracers. The switches were computed from the
            # concrete values when the program was planned (_static_and_dynamic runs then).
            cached = self._switch_cache.get(id(group))
            if cached is None:
                raise TypeError(
                    f"{type(self).__name__}: a hyperparameter that selects the update rule "
                    "(e.g. momentum == 0 or not) is a traced value and was never seen "
                    "concretely; call opt.step() once eagerly or pass Python numbers"
                ) from None
            return cached
        self._switch_cache[id(group)] = switches
        return switches

    def _static_and_dynamic(self, group: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        static, dynamic = [], {}
        for key, value in group.items():
            if key == "params":
                continue
            if _is_dynamic(value):
                dynamic[key] = value
            else:
                static.append((key, _hashable(value)))
        return tuple(sorted(static, key=lambda kv: kv[0])) + self._switches(group), dynamic

    def _group_fn(self, static: tuple, in_shared: sharing.Pattern) -> tuple[Callable, dict]:
        """The jitted update of a group and its record of the outputs' shared entries.

        State entries shared between parameters (a lockstep group's ``step``) enter and leave
        the program once; see :mod:`spx._compile.sharing`.
        """
        cached = self._compiled.get((static, in_shared))
        if cached is None:
            static_dict = dict(static)
            record: dict[str, Any] = {}

            def run(params, grads, states, dynamic):
                states = list(states)
                sharing.restore(states, in_shared)
                new, new_states = self._update(params, grads, states, {**static_dict, **dynamic})
                record["out_shared"] = sharing.find_shared(new_states)
                return new, sharing.strip(new_states, record["out_shared"])

            # Donate the old optimizer states (internal; state_dict() hands out copies) but
            # not the parameter values: arrays a user took from model.state_dict() before
            # step() must stay readable, as torch's tensors do.
            cached = (jax.jit(run, donate_argnums=(2,)), record)
            self._compiled[(static, in_shared)] = cached
        return cached

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter whose ``.grad`` is not None; returns ``closure()``."""
        for sched, _, _ in _transforms.deferred_calls():
            if getattr(sched, "optimizer", None) is self:
                raise RuntimeError(_STEP_AFTER_SCHEDULER.format(sched=type(sched).__name__))
        loss = closure() if closure is not None else None
        tracing = False
        for group in self.param_groups:
            active = [p for p in group["params"] if p._grad is not None]
            if not active:
                continue
            states, fresh = [], 0
            for p in active:
                state = self.state.get(p)
                if not state:  # none yet, or the empty dict a self.state[p] read created
                    data = p._data
                    state = self._init_state(data, group)
                    if not isinstance(data, jax.core.Tracer) and data.committed:
                        # Commit the new state to the parameter's device, as the parameter is:
                        # uncommitted zeros would make the jitted update compile again on the
                        # next step (the outputs come back committed).
                        state = jax.device_put(state, data.sharding)
                    self.state[p] = state
                    fresh += 1
                states.append(state)
            if fresh == len(states) and "step" in states[0]:
                # Parameters that start together step together: one shared step array.
                for state in states[1:]:
                    state["step"] = states[0]["step"]
            static, dynamic = self._static_and_dynamic(group)
            static += (("_lockstep", _lockstep(states)),)
            datas = [p._data for p in active]
            grads = [p._grad._data for p in active]
            if any(isinstance(x, jax.core.Tracer) for x in (*datas, *grads)):
                tracing = True
            if tracing:
                # Inside spx.compile / a jax transformation: trace the rule into the caller.
                new, new_states = self._update(datas, grads, states, {**dict(static), **dynamic})
            else:
                if len(active) < len(group["params"]):
                    states = self._unshared(group, active, states)
                in_shared = sharing.find_shared(states)
                fn, record = self._group_fn(static, in_shared)
                new, new_states = fn(datas, grads, sharing.strip(states, in_shared), dynamic)
                sharing.restore(new_states, record["out_shared"])
            for p, value, state in zip(active, new, new_states, strict=True):
                p._data = value  # in place: aliases (state_dict() values) see the update
                self.state[p] = state
        return loss

    def _unshared(
        self, group: dict[str, Any], active: list[Tensor], states: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """``states`` with copies of the arrays they share with the group's resting params.

        A partial step donates the active parameters' states; an array also held by a
        parameter that sits the step out (a lockstep group's shared ``step``) must survive.
        """
        active_ids = {id(p) for p in active}
        resting = {
            id(x)
            for p in group["params"]
            if id(p) not in active_ids
            for x in sharing.arrays_of(self.state.get(p))
        }
        return [
            {k: jnp.array(v, copy=True) if id(v) in resting else v for k, v in s.items()}
            for s in states
        ]

    # -- serialization -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``."""
        index = {id(p): i for i, p in enumerate(self._all_params())}
        groups = []
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        # Copies, as Tensors: step() donates the state buffers, which would delete arrays
        # handed out here. Parameters without state (SGD without momentum) have no entry, as
        # in torch. jax returns dicts sorted by key; _state_keys restores torch's order.
        order = {k: i for i, k in enumerate(self._state_keys)}
        state = {
            index[id(p)]: {
                k: _copy_array(v)
                for k, v in sorted(s.items(), key=lambda kv: order.get(kv[0], len(order)))
            }
            for p, s in self.state.items()
            if id(p) in index and s
        }
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` output (arrays may be numpy or jax)."""
        if not isinstance(state_dict, dict) or {"state", "param_groups"} - set(state_dict):
            raise ValueError(
                "optimizer state_dict must be a dict with 'state' and 'param_groups' keys, got "
                f"{type(state_dict).__name__} with keys "
                f"{sorted(state_dict) if isinstance(state_dict, dict) else '-'}"
            )
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, but the optimizer "
                f"has {len(self.param_groups)}"
            )
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    f"of optimizer's group ({len(saved['params'])} vs {len(group['params'])})"
                )
        id_to_param, names, merged = {}, {}, {}
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            id_to_param.update(zip(saved["params"], group["params"], strict=True))
            group_names = group.get("param_names") or saved.get("param_names")
            if group_names is not None and len(group_names) == len(saved["params"]):
                names.update(zip(saved["params"], group_names, strict=True))
            # The state is checked against the hyperparameters it will run with: the saved ones.
            after = {**group, **{k: v for k, v in saved.items() if k != "params"}}
            merged.update({id(p): after for p in group["params"]})
        loaded = {}
        for key, value in state_dict["state"].items():
            param = id_to_param.get(int(key))
            if param is None:
                raise ValueError(
                    f"optimizer state_dict has state for unknown parameter {key}; its "
                    f"param_groups list parameters {sorted(id_to_param)}"
                )
            loaded[param] = (int(key), names.get(int(key)), value)
        _state_check.check_state(self, loaded, merged)
        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for param, (_, _, value) in loaded.items():
            # Copies: the caller keeps its arrays (host memory may change later), and step()
            # donates ours.
            new_state[param] = {
                k: None if v is None else _owned(v, self._state_dtype(k, v, param))
                for k, v in value.items()
            }
        self.state = new_state
        for saved, group in zip(saved_groups, self.param_groups, strict=True):
            for k, v in saved.items():
                if k != "params":
                    group[k] = copy.deepcopy(v)
        for group in self.param_groups:
            # A group whose saved steps are all equal steps in lockstep again (one array).
            states = [self.state.get(p) for p in group["params"]]
            steps = [s.get("step") if s else None for s in states]
            if steps[0] is not None and all(
                v is not None and np.asarray(v) == np.asarray(steps[0]) for v in steps
            ):
                for state in states:
                    state["step"] = steps[0]
        _structure.bump()

    def _state_spec(self, param: Tensor, group: dict[str, Any]) -> _state_check.StateSpec | None:
        """What a stepped parameter's state holds, for checking a loaded state dict.

        By default the entries :meth:`_init_state` creates are required and the other names
        in ``_state_keys`` optional (``step`` a scalar, the rest shaped like the parameter).
        None for a subclass that writes its own ``step()`` (its state is not known).
        """
        if type(self)._init_state is Optimizer._init_state:
            return None
        init = jax.eval_shape(lambda x: self._init_state(x, group), _state_check.like(param))
        required = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in init.items()}
        optional = {
            k: _state_check.step_spec() if k == "step" else _state_check.like(param)
            for k in self._state_keys
            if k not in required
        }
        return _state_check.StateSpec(required, optional)

    def _state_dtype(self, key: str, value: Any, param: Tensor) -> Any:
        if key == "step":
            return jnp.float32
        arr = np.asarray(value)
        lazy = getattr(param, "is_uninitialized", False)
        if jnp.issubdtype(arr.dtype, jnp.floating) and not lazy:  # bfloat16 too
            return param.dtype
        return None


def _lockstep(states: list[dict[str, Any]]) -> bool:
    """Whether the parameters stepping now hold one shared ``step`` array (equal counts).

    Steps are shared from a group's first step (or by load_state_dict when the counts are equal)
    and split by any step some parameters sit out, so identity is the whole bookkeeping; it
    holds for traced states too, which spx.compile passes through the program once.
    """
    first = states[0].get("step")
    return first is not None and all(s.get("step") is first for s in states)


def _owned(value: Any, dtype: Any) -> jax.Array:
    """A copy the optimizer owns (its step() donates state buffers)."""
    if isinstance(value, Tensor):
        value = value._data
    if isinstance(value, jax.Array):
        return jnp.array(value, dtype=dtype, copy=True)
    return device_array(value, dtype=dtype)


def _copy_array(value: Any) -> Any:
    """A state entry as ``state_dict()`` hands it out: a Tensor over a copy, like torch's."""
    if isinstance(value, Tensor):
        value = value._data
    if isinstance(value, jax.Array):
        return Tensor._of(jnp.array(value, copy=True))
    return copy.deepcopy(value)
