"""Zero-bubble schedules only pay off if splitting B into I and W costs no extra work.

For a stage of a few Linear + tanh layers, XLA's flop estimates of the compiled programs
satisfy I + W ≈ B, with each half cheaper than B; and the two halves produce exactly what B
produces (the input gradient from I, the weight gradients from W).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import spx
from spx import nn
from spx.distributed.pipelining._programs import StagePrograms

WIDTH, ROWS, LAYERS = 64, 16, 3


def _stage() -> StagePrograms:
    spx.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    # A middle stage: its input needs a gradient (I) and its weights do too (W).
    return StagePrograms(nn.Sequential(*layers), is_first=False, is_last=False, loss_fn=None)


def test_backward_input_plus_weight_costs_one_backward():
    programs = _stage()
    train, frozen = programs.read_params()
    x = jax.random.normal(jax.random.key(1), (ROWS, WIDTH))
    out, _, vjp, _, _ = programs.forward(train, frozen, [], jax.random.key(2), (x,), {}, None)
    grads_out = [jax.random.normal(jax.random.key(3), out.shape)]
    zeros = [jnp.zeros_like(p) for p in train]

    g_in_b, acc_b = programs.backward(vjp, grads_out, [jnp.zeros_like(p) for p in train])
    g_in_i, (w_inputs, bridge, key) = programs.backward_input(vjp, grads_out)
    acc_w = programs.backward_weight((w_inputs, bridge, key), [jnp.zeros_like(p) for p in train])

    # Same numbers: I gives B's input gradient, W gives B's weight gradients.
    np.testing.assert_allclose(g_in_i[0], g_in_b[0], rtol=1e-6, atol=1e-7)
    for w, b in zip(acc_w, acc_b, strict=True):
        np.testing.assert_allclose(w, b, rtol=1e-6, atol=1e-7)

    res_leaves = jax.tree_util.tree_leaves(vjp)
    flops_b = programs.cost("B", vjp, grads_out, zeros)
    flops_i = programs.cost("I", res_leaves, grads_out, key)
    flops_w = programs.cost("W", w_inputs, bridge, zeros, key)
    # Each layer's backward is two matmuls (input and weight gradient) of 2·ROWS·WIDTH² flops.
    assert flops_b >= LAYERS * 2 * 2 * ROWS * WIDTH**2
    assert flops_i < flops_b and flops_w < flops_b
    assert abs(flops_i + flops_w - flops_b) <= 0.03 * flops_b, (flops_i, flops_w, flops_b)
