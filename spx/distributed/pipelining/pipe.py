"""``pipeline()`` and ``Pipe``: split one model into stage modules (torch's pipelining frontend).

Mirrors ``torch.distributed.pipelining.pipeline``: mark stage boundaries with ``pipe_split()``
calls in ``forward`` or with ``split_spec={"layers.2": SplitPoint.BEGINNING}``, trace the model
once on one microbatch, and get a :class:`Pipe` whose stage modules run one piece each::

    pipe = pipeline(model, (x_mb,), split_spec={"blocks.2": SplitPoint.BEGINNING})
    stage = pipe.build_stage(rank, "cpu")              # a PipelineStage for this rank
    schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=loss_fn)

Each stage module registers the parameters it uses under their **original dotted names**
(``blocks.2.attn.c_attn.weight``) in a skeleton of plain container modules, so its
``state_dict()`` is the matching slice of the model's and a full-model checkpoint loads into
it with ``partial=True``. The Parameters are **the model's own objects**, not copies (torch
copies them): loading a checkpoint into the model, an optimizer built over the model, or
``model.zero_grad()`` all act on the stage modules too. ``build_stage`` moves a stage's
parameters to the stage's device, which moves them in the model as well. Buffers are copied
into each stage module that reads them (they are never updated by a split forward).

How the program is cut and what flows between stages: see :mod:`.split.cut`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
from jax.core import eval_jaxpr

from spx._tensor.tensor import Tensor
from spx._validate import as_int
from spx.distributed.pipelining.runtime.programs import to_arrays, to_tensors
from spx.distributed.pipelining.split.cut import SplitPoint, StagePlan, Traced, plan_stages, trace
from spx.distributed.pipelining.stage import PipelineStage
from spx.nn.module import Module


class _Container(Module):
    """A plain module of the skeleton that mirrors the original model's module paths."""

    def extra_repr(self) -> str:
        items = [*self._parameters.items(), *self._buffers.items()]
        return ", ".join(f"{n}: {_canon(v.dtype).name}{list(v.shape)}" for n, v in items)


def _canon(dtype: Any) -> Any:
    return jax.dtypes.canonicalize_dtype(dtype)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _describe(aval: Any) -> str:
    return f"{_canon(aval.dtype).name}{list(aval.shape)}"


