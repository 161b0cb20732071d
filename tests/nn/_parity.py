"""Module parity against torch.nn: outputs, input gradients and every parameter's ``.grad``.

Each layer is checked two ways against torch's autograd:

* **torch flow** — inputs are ``spx.Tensor`` objects that require grad, the layer's Parameters
  require grad, and ``loss.backward()`` fills ``x.grad`` and ``p.grad``. A layer whose forward
  called ``jnp`` on a tensor that requires grad would raise here, so this also checks that
  every forward stays on recorded ops.
* **under JAX transforms** — ``jax.vjp`` of the module inside ``jax.jit`` (as ``spx.compile``
  and ``spx.value_and_grad`` trace it), the gradient coming back shaped like the module.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

import spx

RTOL, ATOL = 1e-5, 1e-6


def host(t):
    """A Tensor's value as numpy (``numpy(force=True)``, torch's detach + numpy).

    Not ``t.detach().numpy()``: detach() of a non-leaf still requires grad today
    (tests/nn/test_tensor_gaps.py).
    """
    if isinstance(t, spx.Tensor):
        return t.numpy(force=True)
    if hasattr(t, "detach"):  # a torch tensor (spx grads are always dense)
        return (t.to_dense() if t.is_sparse else t).detach().numpy()
    return np.asarray(t)


def assert_close(actual, expected, rtol=RTOL, atol=ATOL, what=""):
    np.testing.assert_allclose(host(actual), host(expected), rtol=rtol, atol=atol, err_msg=what)


def copy_weights(t_layer, s_layer) -> None:
    """torch's state_dict into the spx layer (strict: same names and shapes)."""
    missing, unexpected = s_layer.load_state_dict(
        {k: v.detach().numpy() for k, v in t_layer.state_dict().items()}
    )
    assert not missing and not unexpected, (missing, unexpected)


@jax.jit
def _jax_out_and_grads(m, xs, cot):
    # One compiled program per case: far cheaper than op-by-op eager autodiff.
    def f(m, xs):
        return jnp.asarray(m(*xs))

    y, vjp = jax.vjp(f, m, xs)
    return y, vjp(cot)


def check_module(
    t_layer,
    s_layer,
    inputs: Sequence[np.ndarray],
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    param_atol: float | None = None,
    diff: Sequence[int] | None = None,
    clone_input: bool = False,
    jax_form: bool = True,
    cot_seed: int = 1,
):
    """Compare ``s_layer(*inputs)`` with ``t_layer(*inputs)``: values and gradients.

    Weights must already agree (see :func:`copy_weights`). The loss is ``sum(out * cot)`` with
    a fixed random ``cot``. ``diff`` lists the inputs to differentiate (default: the float
    ones); ``clone_input`` feeds both a non-leaf copy (their ``inplace=True`` layers need one).

    Returns the spx output Tensor.
    """
    param_atol = 5 * atol if param_atol is None else param_atol
    if diff is None:
        diff = [i for i, x in enumerate(inputs) if np.asarray(x).dtype.kind == "f"]
    float_in = [i in diff for i in range(len(inputs))]
    t_layer.zero_grad()
    xts = [torch_tensor(x, rg) for x, rg in zip(inputs, float_in, strict=True)]
    yt = t_layer(*[x.clone() if clone_input else x for x in xts])
    cot = np.random.default_rng(cot_seed).standard_normal(tuple(yt.shape)).astype(np.float32)
    (yt * _torch().tensor(cot)).sum().backward()

    # torch flow.
    s_layer.zero_grad()
    xs = [spx.tensor(x, requires_grad=rg) for x, rg in zip(inputs, float_in, strict=True)]
    y = s_layer(*[x.clone() if clone_input else x for x in xs])
    assert isinstance(y, spx.Tensor), f"{type(s_layer).__name__} returned {type(y).__name__}"
    assert tuple(y.shape) == tuple(yt.shape), (y.shape, yt.shape)
    (y * spx.tensor(cot, dtype=y.dtype)).sum().backward()
    assert_close(y, yt, rtol, atol, "output")
    for i, (x, xt) in enumerate(zip(xs, xts, strict=True)):
        if float_in[i]:
            assert x.grad is not None, f"no gradient for input {i}"
            assert_close(x.grad, xt.grad, rtol, atol, f"gradient of input {i}")
    s_params = dict(s_layer.named_parameters())
    for name, p in t_layer.named_parameters():
        assert s_params[name].grad is not None, f"no .grad for {name}"
        assert_close(s_params[name].grad, p.grad, rtol, param_atol, f".grad of {name}")

    if jax_form:
        y_j, (g_layer, g_xs) = _jax_out_and_grads(
            s_layer, [jnp.asarray(x) for x in inputs], jnp.asarray(cot, y.dtype)
        )
        assert_close(y_j, yt, rtol, atol, "output under jax.jit")
        for i, (g, xt) in enumerate(zip(g_xs, xts, strict=True)):
            if float_in[i]:
                assert_close(g, xt.grad, rtol, atol, f"jax.vjp gradient of input {i}")
        grads = dict(g_layer.named_parameters())
        for name, p in t_layer.named_parameters():
            assert_close(grads[name], p.grad, rtol, param_atol, f"jax.vjp gradient of {name}")
    return y


def _torch():
    import torch

    return torch


def torch_tensor(x, requires_grad: bool):
    return _torch().tensor(np.asarray(x), requires_grad=requires_grad)
