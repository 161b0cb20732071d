"""spx.optim.LBFGS against torch.optim.LBFGS: 5 closure steps on a least-squares model with and
without the strong-Wolfe line search (parameters and every history entry), state_dict round
trip, argument validation, and the error inside spx.compile.

A convex, well-conditioned problem with a few iterations per step: on a non-convex model, 100
float32 iterations amplify rounding differences (the algorithm agrees to 1e-14 in float64).
"""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn

torch = pytest.importorskip("torch")

# float32 dot products and means sum in another order than torch's; L-BFGS divides by such
# sums (ro = 1 / y.s, H_diag) and feeds them back, so after 5 steps the arrays agree to ~5e-5
# of their scale (in float64 the port agrees with torch to ~1e-13 over the same steps).
RTOL, ATOL = 1e-4, 1e-6
SHAPES = [(16, 4), (4,)]


def _problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    # Features of different scales: the problem is not solved within the 5 steps compared.
    x = (rng.standard_normal((64, 16)) * np.linspace(0.2, 2.0, 16)).astype(np.float32)
    y = rng.standard_normal((64, 4)).astype(np.float32)
    return init, x, y


def _twins(kwargs, seed: int = 0):
    init, x, y = _problem(seed)
    torch_params = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    spx_params = [nn.Parameter(jnp.asarray(a)) for a in init]
    torch_opt = torch.optim.LBFGS(torch_params, **kwargs)
    spx_opt = spx.optim.LBFGS(spx_params, **kwargs)
    return (torch_params, torch_opt, torch.tensor(x), torch.tensor(y)), (
        spx_params,
        spx_opt,
        spx.tensor(x),
        spx.tensor(y),
    )


def _closure(params, opt, x, y):
    def closure():
        opt.zero_grad()
        loss = ((x @ params[0] + params[1] - y) ** 2).mean()
        loss.backward()
        return loss

    return closure


def _value(v):
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    if isinstance(v, spx.Tensor):
        return np.asarray(v.data)
    return np.asarray(v)


def _close(actual, desired, where, scale=None):
    # History vectors are compared against their own scale: entries near zero are rounding.
    desired = np.asarray(desired)
    if scale is None:
        scale = float(np.max(np.abs(desired), initial=0.0))
    atol = ATOL + RTOL * scale
    np.testing.assert_allclose(np.asarray(actual), desired, rtol=RTOL, atol=atol, err_msg=where)


def _assert_state_match(t_state, s_state, where):
    assert list(s_state) == list(t_state), where
    for key, t_val in t_state.items():
        s_val = s_state[key]
        if isinstance(t_val, list):
            assert len(s_val) == len(t_val), f"{key} length {where}"
            # A list (al, ro, old_dirs) is compared against the scale of all its entries.
            scales = [float(np.max(np.abs(_value(b)))) for b in t_val if b is not None]
            scale = max(scales, default=0.0)
            for i, (a, b) in enumerate(zip(s_val, t_val, strict=True)):
                assert (a is None) == (b is None), f"{key}[{i}] {where}"
                if b is not None:
                    _close(_value(a), _value(b), f"{key}[{i}] {where}", scale)
        elif key in ("func_evals", "n_iter"):
            assert s_val == t_val, f"{key} {where}"
        else:
            _close(_value(s_val), _value(t_val), f"{key} {where}")


def _assert_match(torch_side, spx_side, where):
    (torch_params, torch_opt, _, _), (spx_params, spx_opt, _, _) = torch_side, spx_side
    for i, (tp, sp) in enumerate(zip(torch_params, spx_params, strict=True)):
        _close(np.asarray(sp.data), tp.detach().numpy(), f"param {i} {where}")
    _assert_state_match(torch_opt.state[torch_params[0]], spx_opt.state[spx_params[0]], where)