class _StageModule(Module):
    """One stage of a split model: the stage's equations over its own parameters.

    Built by :func:`pipeline`; get it with :meth:`Pipe.get_stage_module`. ``forward(*inputs)``
    takes the model's arguments (stage 0) or the previous stage's outputs, and returns the
    values the next stage needs — a tuple, or a single array when there is one — or, on the
    last stage, the model's output. Parameter values are read from the module at every call.
    The program is the one traced by ``pipeline()``: ``train()``/``eval()`` do not change it.
    """

    def __init__(self, plan: StagePlan, traced: Traced) -> None:
        super().__init__()
        for kind, name, i in plan.entries:
            *path, leaf = name.split(".")
            owner: Module = self
            for part in path:
                child = owner._modules.get(part)
                if child is None:
                    # Written to the tables directly: a name such as "eval" or "forward" would
                    # otherwise clash with the Module method of that name.
                    child = owner._modules[part] = _Container()
                owner = child
            if kind == "param":
                owner._parameters[leaf] = traced.state.params[i]
            else:
                owner._buffers[leaf] = traced.buffer_values[i]
                if not traced.state.buffer_persistent[i]:
                    owner._non_persistent_buffers.add(leaf)
        # Everything below is static structure (pytree aux data compares it by identity).
        self._spx_plan = plan

        # One compiled program per stage for eager calls; under an outer trace (the stage
        # runtime's jit, jax.grad) it is a nested call that the outer program inlines.
        def run(*values: Any) -> list[Any]:
            return eval_jaxpr(plan.jaxpr, plan.consts, *values)

        run.__name__ = run.__qualname__ = f"pipeline_stage_{plan.index}"
        self._spx_run = jax.jit(run)
        self._spx_paths = (
            tuple(tuple(p.split(".")) for p in plan.param_paths),
            tuple(tuple(p.split(".")) for p in plan.buffer_paths),
        )
        n = plan.n_state
        self._spx_input_avals = tuple(v.aval for v in plan.jaxpr.invars[n:])
        self._spx_state_avals = tuple(v.aval for v in plan.jaxpr.invars[:n])
        if plan.is_first:
            # The example's array leaves are dropped (not kept alive); the rest is compared.
            dyn = set(traced.dyn_index)
            fixed = [None if i in dyn else x for i, x in enumerate(traced.in_leaves)]
            self._spx_in = (traced.in_tree, fixed, traced.dyn_index)
        if plan.is_last:
            self._spx_out_tree = traced.out_tree

    def extra_repr(self) -> str:
        plan = self._spx_plan
        return (
            f"stage {plan.index} of {plan.num_stages}: {len(plan.jaxpr.eqns)} ops, "
            f"{len(self._spx_input_avals)} inputs, {len(plan.jaxpr.outvars)} outputs, "
            f"from {plan.begins_at} to {plan.ends_at}"
        )

    def _state(self) -> list[Any]:
        # Walk from self on every call (not cached references): jax/spx transformations
        # rebuild modules from pytrees, and the values must come from the module called.
        params, buffers = self._spx_paths
        values = []
        for paths, table in ((params, "_parameters"), (buffers, "_buffers")):
            for path in paths:
                owner: Module = self
                for part in path[:-1]:
                    owner = owner._modules[part]
                value = owner.__dict__[table].get(path[-1])
                if value is None:
                    raise RuntimeError(
                        f"stage {self._spx_plan.index}: {'.'.join(path)!r} was removed from "
                        "the stage module, but the stage's program reads it"
                    )
                values.append(value._data if isinstance(value, Tensor) else value)
        return values

    def _inputs(self, args: tuple, kwargs: dict) -> list[Any]:
        plan = self._spx_plan
        if plan.is_first:
            in_tree, fixed, dyn_index = self._spx_in
            leaves, tree = jax.tree_util.tree_flatten((tuple(args), dict(kwargs)))
            if tree != in_tree:
                raise TypeError(
                    f"stage 0 was traced by pipeline() with arguments structured as {in_tree}, "
                    f"but was called with {tree}. Call it with the same arguments as the model."
                )
            for i, (new, old) in enumerate(zip(leaves, fixed, strict=True)):
                # Non-array arguments were fixed into the program when it was traced. (Under
                # jit they arrive as tracers and cannot be compared; they are ignored there.)
                if old is not None and not isinstance(new, jax.Array) and not _same(new, old):
                    raise ValueError(
                        f"stage 0: argument leaf {i} is {new!r}, but pipeline() traced the "
                        f"model with {old!r}. Non-array arguments are fixed in the split "
                        "program; call pipeline() again with the new value."
                    )
            return [leaves[i] for i in dyn_index]
        if kwargs:
            raise TypeError(
                f"stage {plan.index} takes the previous stage's outputs as positional "
                f"arguments only, got keyword arguments {sorted(kwargs)}"
            )
        return list(args)

    def _check(self, what: str, labels: list[str], values: list[Any], avals: tuple) -> None:
        if len(values) != len(avals):
            raise TypeError(
                f"stage {self._spx_plan.index} takes {len(avals)} {what}, got {len(values)}"
            )
        for label, x, aval in zip(labels, values, avals, strict=True):
            shape, dtype = jax.numpy.shape(x), _canon(jax.numpy.result_type(x))
            if shape != aval.shape or dtype != _canon(aval.dtype):
                raise ValueError(
                    f"stage {self._spx_plan.index}: {label} is {dtype.name}{list(shape)}, but "
                    f"pipeline() traced it as {_describe(aval)}. The split program is "
                    "specialized to the example microbatch (and to the parameters' dtypes): "
                    "pass inputs of that shape and dtype, or call pipeline() again."
                )

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        plan = self._spx_plan
        inputs = self._inputs(*to_arrays((args, kwargs)))
        labels = [f"input {i}" for i in range(len(inputs))]
        self._check("inputs", labels, inputs, self._spx_input_avals)
        state = self._state()
        paths = [*plan.param_paths, *plan.buffer_paths]
        self._check(
            "parameters and buffers", [repr(p) for p in paths], state, self._spx_state_avals
        )
        outs = self._spx_run(*state, *inputs)
        if plan.is_last:
            return to_tensors(self._spx_out_tree.unflatten(outs))
        outs = [Tensor._of(x) for x in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)


class Pipe:
    """A model split into pipeline stages (mirrors ``torch.distributed.pipelining.Pipe``).

    Made by :func:`pipeline`. Calling it runs every stage in order on one device, which is
    the unsplit model's forward (handy to check a split).

    Attributes:
        num_stages: how many stages the split produced (markers + 1).

    Example:
        >>> import spx
        >>> from spx import nn
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        >>> pipe = pipeline(model, (spx.ones(3, 4),), split_spec={"1": SplitPoint.END})
        >>> h = pipe.get_stage_module(0)(spx.ones(3, 4))  # what stage 1 receives
        >>> tuple(pipe.get_stage_module(1)(h).shape), tuple(pipe(spx.ones(3, 4)).shape)
        ((3, 2), (3, 2))
    """

    def __init__(self, stages: list[_StageModule]) -> None:
        self._stages = stages
        self.num_stages = len(stages)

    def get_stage_module(self, stage_idx: int) -> Module:
        """The module of stage ``stage_idx`` (its parameters keep their original names).

        Args:
            stage_idx: ``0 <= stage_idx < num_stages``.
        """
        stage_idx = as_int(stage_idx, "stage_idx", "Pipe")
        if not 0 <= stage_idx < self.num_stages:
            raise ValueError(
                f"Invalid stage index {stage_idx}: this Pipe has {self.num_stages} stages "
                f"(0..{self.num_stages - 1})"
            )
        return self._stages[stage_idx]

    def build_stage(self, stage_index: int, device: Any, group: Any = None) -> PipelineStage:
        """A :class:`PipelineStage` running stage ``stage_index`` on ``device``.

        Args:
            stage_index: which stage.
            device: ``"cpu"``, ``"cuda:N"`` or a ``jax.Device``; the stage's parameters move
                there (in the original model too: they are the same objects).
            group: the pipeline's process group (default: the default group).
        """
        module = self.get_stage_module(stage_index)
        return PipelineStage(module, stage_index, self.num_stages, device, group=group)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self._stages[0](*args, **kwargs)
        for stage in self._stages[1:]:
            out = stage(*(out if isinstance(out, tuple) else (out,)))
        return out

    forward = __call__

    def __repr__(self) -> str:
        lines = [f"Pipe(num_stages={self.num_stages}"]
        for stage in self._stages:
            keys = list(stage.state_dict())
            lines.append(f"  ({stage._spx_plan.index}): {stage.extra_repr()}, {len(keys)} tensors")
        return "\n".join(lines) + "\n)"


def pipeline(
    module: Module,
    mb_args: tuple[Any, ...],
    mb_kwargs: dict[str, Any] | None = None,
    split_spec: Mapping[str, SplitPoint] | None = None,
    split_policy: Any = None,
) -> Pipe:
    """Split ``module`` into pipeline stages (mirrors ``torch.distributed.pipelining.pipeline``).

    The forward is traced once on the example microbatch and cut at every stage boundary —
    ``pipe_split()`` calls in ``forward`` and the ``split_spec`` entries. The stage programs
    are specialized to that microbatch's shapes and dtypes; the model is left unchanged.

    Args:
        module: the model; call ``model.eval()`` first if it has Dropout or BatchNorm (the
            split forward must be deterministic and must not update buffers).
        mb_args: example positional inputs of **one microbatch**, a tuple such as ``(x,)``.
            Array leaves become inputs; other values (ints, flags) are fixed in the program.
        mb_kwargs: example keyword inputs of one microbatch.
        split_spec: ``{"dotted.submodule": SplitPoint.BEGINNING | SplitPoint.END}``: split
            before or after each call of that submodule.
        split_policy: torch's fx graph policy; not supported (use ``split_spec``).

    Returns:
        A :class:`Pipe` with ``num_stages``, ``get_stage_module(i)`` and ``build_stage(...)``.

    Raises:
        ValueError: an unknown ``split_spec`` name, an empty stage, a marker inside control
            flow.
        RuntimeError: the forward draws random numbers or assigns buffers/parameters.
        NotImplementedError: a parameter used by two stages (tied weights).

    Example:
        >>> import spx
        >>> from spx import nn
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> pipe = pipeline(model, (spx.ones(2, 4),), split_spec={"2": SplitPoint.BEGINNING})
        >>> pipe.num_stages, list(pipe.get_stage_module(1).state_dict())
        (2, ['2.weight', '2.bias'])
    """
    if not isinstance(module, Module):
        raise TypeError(f"pipeline() splits an spx.nn.Module, got {type(module).__name__}")
    if split_policy is not None:
        raise NotImplementedError(
            "pipeline(split_policy=...) rewrites a torch.fx graph, which spx does not have; "
            "mark the boundaries with split_spec={'name': SplitPoint.BEGINNING} or pipe_split()"
        )
    if not isinstance(mb_args, tuple | list):
        raise TypeError(
            f"mb_args must be a tuple of example inputs for one microbatch, got "
            f"{type(mb_args).__name__}; wrap a single input: pipeline(model, (x,), ...)"
        )
    if mb_kwargs is not None and not isinstance(mb_kwargs, Mapping):
        raise TypeError(f"mb_kwargs must be a dict or None, got {type(mb_kwargs).__name__}")
    traced = trace(module, tuple(mb_args), dict(mb_kwargs or {}), split_spec)
    return Pipe([_StageModule(plan, traced) for plan in plan_stages(traced)])