def _run(torch_side, spx_side, steps, where=""):
    t_closure, s_closure = _closure(*torch_side), _closure(*spx_side)
    for step in range(steps):
        t_loss = torch_side[1].step(t_closure)
        s_loss = spx_side[1].step(s_closure)
        np.testing.assert_allclose(float(s_loss), t_loss.item(), rtol=RTOL, atol=ATOL)
        _assert_match(torch_side, spx_side, f"{where}after step {step + 1}")


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(lr=0.2, max_iter=3),
        dict(lr=1, max_iter=3, line_search_fn="strong_wolfe"),
        dict(lr=1, max_iter=3, history_size=3, line_search_fn="strong_wolfe"),
        dict(lr=0.2, max_iter=3, max_eval=2, history_size=2),
    ],
    ids=["fixed-step", "strong-wolfe", "short-history-wolfe", "max-eval-history"],
)
def test_matches_torch(kwargs):
    torch_side, spx_side = _twins(kwargs)
    _run(torch_side, spx_side, steps=5)
    t_sd, s_sd = torch_side[1].state_dict(), spx_side[1].state_dict()
    assert list(s_sd["state"]) == list(t_sd["state"]) == [0]
    _assert_state_match(t_sd["state"][0], s_sd["state"][0], "state_dict")
    assert s_sd["param_groups"] == t_sd["param_groups"]


def test_converged_step_stops_like_torch():
    # A loose tolerance_grad ends the step right after the first evaluation.
    torch_side, spx_side = _twins(dict(tolerance_grad=1e3))
    _run(torch_side, spx_side, steps=2)


def _numpy_state_dict(torch_sd):
    def convert(v):
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v.numpy() if isinstance(v, torch.Tensor) else v

    return {
        "state": {k: {n: convert(v) for n, v in s.items()} for k, s in torch_sd["state"].items()},
        "param_groups": [dict(g) for g in torch_sd["param_groups"]],
    }


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_state_dict_round_trip(line_search_fn):
    kwargs = dict(lr=0.5 if line_search_fn is None else 1, max_iter=3)
    kwargs["line_search_fn"] = line_search_fn
    torch_side, spx_side = _twins(kwargs)
    _run(torch_side, spx_side, steps=2)
    torch_params, torch_opt = torch_side[0], torch_side[1]
    resumed_side, reloaded_side = _twins(kwargs)[1], _twins(kwargs)[1]
    for side, sd in (
        (resumed_side, _numpy_state_dict(torch_opt.state_dict())),
        (reloaded_side, spx_side[1].state_dict()),
    ):
        for sp, tp in zip(side[0], torch_params, strict=True):
            sp.data = jnp.asarray(tp.detach().numpy())
        side[1].load_state_dict(sd)
    _run(torch_side, spx_side, steps=1, where="continued ")
    for side in (resumed_side, reloaded_side):
        _run(_twins(kwargs)[0], side, steps=0)  # shapes only; values are compared below
        _closure(*side)  # the same data
        side[1].step(_closure(*side))
        _assert_match(torch_side, side, "resumed ")


def test_defaults_match_torch():
    torch_group = torch.optim.LBFGS([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    spx_group = spx.optim.LBFGS([spx.nn.Parameter(jnp.zeros(2))]).param_groups[0]
    assert {k: v for k, v in spx_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"
    }
    assert spx_group["max_eval"] == 25


def test_invalid_arguments_raise_like_torch():
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        torch.optim.LBFGS([torch.nn.Parameter(torch.zeros(2))], lr=-1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        spx.optim.LBFGS([spx.nn.Parameter(jnp.zeros(2))], lr=-1)
    groups = [{"params": [spx.nn.Parameter(jnp.zeros(2))]}] * 1
    groups.append({"params": [spx.nn.Parameter(jnp.zeros(2))], "lr": 0.1})
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        spx.optim.LBFGS(groups)
    with pytest.raises(ValueError, match="only 'strong_wolfe' is supported"):
        spx.optim.LBFGS([spx.nn.Parameter(jnp.zeros(2))], line_search_fn="armijo")


def test_inside_spx_compile_raises_a_clear_error():
    w = nn.Parameter(jnp.ones(3))
    opt = spx.optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w**2).sum()
        loss.backward()
        return loss

    @spx.compile
    def step(opt):
        opt.step(closure)

    with pytest.raises(RuntimeError, match=r"cannot run inside spx\.compile"):
        step(opt)
